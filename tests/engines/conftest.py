"""Fixtures of the engines suite: the real `reelgate serve` binary (tests/harness.py) with a
catalog holding a text-only model on the reference engine, a model rendered through a fake
server in the OpenAI Videos API's shape (FakeOpenAIVideos, below), and a model rendered through
a second `reelgate serve` (the upstream engine, one reelgate rendering through another)."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, LocalServer, free_port  # noqa: E402

FAKE_KEY = "fake-videos-key-" + uuid.uuid4().hex
DEFAULT_CATALOG = os.path.join(
    os.path.dirname(__file__), "..", "..", "functions", "reelgate", "src", "domain", "catalog.default.toml"
)

EXTRA_CATALOG = """
[[video_models]]
id = "reel-text"
name = "Reel Text"
description = "Text to video only, 16:9 and 9:16."
engine = "reference"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.05", currency = "usd" }]
inputs = []
aspect_ratios = ["16:9", "9:16"]

[[video_models]]
id = "far-openai"
name = "Far (OpenAI shape)"
description = "Rendered by a server speaking the OpenAI Videos API."
engine = "fake-openai"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.20", currency = "usd" }]

[[video_models]]
id = "far-reelgate"
name = "Far (another reelgate)"
description = "Rendered by a second reelgate."
engine = "upstream-reelgate"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.30", currency = "usd" }]

[[engines]]
id = "fake-openai"
kind = "openai_videos"
base_url = "${FAKE_VIDEOS_URL}/v1"
api_key_env = "FAKE_VIDEOS_KEY"
request_shape = "openai"
models = { far-openai = "sora-2" }

