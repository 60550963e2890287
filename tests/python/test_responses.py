"""reelgate's Responses API (/v1/responses), driven by the official `openai` Python SDK.

Environment:
  REELGATE_BASE_URL          the gateway, e.g. http://127.0.0.1:8080 (the SDK gets <it>/v1)
  REELGATE_API_KEY           a key of a person in an organization with credits
  REELGATE_SECOND_API_KEY    a key of another person in the same organization
  FAKE_UPSTREAM_URL          tests/python/fake_upstream.py's URL (the catalog's upstream)
  REELGATE_OTHER_ORG_API_KEY optional: a key of a person in another organization

The gateway must serve tests/python/catalog.toml (REELGATE_CATALOG) with FAKE_UPSTREAM_URL set
in its environment. The fake answers "Hello from the fake upstream." to plain text, two
parallel get_weather calls when tools are given, and "Weather: ..." after tool results.
"""

import base64
import json
import os
import urllib.request

import openai
import pytest

BASE_URL = os.environ.get("REELGATE_BASE_URL", "").rstrip("/")
API_KEY = os.environ.get("REELGATE_API_KEY", "")
SECOND_KEY = os.environ.get("REELGATE_SECOND_API_KEY", "")
OTHER_ORG_KEY = os.environ.get("REELGATE_OTHER_ORG_API_KEY", "")
FAKE_URL = os.environ.get("FAKE_UPSTREAM_URL", "").rstrip("/")

pytestmark = pytest.mark.skipif(
    not (BASE_URL and API_KEY and SECOND_KEY and FAKE_URL),
    reason="set REELGATE_BASE_URL, REELGATE_API_KEY, REELGATE_SECOND_API_KEY and FAKE_UPSTREAM_URL",
)

MODEL = "fake-chat"
HELLO = "Hello from the fake upstream."
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
STREAM_ORDER_TEXT = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


def _client(key):
    # No retries: a test must see the gateway's first answer.
    return openai.OpenAI(base_url=f"{BASE_URL}/v1", api_key=key, max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def client():
    return _client(API_KEY)


@pytest.fixture(scope="module")
def teammate():
    return _client(SECOND_KEY)


def fake_requests():
    with urllib.request.urlopen(f"{FAKE_URL}/_fake/requests", timeout=5) as r:
        return json.load(r)


def last_request():
    return fake_requests()[-1]


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


def two_page_pdf():
    """A two-page PDF written by hand, its cross-reference offsets counted."""
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>",
        "<< /Length 22 >>\nstream\n1 0 0 rg 10 10 80 40 re f\nendstream",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 200] /Contents 6 0 R >>",
        "<< /Length 22 >>\nstream\n0 0 1 rg 10 10 40 80 re f\nendstream",
    ]
    pdf = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(pdf))
        pdf += f"{i + 1} 0 obj\n{body}\nendobj\n".encode()
    xref = len(pdf)
    pdf += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        pdf += f"{off:010} 00000 n \n".encode()
    pdf += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return pdf


def test_three_turns_send_the_whole_history(client):
    r1 = client.responses.create(model=MODEL, instructions="Be brief.", input="My name is Ada.")
    assert r1.object == "response"
    assert r1.status == "completed"
    assert r1.output_text == HELLO
    assert r1.usage.input_tokens == 10
    assert r1.usage.output_tokens == 5
    assert r1.usage.total_tokens == 15
    assert r1.usage.input_tokens_details.cached_tokens == 0
    assert r1.usage.output_tokens_details.reasoning_tokens == 0
    first = last_request()
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}

    r2 = client.responses.create(model=MODEL, previous_response_id=r1.id, input="What is my name?")
    r3 = client.responses.create(
        model=MODEL,
        previous_response_id=r2.id,
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Again, please."}]}],
    )
    assert r3.previous_response_id == r2.id
    messages = last_request()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [text_of(m) for m in messages] == ["My name is Ada.", HELLO, "What is my name?", HELLO, "Again, please."]

    again = client.responses.retrieve(r3.id)
    assert again.id == r3.id
    assert again.output_text == HELLO
    items = client.responses.input_items.list(r3.id)
    assert [i.type for i in items.data] == ["message"]
    assert items.data[0].content[0].text == "Again, please."


def test_stream_events_in_order_with_one_id(client):
    stream = client.responses.create(model=MODEL, input="Stream, please.", stream=True)
    events = list(stream)
    types = [e.type for e in events]
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == len(HELLO.split(" "))
    collapsed = [t for i, t in enumerate(types) if i == 0 or t != types[i - 1]]
    assert collapsed == STREAM_ORDER_TEXT
    assert [e.sequence_number for e in events] == list(range(len(events)))
    ids = {e.response.id for e in events if hasattr(e, "response")}
    assert len(ids) == 1
    assert "".join(d.delta for d in deltas) == HELLO
    done = events[-1].response
    assert done.status == "completed"
    assert done.output_text == HELLO
    assert done.usage.output_tokens == 5
    assert client.responses.retrieve(done.id).output_text == HELLO


