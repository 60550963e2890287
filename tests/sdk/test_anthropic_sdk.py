"""The official `anthropic` Python SDK against the real binary's Messages API (/v1/messages),
with the FakeUpstream (OpenAI-compatible) behind it: a plain message, both ways of sending the
key, a stream whose text deltas arrive as the upstream sends them, tool round trips streamed and
not, images, count_tokens, Anthropic's error types, an agent loop billed once per turn, and a
key at its rate limit."""

import base64
import os
import sys
import time

import anthropic
import httpx
import pytest

from conftest import MODEL
from test_python_sdk import png_bytes

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import FakeUpstream, serving  # noqa: E402

WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
RESULTS = {"Paris": "sunny in Paris", "Tokyo": "rainy in Tokyo"}


@pytest.fixture(scope="module")
def client(tenant):
    # The SDK appends /v1/messages to the base URL itself.
    return anthropic.Anthropic(base_url=tenant.server.base_url, api_key=tenant.key, max_retries=0)


def ask(client, **kw):
    return client.messages.create(model=MODEL, max_tokens=100, **kw)


def test_a_plain_message_with_a_system_prompt(client, tenant):
    m = ask(client, system="Be brief.", metadata={"user_id": "u-42"}, messages=[{"role": "user", "content": "hi"}])
    assert m.id.startswith("msg_") and m.type == "message" and m.role == "assistant" and m.model == MODEL
    assert [b.type for b in m.content] == ["text"]
    assert m.content[0].text == "Hello from the fake upstream."
    assert m.stop_reason == "end_turn" and m.stop_sequence is None
    assert (m.usage.input_tokens, m.usage.output_tokens) == (10, 5)
    assert m.usage.cache_read_input_tokens == 0 and m.usage.cache_creation_input_tokens == 0
    sent = tenant_requests(tenant)[-1]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["user"] == "u-42" and sent["max_completion_tokens"] == 100


def tenant_requests(tenant):
    return httpx.get(f"{tenant.fake_url}/_fake/requests", timeout=10).json()


def test_the_key_goes_as_x_api_key_or_as_a_bearer_token(tenant):
    by_header = anthropic.Anthropic(base_url=tenant.server.base_url, api_key=tenant.key, max_retries=0)
    by_bearer = anthropic.Anthropic(base_url=tenant.server.base_url, auth_token=tenant.key, max_retries=0)
    for c in (by_header, by_bearer):
        assert ask(c, messages=[{"role": "user", "content": "hi"}]).content[0].text.startswith("Hello")
    wrong = anthropic.Anthropic(base_url=tenant.server.base_url, api_key="rgk_not_a_key", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        ask(wrong, messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "authentication_error"


def test_stop_sequences_and_max_tokens_end_the_text(client):
    cut = ask(client, stop_sequences=["upstream"], messages=[{"role": "user", "content": "hi"}])
    # OpenAI does not say which stop sequence matched: the text ends there, as end_turn.
    assert cut.content[0].text == "Hello from the fake " and cut.stop_reason == "end_turn"
    short = client.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert short.content[0].text == "Hello from" and short.stop_reason == "max_tokens"


def test_a_tool_round_trip(client):
    first = ask(client, tools=[WEATHER], messages=[{"role": "user", "content": "Weather in Paris and Tokyo?"}])
    assert first.stop_reason == "tool_use"
    calls = [b for b in first.content if b.type == "tool_use"]
    assert [(c.name, c.input) for c in calls] == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]
    results = [{"type": "tool_result", "tool_use_id": c.id, "content": RESULTS[c.input["city"]]} for c in calls]
    second = ask(
        client,
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": results},
        ],
    )
    assert second.stop_reason == "end_turn"
    assert second.content[0].text == "Weather: sunny in Paris; rainy in Tokyo"


def test_a_streamed_tool_round_trip_accumulates_the_arguments(client):
    history = [{"role": "user", "content": "Weather in Paris and Tokyo?"}]
    with client.messages.stream(model=MODEL, max_tokens=100, tools=[WEATHER], messages=history) as stream:
        kinds = [e.type for e in stream]
        first = stream.get_final_message()
    assert kinds[:1] == ["message_start"] and kinds[-1] == "message_stop"
    # The arguments came in fragments (input_json_delta) and were put together by the SDK.
    assert kinds.count("input_json") >= 4
    calls = [b for b in first.content if b.type == "tool_use"]
    assert [c.input for c in calls] == [{"city": "Paris"}, {"city": "Tokyo"}]
    assert first.stop_reason == "tool_use" and first.usage.output_tokens == 2
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": RESULTS[c.input["city"]]} for c in calls]},
    ]
    with client.messages.stream(model=MODEL, max_tokens=100, tools=[WEATHER], messages=history) as stream:
        text = stream.get_final_text()
    assert text == "Weather: sunny in Paris; rainy in Tokyo"


def test_images_in_base64_reach_the_upstream_and_a_private_url_is_refused(client):
    data = base64.b64encode(png_bytes()).decode()
    m = ask(client, messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "text", "text": "What is this?"}]}])
    assert m.content[0].text == f"image {len(png_bytes())} bytes png=true"
    with pytest.raises(anthropic.BadRequestError) as e:
        ask(client, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "http://127.0.0.1:9/secret.png"}}]}])
    assert "refused" in e.value.body["error"]["message"]