[[engines]]
id = "upstream-reelgate"
kind = "openai_videos"
base_url = "${UPSTREAM_REELGATE_URL}/v1"
api_key_env = "UPSTREAM_REELGATE_KEY"
request_shape = "reelgate"
models = { far-reelgate = "reel-1" }
"""


def catalog_text() -> str:
    with open(DEFAULT_CATALOG, encoding="utf-8") as f:
        base = f.read()
    # TOML: the extra tables go before the [[terms]] array so each lands in its own array.
    head, sep, terms = base.partition("\n[[terms]]")
    return head + EXTRA_CATALOG + sep + terms


def make_mp4(path: str, width: int, height: int, seconds: int):
    """A real H.264 + AAC MP4 made by ffmpeg, as a video server would return."""
    subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y",
            "-f", "lavfi", "-i", f"testsrc=size={width}x{height}:rate=24",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            "-t", str(seconds), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
            "-shortest", "-movflags", "+faststart", path,
        ],
        check=True,
    )


class FakeOpenAIVideos:
    """A fake server in the OpenAI Videos API's shape: POST /v1/videos (JSON; `seconds` must be a
    string and `size` WIDTHxHEIGHT, as OpenAI's API takes them), GET /v1/videos/{id} reporting
    `queued`, then `in_progress` with rising progress, then `completed`, GET .../content with an
    MP4 of the requested size and length made by ffmpeg, DELETE /v1/videos/{id}. Every request
    must carry the bearer key. It records the requests it saw."""

    def __init__(self, polls_to_finish: int = 3):
        self.key = FAKE_KEY
        self.polls_to_finish = polls_to_finish
        self.videos = {}
        self.seen = []
        self.dir = tempfile.TemporaryDirectory()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def authorized(self):
                if self.headers.get("authorization") != f"Bearer {fake.key}":
                    self.reply(401, {"error": {"message": "bad key", "type": "invalid_request_error", "param": None, "code": None}})
                    return False
                return True

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                fake.seen.append(("POST", self.path, dict(self.headers), body))
                if not self.authorized():
                    return
                if self.path != "/v1/videos":
                    return self.reply(404, {"error": {"message": "no route", "type": "invalid_request_error", "param": None, "code": None}})
                req = json.loads(body)
                bad = None
                if not isinstance(req.get("seconds"), str):
                    bad = "seconds"
                elif "x" not in str(req.get("size", "")):
                    bad = "size"
                elif "aspect_ratio" in req:
                    bad = "aspect_ratio"
                if bad:
                    return self.reply(400, {"error": {"message": f"bad {bad}", "type": "invalid_request_error", "param": bad, "code": None}})
                vid = "video_" + uuid.uuid4().hex
                w, h = (int(x) for x in req["size"].split("x"))
                fake.videos[vid] = {
                    "id": vid, "object": "video", "model": req["model"], "status": "queued", "progress": 0,
                    "created_at": int(time.time()), "seconds": req["seconds"], "size": req["size"],
                    "_polls": 0, "_dims": (w, h), "_secs": int(req["seconds"]),
                }
                self.reply(200, fake.public(vid))

            def do_GET(self):
                fake.seen.append(("GET", self.path, dict(self.headers), b""))
                if not self.authorized():
                    return
                parts = self.path.strip("/").split("/")
                if len(parts) < 3 or parts[:2] != ["v1", "videos"] or parts[2] not in fake.videos:
                    return self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error", "param": None, "code": None}})
                v = fake.videos[parts[2]]
                if len(parts) == 3:
                    if v["status"] not in ("completed", "failed", "cancelled"):
                        v["_polls"] += 1
                        if v["_polls"] >= fake.polls_to_finish:
                            v["status"], v["progress"] = "completed", 100
                        else:
                            v["status"], v["progress"] = "in_progress", 100 * v["_polls"] // fake.polls_to_finish
                    return self.reply(200, fake.public(parts[2]))
                if parts[3:] == ["content"] and v["status"] == "completed":
                    path = os.path.join(fake.dir.name, parts[2] + ".mp4")
                    if not os.path.exists(path):
                        make_mp4(path, *v["_dims"], v["_secs"])
                    data = open(path, "rb").read()
                    self.send_response(200)
                    self.send_header("content-type", "video/mp4")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.reply(400, {"error": {"message": "not ready", "type": "invalid_request_error", "param": None, "code": None}})

            def do_DELETE(self):
                fake.seen.append(("DELETE", self.path, dict(self.headers), b""))
                if not self.authorized():
                    return
                vid = self.path.strip("/").split("/")[-1]
                if vid not in fake.videos:
                    return self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error", "param": None, "code": None}})
                fake.videos[vid]["status"] = "cancelled"
                self.reply(200, {"id": vid, "object": "video.deleted", "deleted": True})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def public(self, vid):
        return {k: v for k, v in self.videos[vid].items() if not k.startswith("_")}

    def stop(self):
        self.httpd.shutdown()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def fake_videos():
    fake = FakeOpenAIVideos()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def upstream():
    """The second reelgate, rendering on its own reference engine."""
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    with tempfile.TemporaryDirectory() as data_dir:
        srv = LocalServer(data_dir).start()
        try:
            srv.agree(srv.user, srv.org)
            yield srv
        finally:
            srv.stop()


@pytest.fixture(scope="session")
def server(fake_videos, upstream):
    with tempfile.TemporaryDirectory() as data_dir:
        path = os.path.join(data_dir, "catalog.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(catalog_text())
        env = {
            "REELGATE_CATALOG": path,
            "FAKE_VIDEOS_URL": fake_videos.base_url,
            "FAKE_VIDEOS_KEY": fake_videos.key,
            "UPSTREAM_REELGATE_URL": upstream.base_url,
            "UPSTREAM_REELGATE_KEY": upstream.api_key,
        }
        srv = LocalServer(data_dir, env=env).start()
        try:
            srv.agree(srv.user, srv.org)
            yield srv
        finally:
            srv.stop()


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def org_state(server):
    return server.admin("org", "show", "--org", server.org)


def upload(server, data: bytes, purpose: str, name: str) -> str:
    r = httpx.post(
        f"{server.base_url}/v1/files",
        headers=auth(server.api_key),
        data={"purpose": purpose},
        files={"file": (name, data)},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return r.json()["id"]


def create(server, body: dict) -> httpx.Response:
    return httpx.post(f"{server.base_url}/v1/videos", headers=auth(server.api_key), json=body, timeout=30)


def wait_terminal(server, video_id: str, timeout: float = 240) -> dict:
    deadline = time.time() + timeout
    while True:
        v = httpx.get(f"{server.base_url}/v1/videos/{video_id}", headers=auth(server.api_key), timeout=30).json()
        if v["status"] in ("completed", "failed", "canceled"):
            return v
        assert time.time() < deadline, v
        time.sleep(0.5)


def content(server, video_id: str) -> bytes:
    r = httpx.get(
        f"{server.base_url}/v1/videos/{video_id}/content", headers=auth(server.api_key), timeout=60, follow_redirects=True
    )
    assert r.status_code == 200, r.text
    return r.content