def test_function_calls_continue_through_previous_response_id(client):
    r1 = client.responses.create(
        model=MODEL, input="Weather in Paris and Tokyo?", tools=[WEATHER_TOOL], parallel_tool_calls=True
    )
    calls = [o for o in r1.output if o.type == "function_call"]
    assert [c.call_id for c in calls] == ["call_paris", "call_tokyo"]
    assert [json.loads(c.arguments)["city"] for c in calls] == ["Paris", "Tokyo"]
    assert all(c.name == "get_weather" for c in calls)
    sent = last_request()
    assert sent["tools"][0]["function"]["name"] == "get_weather"

    r2 = client.responses.create(
        model=MODEL,
        previous_response_id=r1.id,
        tools=[WEATHER_TOOL],
        input=[
            {"type": "function_call_output", "call_id": "call_paris", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_tokyo", "output": "rainy"},
        ],
    )
    assert r2.output_text == "Weather: sunny; rainy"
    messages = last_request()["messages"]
    assistant = messages[1]
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_paris", "call_tokyo"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_paris", "content": "sunny"}


def test_streamed_function_call_has_argument_events(client):
    events = list(client.responses.create(model=MODEL, input="Weather?", tools=[WEATHER_TOOL], stream=True))
    types = [e.type for e in events]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types.count("response.function_call_arguments.done") == 2
    assert "response.function_call_arguments.delta" in types
    assert types[-1] == "response.completed"
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert json.loads(done[0].arguments) == {"city": "Paris"}


def test_a_two_page_pdf_is_forwarded_as_two_images(client):
    uploaded = client.files.create(file=("doc.pdf", two_page_pdf(), "application/pdf"), purpose="user_data")
    r = client.responses.create(
        model=MODEL,
        input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Summarize this."},
            {"type": "input_file", "file_id": uploaded.id},
        ]}],
    )
    assert r.status == "completed"
    parts = last_request()["messages"][0]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 2
    for url in images:
        assert url.startswith("data:image/png;base64,")
        png = base64.b64decode(url.split(",", 1)[1])
        assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_responses_are_private_to_their_person(client, teammate):
    r1 = client.responses.create(model=MODEL, input="Only mine.")
    item_id = client.responses.input_items.list(r1.id).data[0].id
    others = [teammate] + ([_client(OTHER_ORG_KEY)] if OTHER_ORG_KEY else [])
    for other in others:
        with pytest.raises(openai.NotFoundError) as e:
            other.responses.retrieve(r1.id)
        assert e.value.body["code"] == "response_not_found"
        with pytest.raises(openai.NotFoundError) as e:
            other.responses.create(model=MODEL, previous_response_id=r1.id, input="continue")
        assert e.value.body["code"] == "response_not_found"
        assert e.value.body["param"] == "previous_response_id"
        with pytest.raises(openai.NotFoundError) as e:
            other.responses.create(model=MODEL, input=[{"type": "item_reference", "id": item_id}])
        assert e.value.body["code"] == "item_not_found"
        with pytest.raises(openai.NotFoundError):
            other.responses.delete(r1.id)
    # The owner can still use both.
    r2 = client.responses.create(
        model=MODEL, input=[{"type": "item_reference", "id": item_id}, {"role": "user", "content": "and?"}]
    )
    assert [text_of(m) for m in last_request()["messages"]] == ["Only mine.", "and?"]
    assert r2.status == "completed"


def test_delete_and_store_false(client):
    r = client.responses.create(model=MODEL, input="Forget me.")
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    unstored = client.responses.create(model=MODEL, input="Never kept.", store=False)
    assert unstored.output_text == HELLO
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)


def test_invalid_requests_are_400_with_their_parameter(client):
    cases = [
        (dict(temperature=2.5), "invalid_request_error", "temperature"),
        (dict(top_p=1.5), "invalid_request_error", "top_p"),
        (dict(reasoning={"effort": "extreme"}), "unsupported_reasoning_effort", "reasoning.effort"),
        (dict(reasoning={"summary": "verbose"}), "invalid_request_error", "reasoning.summary"),
        (dict(truncation="sometimes"), "invalid_request_error", "truncation"),
    ]
    for extra, code, param in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.responses.create(model=MODEL, input="x", **extra)
        assert e.value.body["code"] == code, extra
        assert e.value.body["param"] == param, extra
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="reel-1", input="x")
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model="no-such-model", input="x")
    assert e.value.body["code"] == "model_not_found"
    ok = client.responses.create(model=MODEL, input="x", reasoning={"effort": "low", "summary": "auto"})
    assert ok.status == "completed"
    assert last_request()["reasoning_effort"] == "low"