def test_count_tokens_is_the_documented_estimate(client):
    # 4 tokens of framing per message and a quarter token a character: "hello world!" is 3.
    counted = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hello world!"}])
    assert counted.input_tokens == 7
    with_system = client.messages.count_tokens(
        model=MODEL, system="abcd", messages=[{"role": "user", "content": "hello world!"}])
    assert with_system.input_tokens == 7 + 5


def test_errors_come_in_anthropics_envelope_with_the_request_id(client, tenant):
    with pytest.raises(anthropic.NotFoundError) as e:
        client.messages.create(model="no-such-model", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    body = e.value.body
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    assert body["request_id"] and e.value.request_id == body["request_id"]
    with pytest.raises(anthropic.BadRequestError) as e:
        # This SDK's create() takes no temperature argument: it goes in the body.
        ask(client, extra_body={"temperature": 1.5}, messages=[{"role": "user", "content": "x"}])
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.body["error"]["message"].startswith("temperature:")
    # What the SDK cannot send is refused the same way over raw HTTP.
    raw = httpx.post(f"{tenant.server.base_url}/v1/messages", headers={"x-api-key": tenant.key, "anthropic-version": "2023-06-01"},
                     json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]}, timeout=30)
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in raw.json()["error"]["message"] and raw.headers["request-id"] == raw.json()["request_id"]


def test_a_stream_forwards_text_deltas_as_the_upstream_sends_them():
    fake = FakeUpstream(gap_ms=150)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision"}
        with serving(env=env) as server:
            org = server.admin("org", "create", "--name", "Stream", "--plan", "enterprise", "--credits", "5.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "stream@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            c = anthropic.Anthropic(base_url=server.base_url, api_key=key, max_retries=0)
            arrivals = []
            start = time.monotonic()
            with c.messages.stream(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as stream:
                for text in stream.text_stream:
                    arrivals.append((time.monotonic() - start, text))
                final = stream.get_final_message()
    finally:
        fake.stop()
    assert "".join(t for _, t in arrivals) == "Hello from the fake upstream."
    assert len(arrivals) == 5
    # One delta per upstream chunk, 150 ms apart: the first came long before the last.
    gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:])]
    assert min(gaps) > 0.08, gaps
    assert final.usage.input_tokens == 10 and final.usage.output_tokens == 5


def usage_by_key(server, key):
    r = httpx.get(f"{server.base_url}/v1/usage", params={"start_time": int(time.time()) - 86400, "group_by": "api_key"},
                  headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_an_agent_loop_of_ten_turns_is_billed_once_per_turn():
    fake = FakeUpstream(gap_ms=0)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,tools"}
        with serving(env=env) as server:
            org = server.admin("org", "create", "--name", "Agent", "--plan", "enterprise", "--credits", "5.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "agent@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            c = anthropic.Anthropic(base_url=server.base_url, api_key=key, max_retries=0)
            history, reported = [], []
            for turn in range(10):
                history.append({"role": "user", "content": f"Turn {turn}: weather in Paris and Tokyo?"})
                while True:
                    with c.messages.stream(model=MODEL, max_tokens=200, tools=[WEATHER], messages=history) as stream:
                        m = stream.get_final_message()
                    reported.append((m.usage.input_tokens, m.usage.output_tokens))
                    history.append({"role": "assistant", "content": m.content})
                    if m.stop_reason != "tool_use":
                        break
                    history.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": b.id, "content": RESULTS[b.input["city"]]}
                        for b in m.content if b.type == "tool_use"]})
                # The fake answers with every tool result of the conversation so far.
                assert m.content[-1].text == "Weather: " + "; ".join(["sunny in Paris; rainy in Tokyo"] * (turn + 1))
            report = usage_by_key(server, key)
            upstream_calls = len(fake.requests())
    finally:
        fake.stop()
    # Each turn is a tool call and an answer: twenty requests, each reporting the fake's usage.
    assert len(reported) == 20 == upstream_calls
    assert reported[0] == (10, 2) and reported[1] == (10, 7) and reported[3] == (10, 13)
    totals = {"requests": 0, "input": 0, "output": 0}
    for bucket in report["data"]:
        for r in bucket["results"]:
            totals["requests"] += r.get("requests", 0)
            totals["input"] += r.get("input_tokens", 0)
            totals["output"] += r.get("output_tokens", 0)
    assert totals == {"requests": 20, "input": sum(i for i, _ in reported), "output": sum(o for _, o in reported)}, report


def test_a_key_at_its_rate_limit_gets_rate_limit_error_with_retry_after():
    fake = FakeUpstream(gap_ms=0)
    try:
        with serving(env={"REELGATE_UPSTREAM_BASE_URL": fake.url}) as server:
            org = server.admin("org", "create", "--name", "Limited", "--plan", "enterprise", "--credits", "5.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "limited@example.test")
            created = server.admin("key", "create", "--user", user["id"])
            server.admin("key", "limits", "set", "--key-id", created["id"], "--requests-per-minute", "2")
            c = anthropic.Anthropic(base_url=server.base_url, api_key=created["secret"], max_retries=0)
            refused = None
            for _ in range(5):  # two fill the minute; a minute boundary can add at most two more
                try:
                    ask(c, messages=[{"role": "user", "content": "hi"}])
                except anthropic.RateLimitError as e:
                    refused = e
                    break
    finally:
        fake.stop()
    assert refused is not None
    assert refused.body["type"] == "error" and refused.body["error"]["type"] == "rate_limit_error"
    assert int(refused.response.headers["retry-after"]) >= 1
    assert refused.response.headers["x-ratelimit-limit-requests"] == "2"
