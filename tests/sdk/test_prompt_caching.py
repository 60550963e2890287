"""Prompt caching through the gateway, with the official SDKs against the real binary: the
Anthropic Python SDK's `cache_control` on system, tools and the last user block reaches Bedrock
Converse as `cachePoint` blocks where the client put them (tests/python/fake_converse.py refuses
a cache point anywhere else, more than four, or unknown members, and reports cache writes, then
reads on a repeat); the OpenAI SDK to an `auto_cache` Claude model gets cache points after the
system prompt and the tools; and every answer carries its exact charge (`usage.cost`,
`x-reelgate-cost`), equal to the balance's drop."""

import os
import time
import sys
from decimal import Decimal

import anthropic
import httpx
import openai
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import FakeConverse, serving  # noqa: E402

CLAUDE = FakeConverse.MODEL_ID
AUTO = "claude-auto-cache"
EPHEMERAL = {"type": "ephemeral"}
POINT = {"cachePoint": {"type": "default"}}
# Long enough for the model's minimum (1,024 tokens) on every count: the fake's and reelgate's.
SYSTEM = " ".join(f"Rule {i}: read the code before you change it." for i in range(300))
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
QUESTION = "Weather in Paris and Tokyo?"
# Claude Sonnet's prices on Bedrock: cache reads a tenth of the input price, writes 1.25 times it.
PRICES = """
input_per_million = "3.00"
output_per_million = "15.00"
cached_input_per_million = "0.30"
cache_write_per_million = "3.75"
"""


class Bedrock:
    def __init__(self, server, key, org, fake):
        self.server, self.key, self.org, self.fake = server, key, org, fake

    def sent(self, operation="converse"):
        return [r for r in self.fake.requests() if r["operation"] == operation]

    def balance(self):
        return Decimal(self.server.admin("org", "show", "--org", self.org)["balance"])


