"""A catalog for the observability suites: tests/python/catalog.toml (the fake upstream, `reel-1`)
plus two priced chat models — one with a cached-input price — and one whose upstream is
unreachable (for upstream-error metrics)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def catalog(tmp_path) -> str:
    with open(os.path.join(HERE, "..", "python", "catalog.toml")) as f:
        text = f.read()
    text += """
[[chat_models]]
id = "cached-chat"
upstream = "fake"
upstream_model = "fake-model-v1"
input_per_million = "0.15"
cached_input_per_million = "0.075"
output_per_million = "0.60"

[[chat_models]]
id = "plain-chat"
upstream = "fake"
upstream_model = "fake-model-v1"
input_per_million = "1.10"
output_per_million = "4.40"

[[upstreams]]
id = "dead"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[[chat_models]]
id = "dead-chat"
upstream = "dead"
input_per_million = "1.00"
output_per_million = "1.00"
"""
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return str(path)


