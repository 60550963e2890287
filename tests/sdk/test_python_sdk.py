"""The official `openai` Python SDK against the real binary, route by route: models; files
create/list/retrieve/content/delete; videos create (`extra_body` for the spec's
`aspect_ratio`), retrieve, list with auto-paging, download_content (video and thumbnail),
delete; chat completions plain, streamed with usage, with tool calls; responses plain,
streamed (typed events) and chained with `previous_response_id`. Every answer is also checked
against docs/openapi.json by tests/harness.py."""

import time

import openai
import pytest

from conftest import MODEL

TERMINAL = ("completed", "failed", "canceled")


def png_bytes():
    import struct
    import zlib

    w = h = 8
    rows = b"".join(b"\x00" + b"".join(bytes((x * 30 % 256, y * 30 % 256, 120)) for x in range(w)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def client(tenant):
    return openai.OpenAI(base_url=tenant.base_url, api_key=tenant.key, max_retries=0)


def wait_for(client, video_id, limit=240):
    """The README's polling loop: poll until a terminal status, honouring the server's hint.
    (Here the hint is shortened, since the reference engine renders in seconds.)"""
    deadline = time.time() + limit
    while True:
        raw = client.videos.with_raw_response.retrieve(video_id)
        video = raw.parse()
        if video.status in TERMINAL:
            return video
        hint = int(raw.headers.get("openai-poll-after-ms", "10000"))
        assert 10_000 <= hint <= 30_000, "the spec recommends polling every 10 to 30 seconds"
        assert time.time() < deadline, f"{video_id} still {video.status}"
        time.sleep(1)


def test_models_list_and_retrieve(client):
    ids = [m.id for m in client.models.list()]
    assert MODEL in ids
    assert client.models.retrieve(MODEL).id == MODEL
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("no-such-model")
    assert e.value.code == "model_not_found"
    assert e.value.body["request_id"] == e.value.response.headers["x-request-id"]


def test_files_create_list_retrieve_content_delete(client):
    png = png_bytes()
    created = client.files.create(file=("tiny.png", png, "image/png"), purpose="vision")
    assert created.id.startswith("file") and created.bytes == len(png)
    listed = [f.id for f in client.files.list()]
    assert created.id in listed
    assert client.files.retrieve(created.id).filename == "tiny.png"
    assert client.files.content(created.id).read() == png
    deleted = client.files.delete(created.id)
    assert deleted.id == created.id and deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(created.id)


def test_videos_create_retrieve_page_download_and_delete(client):
    # The SDK sends videos.create as multipart/form-data; `aspect_ratio` (required by the spec,
    # unknown to the SDK) goes in extra_body; `size` must be the ratio's 768p size.
    created = [
        client.videos.create(
            model="reel-1", prompt=f"a lantern {i}", seconds="4", size="1366x768", extra_body={"aspect_ratio": "16:9"}
        )
        for i in range(3)
    ]
    assert all(v.status not in TERMINAL for v in created)
    raw = client.videos.with_raw_response.retrieve(created[0].id)
    assert 10_000 <= int(raw.headers["openai-poll-after-ms"]) <= 30_000
    paged = [v.id for v in client.videos.list(limit=2)]  # auto-paging over two pages
    assert paged[:3] == [v.id for v in reversed(created)]
    video = wait_for(client, created[0].id)
    assert video.status == "completed", video
    mp4 = client.videos.download_content(video.id).read()
    assert mp4[4:8] == b"ftyp"
    jpeg = client.videos.download_content(video.id, variant="thumbnail").read()
    assert jpeg[:3] == b"\xff\xd8\xff"
    for v in created[1:]:
        wait_for(client, v.id)
    for v in created:
        deleted = client.videos.delete(v.id)
        assert deleted.id == v.id and deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.videos.retrieve(created[0].id)


def test_video_parameters_the_spec_lacks_are_refused_by_name(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.create(model="reel-1", prompt="x", seconds="4", size="1280x720", extra_body={"aspect_ratio": "16:9"})
    assert e.value.body["param"] == "size"
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.create(
            model="reel-1", prompt="x", seconds="4", input_reference=("a.png", png_bytes(), "image/png"),
            extra_body={"aspect_ratio": "16:9"},
        )
    assert e.value.body["param"] == "input_reference"


def test_chat_completions_plain_streamed_and_tool_calls(client):
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "Hello from the fake upstream."
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello from the fake upstream."
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 10
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    calls = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Weather?"}], tools=[tool]
    ).choices[0]
    assert calls.finish_reason == "tool_calls"
    assert [c.function.name for c in calls.message.tool_calls] == ["get_weather", "get_weather"]


def test_responses_plain_streamed_and_chained(client):
    first = client.responses.create(model=MODEL, input="hi")
    assert first.output_text == "Hello from the fake upstream."
    kinds = [e.type for e in client.responses.create(model=MODEL, input="hi", stream=True)]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    second = client.responses.create(model=MODEL, input="again", previous_response_id=first.id)
    assert second.id != first.id and second.output_text
    assert client.responses.retrieve(second.id).id == second.id
    items = list(client.responses.input_items.list(second.id))
    assert items
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)


def test_request_ids_are_echoed_or_made(client, tenant):
    import httpx

    mine = httpx.get(f"{tenant.base_url}/models", headers={"Authorization": f"Bearer {tenant.key}", "x-request-id": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"
    bad = httpx.get(f"{tenant.base_url}/models", headers={"x-request-id": "evil\tid"})
    made = bad.headers["x-request-id"]
    assert made.startswith("req_") and bad.json()["error"]["request_id"] == made
    with open(tenant.server.log_path) as log:
        assert made in log.read(), "the same id names the request in the log"
