"""reelgate's chat completions gateway, driven by the official `openai` Python SDK.

Environment:
  REELGATE_BASE_URL        the gateway, e.g. http://127.0.0.1:8080 (the SDK gets <it>/v1)
  REELGATE_API_KEY         a key of an organization with credits
  FAKE_UPSTREAM_URL        tests/python/fake_upstream.py's URL (the catalog's upstream)
  REELGATE_EMPTY_API_KEY   optional: a key of an organization with a zero balance (402 test)

The gateway must serve tests/python/catalog.toml (REELGATE_CATALOG) with FAKE_UPSTREAM_URL set
in its environment; the fake must run with its default 200 ms gap between chunks.
"""

import json
import os
import time
import urllib.request

import openai
import pytest

BASE_URL = os.environ.get("REELGATE_BASE_URL", "").rstrip("/")
API_KEY = os.environ.get("REELGATE_API_KEY", "")
FAKE_URL = os.environ.get("FAKE_UPSTREAM_URL", "").rstrip("/")
EMPTY_KEY = os.environ.get("REELGATE_EMPTY_API_KEY", "")

pytestmark = pytest.mark.skipif(
    not (BASE_URL and API_KEY and FAKE_URL),
    reason="set REELGATE_BASE_URL, REELGATE_API_KEY and FAKE_UPSTREAM_URL",
)

MODEL = "fake-chat"
GAP = 0.2  # the fake upstream's spacing between chunks

# A valid 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f00050001ff89993d1d"
    "0000000049454e44ae426082"
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.fixture(scope="module")
def client():
    # No retries: a test must see the gateway's first answer.
    return openai.OpenAI(base_url=f"{BASE_URL}/v1", api_key=API_KEY, max_retries=0, timeout=30)


def fake_requests():
    with urllib.request.urlopen(f"{FAKE_URL}/_fake/requests", timeout=5) as r:
        return json.load(r)


def test_models_lists_chat_models_with_reasoning_efforts(client):
    models = {m.id: m for m in client.models.list()}
    assert MODEL in models and "fake-text" in models
    assert "reel-1" not in models, "video models are not listed as chat models"
    assert models[MODEL].reasoning_efforts == ["low", "medium", "high"]
    assert client.models.retrieve(MODEL).id == MODEL


def test_plain_completion(client):
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello"}]
    )
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == MODEL
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Hello from the fake upstream."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens == 10
    assert completion.usage.completion_tokens == 5
    assert completion.usage.total_tokens == 15
    assert fake_requests()[-1]["model"] == "fake-model-v1"


def test_stream_with_include_usage_keeps_the_upstream_spacing(client):
    started = time.monotonic()
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Say hello"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    arrivals = []
    for chunk in stream:
        arrivals.append((time.monotonic(), chunk))
    total = time.monotonic() - started
    chunks = [c for _, c in arrivals]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    assert all(c.model == MODEL for c in chunks)
    content = [(t, c) for t, c in arrivals if c.choices and c.choices[0].delta.content]
    assert "".join(c.choices[0].delta.content for _, c in content) == "Hello from the fake upstream."
    assert all(c.usage is None for c in chunks[:-1]), "usage is null until the last chunk"
    last = chunks[-1]
    assert last.choices == []
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (10, 5)
    # Each word left the upstream GAP apart and arrived about GAP apart: nothing was buffered.
    gaps = [b[0] - a[0] for a, b in zip(content, content[1:])]
    assert gaps and min(gaps) >= GAP / 2, gaps
    assert content[0][0] - started < total - 2 * GAP


