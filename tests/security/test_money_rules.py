"""Issue #30 items 4, 6, 7 and 9: money rules, idempotency scope, upload completion, forbidden
image URLs — attacked on the real `reelgate serve` binary.

The server here runs its own catalog (the security suite's fake upstream stays as it is): a plan
whose organization limit is 2 video creates a minute, a chat model on a fake upstream that
reports 50,000 prompt tokens in its last chunk (a fake, below), and a vision model on a
`bedrock` upstream, whose adapter fetches image URLs itself through the guarded fetcher (the
image is refused before any AWS call, so no AWS is needed).
"""

import base64
import hashlib
import json
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from conftest import auth, start_server

REPORTED_PROMPT_TOKENS = 50_000
REPORTED_COMPLETION_TOKENS = 400


class ReportingUpstream:
    """A fake OpenAI-compatible upstream (for tests): a stream of 10 word chunks 0.3 s apart,
    then, as OpenAI does with `stream_options.include_usage`, a last chunk with the usage: 50,000
    prompt tokens; for the upstream model `m-silent`, no usage at all, as an upstream that never
    reports it. Counts the streams it finished sending."""

    def __init__(self):
        fake = self
        self.finished = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                base = {"id": "up-1", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model")}
                usage = {"prompt_tokens": REPORTED_PROMPT_TOKENS,
                         "completion_tokens": REPORTED_COMPLETION_TOKENS,
                         "total_tokens": REPORTED_PROMPT_TOKENS + REPORTED_COMPLETION_TOKENS}
                if not body.get("stream"):
                    out = json.dumps({**base, "object": "chat.completion", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "done"},
                         "finish_reason": "stop"}], "usage": usage}).encode()
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()

                def send(chunk):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.flush()

                try:
                    send({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "w0"},
                                               "finish_reason": None}]})
                    for i in range(1, 10):
                        time.sleep(0.3)
                        send({**base, "choices": [{"index": 0, "delta": {"content": f" w{i}"},
                                                   "finish_reason": None}]})
                    send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    silent = body.get("model") == "m-silent"
                    if (body.get("stream_options") or {}).get("include_usage") and not silent:
                        send({**base, "choices": [], "usage": usage})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    fake.finished += 1
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


CATALOG = """
terms_version = "2026-11-01"

[[plans]]
id = "starter"
max_concurrent_renders = 20
org_limits = {{ video_creates_per_minute = 2 }}

[[video_models]]
id = "reel-1"
name = "Reel 1"
description = "test"
engine = "reference"
plans = ["starter"]
pricing = [{{ resolution = "768p", per_second = "0.10", currency = "usd" }}]

[[engines]]
id = "reference"
kind = "reference"

[[upstreams]]
id = "reporting"
kind = "openai"
base_url = "{upstream}"

[[upstreams]]
id = "bedrock"
kind = "bedrock"
region = "us-east-1"
base_url = "http://127.0.0.1:9"

[[chat_models]]
id = "reporting-chat"
upstream = "reporting"
upstream_model = "m"
capabilities = ["text", "vision"]
input_per_million = "1.00"
output_per_million = "2.00"

[[chat_models]]
id = "silent-chat"
upstream = "reporting"
upstream_model = "m-silent"
capabilities = ["text", "vision"]
input_per_million = "1.00"
output_per_million = "2.00"

[[chat_models]]
id = "bedrock-vision"
upstream = "bedrock"
upstream_model = "anthropic.claude-x"
capabilities = ["text", "vision"]
input_per_million = "1.00"
output_per_million = "2.00"

[[terms]]
version = "2026-11-01"
en = "Terms."
ja = "規約。"
"""


@pytest.fixture(scope="module")
def reporting():
    fake = ReportingUpstream()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def money(reporting):
    with tempfile.TemporaryDirectory() as data_dir:
        catalog = f"{data_dir}/catalog.toml"
        with open(catalog, "w") as f:
            f.write(CATALOG.format(upstream=reporting.url))
        srv = start_server(data_dir, env={"REELGATE_CATALOG": catalog})
        try:
            yield srv
        finally:
            srv.stop()


def org_of(server, credits="20.00", n_users=1):
    org = server.admin("org", "create", "--name", "Money", "--credits", credits)
    people = []
    for i in range(n_users):
        user = server.admin("user", "create", "--org", org["id"], "--email", f"m{i}@example.test")
        key = server.admin("key", "create", "--user", user["id"])
        server.agree(user["id"], org["id"])
        people.append({"user": user["id"], "key": key["secret"], "key_id": key["id"]})
    return org["id"], people


