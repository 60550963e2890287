"""The official `anthropic` Python SDK (and the TypeScript SDK's suite, node/anthropic.test.cjs)
against the real binary's Messages API with Bedrock Converse behind it (tests/python/fake_converse.py, which refuses what Bedrock refuses): a plain
message, a stream, tool round trips streamed and not, an image, count_tokens through Bedrock's
own counter, thinking with its exact budget and signed blocks that go back with the tool
results, and Anthropic's error types for what Bedrock refuses."""

import base64
import os
import shutil
import subprocess
import sys
import time

import anthropic
import httpx
import pytest

from test_python_sdk import png_bytes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import FakeConverse, serving  # noqa: E402

MODEL = FakeConverse.MODEL_ID
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
RESULTS = {"Paris": "sunny in Paris", "Tokyo": "rainy in Tokyo"}
QUESTION = "Weather in Paris and Tokyo?"


class Bedrock:
    def __init__(self, server, key, fake):
        self.server, self.key, self.fake = server, key, fake

    def sent(self, operation="converse"):
        """The bodies the fake received for `operation` (converse, converse-stream,
        count-tokens), in order."""
        return [r for r in self.fake.requests() if r["operation"] == operation]


@pytest.fixture(scope="module")
def bedrock(tmp_path_factory):
    fake = FakeConverse(gap_ms=0)
    try:
        env = {**FakeConverse.ENV, "REELGATE_CATALOG": fake.catalog(str(tmp_path_factory.mktemp("cat") / "c.toml"))}
        with serving(env=env) as server:
            org = server.admin("org", "create", "--name", "Bedrock", "--plan", "enterprise", "--credits", "50.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "bedrock@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            yield Bedrock(server, key, fake)
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def client(bedrock):
    return anthropic.Anthropic(base_url=bedrock.server.base_url, api_key=bedrock.key, max_retries=0)


def ask(client, **kw):
    return client.messages.create(model=MODEL, **{"max_tokens": 100, **kw})


def test_a_plain_message_reaches_converse_with_its_system_prompt(client, bedrock):
    m = ask(client, system="Be brief.", messages=[{"role": "user", "content": "hi"}])
    assert m.model == MODEL and [b.type for b in m.content] == ["text"]
    assert m.content[0].text == "Hello from the fake upstream." and m.stop_reason == "end_turn"
    assert (m.usage.input_tokens, m.usage.output_tokens) == (10, 5)
    sent = bedrock.sent()[-1]
    assert sent["model"] == FakeConverse.UPSTREAM_MODEL
    assert sent["body"]["system"] == [{"text": "Be brief."}]
    assert sent["body"]["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]
    assert sent["body"]["inferenceConfig"]["maxTokens"] == 100
    short = ask(client, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert short.content[0].text == "Hello from" and short.stop_reason == "max_tokens"
    cut = ask(client, stop_sequences=["upstream"], messages=[{"role": "user", "content": "hi"}])
    assert cut.content[0].text == "Hello from the fake "
    assert bedrock.sent()[-1]["body"]["inferenceConfig"]["stopSequences"] == ["upstream"]


def test_a_stream_sends_text_deltas_and_the_usage(client):
    with client.messages.stream(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == "Hello from the fake upstream." and len(texts) == 5
    assert final.stop_reason == "end_turn" and (final.usage.input_tokens, final.usage.output_tokens) == (10, 5)


def round_trip(client, stream, **kw):
    """A tool round trip; returns the first answer, the second's text and what the user sent."""
    history = [{"role": "user", "content": QUESTION}]

    def call(messages):
        if stream:
            with client.messages.stream(model=MODEL, max_tokens=kw.pop("max_tokens", 4000), tools=[WEATHER],
                                        messages=messages, **kw) as s:
                return s.get_final_message()
        return ask(client, max_tokens=4000, tools=[WEATHER], messages=messages, **kw)

    first = call(history)
    calls = [b for b in first.content if b.type == "tool_use"]
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": RESULTS[c.input["city"]]} for c in calls]},
    ]
    second = call(history)
    return first, second


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_tool_round_trip(client, bedrock, stream):
    first, second = round_trip(client, stream)
    assert first.stop_reason == "tool_use"
    calls = [b for b in first.content if b.type == "tool_use"]
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("tooluse_paris", "get_weather", {"city": "Paris"}), ("tooluse_tokyo", "get_weather", {"city": "Tokyo"})]
    assert second.stop_reason == "end_turn"
    assert second.content[-1].text == "Weather: sunny in Paris; rainy in Tokyo"
    body = bedrock.sent("converse-stream" if stream else "converse")[-1]["body"]
    spec = body["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["name"] == "get_weather" and spec["inputSchema"]["json"] == WEATHER["input_schema"]
    assert body["messages"][1]["role"] == "assistant"
    assert [b["toolUse"]["toolUseId"] for b in body["messages"][1]["content"]] == ["tooluse_paris", "tooluse_tokyo"]
    assert [b["toolResult"]["toolUseId"] for b in body["messages"][2]["content"]] == ["tooluse_paris", "tooluse_tokyo"]


def test_an_image_goes_as_bytes(client, bedrock):
    data = base64.b64encode(png_bytes()).decode()
    m = ask(client, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}])
    assert m.content[0].text == f"image {len(png_bytes())} bytes png=true"
    image = bedrock.sent()[-1]["body"]["messages"][0]["content"][0]["image"]
    assert image["format"] == "png" and base64.b64decode(image["source"]["bytes"]) == png_bytes()


def test_count_tokens_uses_bedrocks_counter(client, bedrock):
    # The fake counts 3 + words + 100 an image; the documented estimate would say 7 here.
    counted = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hello world!"}])
    assert counted.input_tokens == 5
    sent = bedrock.sent("count-tokens")[-1]
    assert sent["model"] == FakeConverse.UPSTREAM_MODEL
    assert sent["body"]["input"]["converse"]["messages"] == [{"role": "user", "content": [{"text": "hello world!"}]}]
    with_tools = client.messages.count_tokens(
        model=MODEL, system="Be brief.", tools=[WEATHER], messages=[{"role": "user", "content": "hello world!"}])
    assert with_tools.input_tokens == 3 + 2 + 2 + 5  # the system's words and the tool's description


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_thinking_keeps_its_exact_budget_and_its_signed_block_goes_back(client, bedrock, stream):
    thinking = {"type": "enabled", "budget_tokens": 2000}
    first, second = round_trip(client, stream, thinking=thinking)
    assert [b.type for b in first.content] == ["thinking", "tool_use", "tool_use"]
    assert first.content[0].thinking == "Thinking about it." and first.content[0].signature == "fake-signature"
    assert second.content[-1].text == "Weather: sunny in Paris; rainy in Tokyo"
    sent = bedrock.sent("converse-stream" if stream else "converse")[-2:]
    for r in sent:
        assert r["body"]["additionalModelRequestFields"]["thinking"] == thinking
    # Claude wants its signed reasoning first in the assistant turn the tool results answer.
    assistant = sent[1]["body"]["messages"][1]["content"]
    assert assistant[0] == {"reasoningContent": {"reasoningText": {"text": "Thinking about it.",
                                                                   "signature": "fake-signature"}}}


def test_what_bedrock_refuses_comes_back_as_an_anthropic_error(client, bedrock):
    before = len(bedrock.sent())
    # Claude refuses a temperature other than 1 with thinking on (this SDK takes it in the body);
    # reelgate does not know that rule.
    with pytest.raises(anthropic.BadRequestError) as e:
        ask(client, max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 1024}, extra_body={"temperature": 0.5},
            messages=[{"role": "user", "content": "hi"}])
    body = e.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    assert "temperature" in body["error"]["message"] and body["request_id"]
    assert len(bedrock.sent()) == before + 1
    # What reelgate refuses itself never reaches Bedrock.
    with pytest.raises(anthropic.BadRequestError) as e:
        ask(client, max_tokens=1500, thinking={"type": "enabled", "budget_tokens": 2000},
            messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["error"]["message"].startswith("thinking.budget_tokens")
    assert len(bedrock.sent()) == before + 1


def test_usage_is_billed_from_what_bedrock_reported(client, bedrock):
    since = int(time.time()) - 60
    ask(client, messages=[{"role": "user", "content": "hi"}])
    r = httpx.get(f"{bedrock.server.base_url}/v1/usage", params={"start_time": since, "group_by": "model"},
                  headers={"Authorization": f"Bearer {bedrock.key}"}, timeout=30)
    assert r.status_code == 200, r.text
    rows = [x for b in r.json()["data"] for x in b["results"] if x.get("model") == MODEL]
    assert rows and sum(x["input_tokens"] for x in rows) >= 10 and sum(x["output_tokens"] for x in rows) >= 5


@pytest.mark.skipif(shutil.which("node") is None, reason="node is installed by scripts/test-tools.sh")
def test_the_official_anthropic_node_sdk_over_converse(bedrock):
    from test_node_sdk import ANTHROPIC_SUITE, NODE_MODULES

    env = {
        **os.environ,
        "NODE_PATH": NODE_MODULES,
        "SDK_SERVER_URL": bedrock.server.base_url,
        "SDK_API_KEY": bedrock.key,
        "SDK_PNG_B64": base64.b64encode(png_bytes()).decode(),
        "SDK_MODEL": MODEL,
        "SDK_EXPECTED_COUNT": "5",  # Bedrock's counter (the fake's 3 + words), not the estimate
    }
    run = subprocess.run(["node", "--test", "--test-reporter=spec", ANTHROPIC_SUITE], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout or "ℹ fail 0" in run.stdout, run.stdout[-3000:]