def priced_catalog(fake, path):
    """The fake's catalog, its Claude model priced with cache prices, and an `auto_cache` one."""
    fake.catalog(path)
    with open(path) as f:
        text = f.read()
    text = text.replace('input_per_million = "3.00"\noutput_per_million = "15.00"\n', PRICES, 1)
    text += f"""
[[chat_models]]
id = "{AUTO}"
upstream = "bedrock"
upstream_model = "{FakeConverse.UPSTREAM_MODEL}"
capabilities = ["text", "tools"]
auto_cache = true
{PRICES}
"""
    with open(path, "w") as f:
        f.write(text)
    return path


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory):
    fake = FakeConverse(gap_ms=0)
    try:
        catalog = priced_catalog(fake, str(tmp_path_factory.mktemp("cat") / "c.toml"))
        with serving(env={**FakeConverse.ENV, "REELGATE_CATALOG": catalog}) as server:
            org = server.admin("org", "create", "--name", "Caching", "--plan", "enterprise", "--credits", "50.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "cache@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            yield Bedrock(server, key, org["id"], fake)
    finally:
        fake.stop()


def cached_request(question=QUESTION):
    return dict(
        model=CLAUDE,
        max_tokens=100,
        system=[{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}],
        tools=[{**WEATHER, "cache_control": EPHEMERAL}],
        messages=[{"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]}],
    )


def test_cache_control_reaches_converse_as_cache_points_and_writes_then_reads(bedrock):
    c = anthropic.Anthropic(base_url=bedrock.server.base_url, api_key=bedrock.key, max_retries=0)
    before = bedrock.balance()
    first = c.messages.create(**cached_request())
    sent = bedrock.sent()[-1]["body"]
    assert sent["system"] == [{"text": SYSTEM}, POINT]
    assert sent["toolConfig"]["tools"][-1] == POINT and "toolSpec" in sent["toolConfig"]["tools"][0]
    assert sent["messages"][-1]["content"] == [{"text": QUESTION}, POINT]
    assert first.usage.cache_creation_input_tokens > 1000 and first.usage.cache_read_input_tokens == 0
    after_first = bedrock.balance()
    assert before - after_first == Decimal(first.usage.cost)

    again = c.messages.create(**cached_request())
    assert again.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert again.usage.cache_creation_input_tokens == 0
    assert after_first - bedrock.balance() == Decimal(again.usage.cost)
    # Reads cost a tenth of the input price, writes 1.25 times it: the repeat is far cheaper.
    assert Decimal(again.usage.cost) * 5 < Decimal(first.usage.cost)


def test_a_streamed_answer_reports_its_cost_in_message_delta(bedrock):
    c = anthropic.Anthropic(base_url=bedrock.server.base_url, api_key=bedrock.key, max_retries=0)
    c.messages.create(**cached_request("Warm the cache."))
    before = bedrock.balance()
    with c.messages.stream(**cached_request("Warm the cache.")) as stream:
        # The SDK's snapshot keeps message_delta's counts, not reelgate's `cost` beside them.
        costs = [e.usage.cost for e in stream if e.type == "message_delta"]
        final = stream.get_final_message()
    assert final.usage.cache_read_input_tokens > 1000
    assert before - bedrock.balance() == Decimal(costs[-1])


def test_the_one_hour_ttl_and_the_limits_anthropic_sets(bedrock):
    c = anthropic.Anthropic(base_url=bedrock.server.base_url, api_key=bedrock.key, max_retries=0)
    hour = {"type": "ephemeral", "ttl": "1h"}
    r = cached_request()
    # One-hour entries come first (tools, then system), five-minute ones after.
    r["tools"][0]["cache_control"] = hour
    r["system"][0]["cache_control"] = hour
    c.messages.create(**r)
    assert bedrock.sent()[-1]["body"]["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    # Five breakpoints: refused before any upstream call, as Anthropic refuses them.
    calls = len(bedrock.sent())
    many = cached_request()
    many["messages"][0]["content"] = [{"type": "text", "text": f"part {i}", "cache_control": EPHEMERAL} for i in range(3)]
    with pytest.raises(anthropic.BadRequestError) as e:
        c.messages.create(**many)
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in str(e.value)
    # A one-hour entry after a five-minute one, and a TTL Anthropic does not offer.
    late = cached_request()
    late["messages"][0]["content"][0]["cache_control"] = hour
    with pytest.raises(anthropic.BadRequestError):
        c.messages.create(**late)
    odd = cached_request()
    odd["tools"][0]["cache_control"] = {"type": "ephemeral", "ttl": "10m"}
    with pytest.raises(anthropic.BadRequestError) as e:
        c.messages.create(**odd)
    assert "tools.0.cache_control.ttl" in str(e.value)
    assert len(bedrock.sent()) == calls


def test_openai_callers_to_an_auto_cache_model_get_cache_points_and_see_cached_tokens(bedrock):
    client = openai.OpenAI(base_url=f"{bedrock.server.base_url}/v1", api_key=bedrock.key, max_retries=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": WEATHER["description"],
                                               "parameters": WEATHER["input_schema"]}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hello."}]
    # The Anthropic callers above cached this system prompt already; start from a cold cache.
    bedrock.fake.reset()
    before = bedrock.balance()
    raw = client.chat.completions.with_raw_response.create(model=AUTO, messages=messages, tools=tools,
                                                         prompt_cache_key="agent-1")
    first = raw.parse()
    sent = bedrock.sent()[-1]["body"]
    assert sent["system"] == [{"text": SYSTEM}, POINT]
    # The tools alone are under the minimum: no point after them.
    assert POINT not in sent["toolConfig"]["tools"]
    assert sent["messages"][-1]["content"][-1] == POINT
    assert first.usage.prompt_tokens_details.cache_write_tokens > 1000
    assert raw.headers["x-reelgate-cost"] == first.usage.cost
    assert before - bedrock.balance() == Decimal(first.usage.cost)

    again = client.chat.completions.create(model=AUTO, messages=messages, tools=tools)
    assert again.usage.prompt_tokens_details.cached_tokens == first.usage.prompt_tokens_details.cache_write_tokens
    assert again.usage.prompt_tokens >= again.usage.prompt_tokens_details.cached_tokens

    # Responses: the same points, cached tokens in input_tokens_details, the cost in usage.
    before = bedrock.balance()
    r = client.responses.create(model=AUTO, instructions=SYSTEM, input="Say hello.")
    assert bedrock.sent()[-1]["body"]["system"] == [{"text": SYSTEM}, POINT]
    r2 = client.responses.create(model=AUTO, instructions=SYSTEM, input="Say hello.")
    assert r2.usage.input_tokens_details.cached_tokens > 1000
    assert before - bedrock.balance() == Decimal(r.usage.cost) + Decimal(r2.usage.cost)


def test_usage_and_metrics_show_cache_reads_and_writes(bedrock):
    r = httpx.get(f"{bedrock.server.base_url}/v1/usage", headers={"Authorization": f"Bearer {bedrock.key}"},
                  params={"start_time": int(time.time()) - 86400, "group_by": "kind"}, timeout=30)
    assert r.status_code == 200, r.text
    kinds = {x["kind"] for b in r.json()["data"] for x in b["results"]}
    assert {"cached_input_tokens", "cache_write_input_tokens"} <= kinds