def balance(server, org):
    return Decimal(server.admin("org", "show", "--org", org)["balance"])


def video(seconds):
    return {"model": "reel-1", "prompt": "a lantern over a river", "seconds": seconds, "aspect_ratio": "16:9"}


def create(server, key, seconds, headers=None):
    return httpx.post(f"{server.base_url}/v1/videos", headers={**auth(key), **(headers or {})},
                      json=video(seconds), timeout=60)


def videos_of(server, key):
    r = httpx.get(f"{server.base_url}/v1/videos", headers=auth(key), params={"limit": 100}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["data"]


# --- 4. Budgets -----------------------------------------------------------------------------


def test_a_budget_of_0_10_does_not_start_a_1_50_render_even_first_in_the_month(money):
    org, (p,) = org_of(money)
    money.admin("key", "budget", "--key-id", p["key_id"], "--monthly", "0.10")
    before = balance(money, org)
    r = create(money, p["key"], 15)  # 15 s x 0.10 = 1.50
    assert r.status_code == 402, r.text
    assert r.json()["error"]["code"] == "key_budget_exceeded", r.text
    assert videos_of(money, p["key"]) == []
    shown = money.admin("key", "budget", "--key-id", p["key_id"])
    assert Decimal(shown["committed"]) == 0, shown
    # A budget of exactly one 4 s render (0.40): that render starts and commits exactly its quote.
    # (A third create would meet the organization's limit of 2 creates a minute first.)
    money.admin("key", "budget", "--key-id", p["key_id"], "--monthly", "0.40")
    assert create(money, p["key"], 4).status_code == 200
    assert len(videos_of(money, p["key"])) == 1
    assert Decimal(money.admin("key", "budget", "--key-id", p["key_id"])["committed"]) == Decimal("0.40")
    assert balance(money, org) == before, "renders are charged on completion, not admission"


def test_a_budget_of_0_admits_nothing(money):
    org, (p,) = org_of(money)
    money.admin("key", "budget", "--key-id", p["key_id"], "--monthly", "0")
    r = create(money, p["key"], 4)
    assert r.status_code == 402, r.text
    assert r.json()["error"]["code"] == "key_budget_exceeded"
    chat = httpx.post(f"{money.base_url}/v1/chat/completions", headers=auth(p["key"]),
                      json={"model": "reporting-chat", "messages": [{"role": "user", "content": "hi"}]},
                      timeout=30)
    assert chat.status_code == 402, chat.text
    assert videos_of(money, p["key"]) == []
    assert Decimal(money.admin("key", "budget", "--key-id", p["key_id"])["committed"]) == 0


# --- 4. The console's admission is /v1's ------------------------------------------------------


def well_inside_a_minute():
    """Waits for a new minute when this one ends within 20 s: the video-create limit is a fixed
    one-minute window, and a test whose creates straddle two windows sees the limit reset."""
    left = 60 - time.time() % 60
    if left < 20:
        time.sleep(left + 0.5)


def test_console_creates_are_refused_once_the_organization_limit_answered_429(money):
    org, (p,) = org_of(money)
    well_inside_a_minute()
    assert create(money, p["key"], 4).status_code == 200
    assert create(money, p["key"], 4).status_code == 200
    limited = create(money, p["key"], 4)
    assert limited.status_code == 429, limited.text
    with money.console(p["user"], org) as console:
        answers = [console.post("/console/api/videos", json=video(4)).status_code for _ in range(3)]
    assert answers == [429, 429, 429], answers
    assert len(videos_of(money, p["key"])) == 2


def test_the_console_replays_an_idempotency_key_instead_of_creating_a_second_job(money):
    org, (p,) = org_of(money)
    with money.console(p["user"], org) as console:
        h = {"Idempotency-Key": "console-create-1"}
        first = console.post("/console/api/videos", json=video(4), headers=h)
        second = console.post("/console/api/videos", json=video(4), headers=h)
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    assert first.json()["id"] == second.json()["id"]
    assert len(videos_of(money, p["key"])) == 1


def test_a_console_session_scopes_idempotency_keys_to_its_person(money):
    """Two teammates' console sessions that send the same Idempotency-Key create two jobs; each
    person's own retry replays their own."""
    org, (a, b) = org_of(money, n_users=2)
    h = {"Idempotency-Key": "shared-string"}
    with money.console(a["user"], org) as console:
        first_a = console.post("/console/api/videos", json=video(4), headers=h)
    with money.console(b["user"], org) as console:
        first_b = console.post("/console/api/videos", json=video(4), headers=h)
        again_b = console.post("/console/api/videos", json=video(4), headers=h)
    assert first_a.status_code == 200, first_a.text
    assert first_b.status_code == 200, first_b.text
    assert first_a.json()["id"] != first_b.json()["id"]
    assert again_b.json()["id"] == first_b.json()["id"]
    assert len(videos_of(money, a["key"])) == 2  # the organization's jobs: one each


# --- 4. Streams the client leaves ---------------------------------------------------------


def input_tokens(server, key, start):
    r = httpx.get(f"{server.base_url}/v1/usage", headers=auth(key),
                  params={"start_time": start, "group_by": "kind"}, timeout=30)
    assert r.status_code == 200, r.text
    rows = [row for b in r.json()["data"] for row in b["results"] if row["kind"] == "input_tokens"]
    return sum(row["input_tokens"] for row in rows)


def wait_charged(server, key, start, timeout=40):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = input_tokens(server, key, start)
        if got:
            return got
        time.sleep(0.5)
    return 0


def leave_after_first_event(server, key, path, body):
    with httpx.stream("POST", f"{server.base_url}{path}", headers=auth(key), json=body, timeout=30) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("data:"):
                break  # the first chunk; the client leaves


def test_a_chat_stream_left_after_its_first_chunk_is_charged_the_upstreams_usage(money, reporting):
    org, (p,) = org_of(money)
    start = int(time.time()) - 5
    leave_after_first_event(money, p["key"], "/v1/chat/completions", {
        "model": "reporting-chat", "stream": True,
        "messages": [{"role": "user", "content": "hi"}]})
    charged = wait_charged(money, p["key"], start)
    print(f"chat stream left after 1 chunk: charged {charged} input tokens "
          f"(upstream reported {REPORTED_PROMPT_TOKENS})")
    assert charged == REPORTED_PROMPT_TOKENS


def test_a_responses_stream_left_early_is_charged_the_upstreams_usage(money, reporting):
    org, (p,) = org_of(money)
    start = int(time.time()) - 5
    leave_after_first_event(money, p["key"], "/v1/responses", {
        "model": "reporting-chat", "stream": True, "store": False, "input": "hi"})
    charged = wait_charged(money, p["key"], start)
    print(f"responses stream left after 1 event: charged {charged} input tokens")
    assert charged == REPORTED_PROMPT_TOKENS


# The estimate's tokens for an image part (token_charges::IMAGE_PART_TOKENS: one 512px tile).
IMAGE_PART_TOKENS = 765


def test_a_stream_left_whose_upstream_reports_no_usage_is_charged_every_input_part(money, reporting):
    """Without the upstream's usage the charge is an estimate, and it must count what was sent:
    an image part is 765 tokens, not the 0 its missing text would give (the issue's stream was
    charged 1 token)."""
    org, (p,) = org_of(money)
    image = "data:image/png;base64," + base64.b64encode(PNG_A).decode()
    start = int(time.time()) - 5
    leave_after_first_event(money, p["key"], "/v1/chat/completions", {
        "model": "silent-chat", "stream": True,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": image}}]}]})
    charged = wait_charged(money, p["key"], start)
    print(f"chat stream with an image, left after 1 chunk, no usage upstream: charged {charged} "
          f"input tokens (image part {IMAGE_PART_TOKENS})")
    assert IMAGE_PART_TOKENS < charged < IMAGE_PART_TOKENS + 50, charged


# --- 6. Idempotency keys belong to the caller -------------------------------------------------


def upload_body():
    return {"purpose": "vision", "filename": "a.png", "bytes": len(PNG_A), "mime_type": "image/png"}


def test_two_teammates_with_the_same_idempotency_key_get_two_uploads(money):
    org, (a, b) = org_of(money, n_users=2)
    h = {"Idempotency-Key": "shared-key-1"}
    first = httpx.post(f"{money.base_url}/v1/uploads", headers={**auth(a["key"]), **h}, json=upload_body())
    other = httpx.post(f"{money.base_url}/v1/uploads", headers={**auth(b["key"]), **h}, json=upload_body())
    again = httpx.post(f"{money.base_url}/v1/uploads", headers={**auth(a["key"]), **h}, json=upload_body())
    assert first.status_code == other.status_code == again.status_code == 200, (first.text, other.text)
    assert other.json()["id"] != first.json()["id"]
    assert other.json()["upload_url"] != first.json()["upload_url"]
    assert again.json()["id"] == first.json()["id"], "the same caller's retry still replays"


# --- 7. Racing completes ------------------------------------------------------------------


def png(color: bytes) -> bytes:
    import struct
    import zlib

    def chunk(kind, data):
        c = kind + data
        return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + color * 8 for _ in range(8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b""))


PNG_A = png(b"\xff\x00\x00")
PNG_B = png(b"\x00\x00\xff")
assert len(PNG_A) == len(PNG_B)
NOT_AN_IMAGE = b"x" * len(PNG_A)


def test_concurrent_completes_yield_one_file_that_never_changes(money):
    org, (p,) = org_of(money)
    up = httpx.post(f"{money.base_url}/v1/uploads", headers=auth(p["key"]), json=upload_body()).json()

    def put(data):
        return httpx.put(up["upload_url"], content=data, headers=up["upload_headers"], timeout=30).status_code

    assert put(PNG_A) in (200, 201, 204)
    stop = threading.Event()

    def swap():
        # Meanwhile the staged bytes keep changing (two valid images of the same size).
        while not stop.is_set():
            put(PNG_B)
            put(PNG_A)

    def complete(_):
        r = httpx.post(f"{money.base_url}/v1/uploads/{up['id']}/complete", headers=auth(p["key"]), timeout=90)
        return r.status_code, r.json()

    swapper = threading.Thread(target=swap)
    swapper.start()
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(complete, range(16)))
    stop.set()
    swapper.join()
    ok = [body for status, body in answers if status == 200]
    refused = [body for status, body in answers if status != 200]
    files = {b["id"] for b in ok}
    print(f"16 racing completes: {len(ok)} answered a file, {len(refused)} refused; "
          f"distinct file ids {len(files)}")
    assert refused == [], refused
    assert len(files) == 1, files
    (file_id,) = files

    def content():
        r = httpx.get(f"{money.base_url}/v1/files/{file_id}/content", headers=auth(p["key"]), timeout=30)
        assert r.status_code == 200, r.text
        return hashlib.sha256(r.content).hexdigest()

    first = content()
    assert first in (hashlib.sha256(PNG_A).hexdigest(), hashlib.sha256(PNG_B).hexdigest())
    assert {b["bytes"] for b in ok} == {len(PNG_A)}
    # Afterwards: more PUTs to the upload URL and more completes change nothing.
    put(NOT_AN_IMAGE)
    for _ in range(3):
        status, body = complete(0)
        assert status == 200 and body["id"] == file_id, body
    assert content() == first


# --- 9. Forbidden image URLs are the caller's mistake -----------------------------------------


def test_a_chat_image_url_at_a_forbidden_address_is_a_400_naming_it(money, private_host):
    org, (p,) = org_of(money)
    before = len(private_host.hits)
    for url in [f"http://127.0.0.1:{private_host.port}/secret", "http://169.254.169.254/latest/meta-data/"]:
        r = httpx.post(f"{money.base_url}/v1/chat/completions", headers=auth(p["key"]), timeout=30, json={
            "model": "bedrock-vision",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": url}}]}]})
        assert r.status_code == 400, r.text
        err = r.json()["error"]
        assert err["type"] == "invalid_request_error", err
        assert err["code"] == "url_refused", err
        assert err["param"] == "messages[0].content[1].image_url.url", err
    assert len(private_host.hits) == before


def test_a_responses_input_image_at_a_forbidden_address_is_a_400_naming_it(money, private_host):
    org, (p,) = org_of(money)
    r = httpx.post(f"{money.base_url}/v1/responses", headers=auth(p["key"]), timeout=30, json={
        "model": "bedrock-vision", "store": False,
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "what is this"},
            {"type": "input_image", "image_url": f"http://127.0.0.1:{private_host.port}/secret"}]}]})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["code"] == "url_refused", err
    assert err["param"] == "input", err
