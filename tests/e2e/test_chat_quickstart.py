"""The quick start for text models through the real binary: `reelgate serve` with
REELGATE_UPSTREAM_BASE_URL offers every model that upstream lists, and the official SDK talks
to them (tests/python/fake_upstream.py plays the upstream, as a fake)."""

import openai
import pytest

from harness import FakeUpstream, serving


@pytest.fixture(scope="module")
def quickstart():
    fake = FakeUpstream(gap_ms=50)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision"}
        with serving(env=env) as server:
            yield server
    finally:
        fake.stop()


def test_upstream_models_are_offered_and_answer(quickstart):
    client = openai.OpenAI(base_url=f"{quickstart.base_url}/v1", api_key=quickstart.api_key, max_retries=0)
    ids = [m.id for m in client.models.list()]
    assert "fake-model-v1" in ids
    assert "reel-1" not in ids, "video models are listed only by /v1/videos/models"
    reply = client.chat.completions.create(model="fake-model-v1", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Hello from the fake upstream."
    assert reply.usage.prompt_tokens == 10
    chunks = list(
        client.chat.completions.create(
            model="fake-model-v1",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from the fake upstream."
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="reel-1", messages=[{"role": "user", "content": "hi"}])
    org = quickstart.admin("org", "show", "--org", quickstart.org)
    assert org["balance"] == "25.00", "the quick-start models are free unless the catalog prices them"