def test_two_step_tool_call(client):
    messages = [{"role": "user", "content": "Weather in Paris and Tokyo?"}]
    first = client.chat.completions.create(
        model=MODEL, messages=messages, tools=[WEATHER_TOOL], tool_choice="auto", parallel_tool_calls=True
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert [c.function.name for c in calls] == ["get_weather", "get_weather"]
    assert [c.id for c in calls] == ["call_paris", "call_tokyo"]
    messages.append(choice.message)
    for call, result in zip(calls, ["18C sunny", "22C rain"]):
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER_TOOL])
    assert second.choices[0].message.content == "Weather: 18C sunny; 22C rain"
    forwarded = fake_requests()[-1]["messages"]
    assert [m["role"] for m in forwarded] == ["user", "assistant", "tool", "tool"]
    assert forwarded[2]["tool_call_id"] == "call_paris"


def test_streamed_tool_calls(client):
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Weather in Paris and Tokyo?"}],
        tools=[WEATHER_TOOL],
        stream=True,
    )
    calls = {}
    finish = None
    for chunk in stream:
        if not chunk.choices:
            continue
        for call in chunk.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": None, "args": ""})
            entry["id"] = call.id or entry["id"]
            entry["args"] += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert [calls[i]["id"] for i in sorted(calls)] == ["call_paris", "call_tokyo"]
    assert calls[1]["args"] == '{"city": "Tokyo"}'


def test_image_by_file_id(client):
    uploaded = client.files.create(file=("pixel.png", PNG, "image/png"), purpose="vision")
    completion = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "file", "file": {"file_id": uploaded.id}},
        ]}],
    )
    # The fake fetched the signed URL it was given and found the PNG's bytes there.
    assert completion.choices[0].message.content == f"image {len(PNG)} bytes png=true"
    part = fake_requests()[-1]["messages"][0]["content"][1]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("http")


USER = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    "kwargs, param",
    [
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": -0.1}, "top_p"),
        ({"n": 0}, "n"),
        ({"n": 129}, "n"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_completion_tokens": 0}, "max_completion_tokens"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"frequency_penalty": 3}, "frequency_penalty"),
        ({"presence_penalty": -3}, "presence_penalty"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"logit_bias": {"42": 150}}, "logit_bias.42"),
        ({"response_format": {"type": "yaml"}}, "response_format.type"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools[0].function.name"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": [{"type": "hologram"}]}]}, "messages[0].content[0].type"),
        ({"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]}, "messages[0].tool_call_id"),
        ({"extra_body": {"min_p": 2}}, "min_p"),
        ({"extra_body": {"top_k": -5}}, "top_k"),
        ({"extra_body": {"not_a_param": 1}}, "not_a_param"),
    ],
)
def test_validation_errors_name_their_param(client, kwargs, param):
    args = {"model": MODEL, "messages": USER, **kwargs}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(**args)
    assert caught.value.status_code == 400
    assert caught.value.code == "invalid_request_error"
    assert caught.value.param == param


def test_capability_mismatch(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="fake-text",
            messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}}]}],
        )
    assert caught.value.code == "model_capability_mismatch"
    assert caught.value.param == "messages[0].content[0]"


def test_reasoning_effort(client):
    ok = client.chat.completions.create(model=MODEL, messages=USER, reasoning_effort="low")
    assert ok.choices[0].message.content
    assert fake_requests()[-1]["reasoning_effort"] == "low"
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="fake-text", messages=USER, reasoning_effort="high")
    assert caught.value.code == "unsupported_reasoning_effort"
    assert caught.value.param == "reasoning_effort"


def test_unknown_and_video_models(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="no-such-model", messages=USER)
    assert caught.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="reel-1", messages=USER)
    assert caught.value.code == "model_not_chat_capable"


@pytest.mark.skipif(not EMPTY_KEY, reason="set REELGATE_EMPTY_API_KEY for the 402 test")
def test_zero_balance_is_refused():
    empty = openai.OpenAI(base_url=f"{BASE_URL}/v1", api_key=EMPTY_KEY, max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        empty.chat.completions.create(model=MODEL, messages=USER)
    assert caught.value.status_code == 402
    assert caught.value.code == "insufficient_credits"
