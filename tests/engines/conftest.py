"""Fixtures of the engines suite: the real `reelgate serve` binary (tests/harness.py) with a
catalog holding a text-only model on the reference engine, a model rendered through a fake
server in the OpenAI Videos API's shape (FakeOpenAIVideos, below), and a model rendered through
a second `reelgate serve` (the upstream engine, one reelgate rendering through another)."""

import base64
import json
import os
import struct
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
    os.path.dirname(__file__), "..", "..", "functions", "reelgate", "src", "domain", "catalog", "catalog.default.toml"
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
description = "Rendered by a server speaking the OpenAI Videos API (sora-2: 4, 8 or 12 s, 1280x720 or 720x1280, with audio)."
engine = "fake-openai"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.20", currency = "usd" }]

[[video_models]]
id = "far-nova"
name = "Far (Nova Reel through a gateway)"
description = "Nova Reel served in the OpenAI Videos shape: 6 s shots up to 120 s, 1280x720, no audio."
engine = "fake-gateway-nova"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.10", currency = "usd" }]

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
id = "fake-gateway-nova"
kind = "openai_videos"
base_url = "${FAKE_VIDEOS_URL}/v1"
api_key_env = "FAKE_VIDEOS_KEY"
request_shape = "openai"
models = { far-nova = "amazon.nova-reel-v1:1" }
duration_range = { min = 6, max = 120, step = 6 }
sizes = ["1280x720"]
audio = false

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


def make_mp4(path: str, width: int, height: int, seconds: int, audio: bool = True, profile: str = "high",
             first_frame: str | None = None):
    """A real MP4 made by ffmpeg as hosted models deliver them: x264 High profile (CABAC, 8x8
    transform, B-frames) at 30 fps, AAC when the model renders audio. With a first frame the clip
    is that image held still (a model animating it would start on it too). `profile` "high10"
    makes a 10-bit clip, which the conform stage does not decode."""
    if first_frame:
        video = ["-loop", "1", "-framerate", "30", "-i", first_frame]
    else:
        video = ["-f", "lavfi", "-i", f"testsrc2=size={width}x{height}:rate=30"]
    sound = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"] if audio else []
    pix = ["-pix_fmt", "yuv420p10le", "-profile:v", "high10"] if profile == "high10" else [
        "-pix_fmt", "yuv420p", "-profile:v", "high"]
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", *video, *sound, "-t", str(seconds),
         "-vf", f"scale={width}:{height}", "-c:v", "libx264", *pix, "-bf", "2",
         *(["-c:a", "aac"] if audio else ["-an"]), "-movflags", "+faststart", path],
        check=True,
    )


def image_size(data: bytes):
    """(width, height) of a PNG or baseline/progressive JPEG, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data.startswith(b"\xff\xd8"):
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return (w, h)
            i += 2 + length
    return None


class FakeOpenAIVideos:
    """A fake of the OpenAI Videos API (POST /v1/videos, GET /v1/videos/{id}, GET
    /v1/videos/{id}/content, DELETE /v1/videos/{id}), written from its API reference, as a
    gateway serving it would answer. It refuses what the API refuses, with OpenAI's error body:
    a missing bearer key (401); an unknown parameter such as `aspect_ratio`; `seconds` that is
    not one of the model's strings (sora-2: "4", "8", "12"; a number is refused too); a `size`
    the model does not render (sora-2: 1280x720, 720x1280); an unknown model; an
    `input_reference` that is not exactly one of `image_url` / `file_id`, or whose image is not
    at the requested size. MODELS also holds one model a gateway serves in the same shape,
    Amazon Nova Reel (6 s steps up to 120 s, 1280x720 only, no audio). A video moves `queued`
    → `in_progress` (progress rising over the polls) → `completed`; its content is a real MP4
    made by ffmpeg at the size and seconds asked (see make_mp4). It records every request."""

    MODELS = {
        "sora-2": {"seconds": {"4", "8", "12"}, "sizes": {"720x1280", "1280x720"}, "audio": True},
        "sora-2-pro": {"seconds": {"4", "8", "12"},
                       "sizes": {"720x1280", "1280x720", "1024x1792", "1792x1024"}, "audio": True},
        "amazon.nova-reel-v1:1": {"seconds": {str(s) for s in range(6, 121, 6)}, "sizes": {"1280x720"},
                                  "audio": False},
    }
    PARAMS = {"model", "prompt", "seconds", "size", "input_reference"}

    def __init__(self, polls_to_finish: int = 3):
        self.key = FAKE_KEY
        self.polls_to_finish = polls_to_finish
        self.videos = {}
        self.seen = []
        # Test control, not part of the API: the profile of the next rendered clip.
        self.next_profile = "high"
        # MiB of padding (a top-level `free` box) after each clip it serves: a hostile
        # engine's answer that is large but valid.
        self.padding_mib = 0
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

            def error(self, status, message, param=None, kind="invalid_request_error"):
                self.reply(status, {"error": {"message": message, "type": kind, "param": param, "code": None}})

            def authorized(self):
                if self.headers.get("authorization") != f"Bearer {fake.key}":
                    self.error(401, "Incorrect API key provided.")
                    return False
                return True

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                fake.seen.append(("POST", self.path, dict(self.headers), body))
                if not self.authorized():
                    return
                if self.path != "/v1/videos":
                    return self.error(404, "Invalid URL")
                try:
                    req = json.loads(body)
                except ValueError:
                    return self.error(400, "We could not parse the JSON body of your request.")
                unknown = sorted(set(req) - fake.PARAMS)
                if unknown:
                    return self.error(400, f"Unknown parameter: '{unknown[0]}'.", unknown[0])
                model = fake.MODELS.get(req.get("model", "sora-2"))
                if model is None:
                    return self.error(400, "Invalid value for 'model'.", "model")
                if not isinstance(req.get("prompt"), str) or not req["prompt"] or len(req["prompt"]) > 32000:
                    return self.error(400, "Invalid value for 'prompt'.", "prompt")
                seconds, size = req.get("seconds", "4"), req.get("size", "720x1280")
                if not isinstance(seconds, str) or seconds not in model["seconds"]:
                    return self.error(400, f"Invalid value: '{seconds}'. Supported values are: "
                                      f"{', '.join(sorted(model['seconds'], key=int))}.", "seconds")
                if not isinstance(size, str) or size not in model["sizes"]:
                    return self.error(400, f"Invalid value: '{size}'. Supported values are: "
                                      f"{', '.join(sorted(model['sizes']))}.", "size")
                w, h = (int(x) for x in size.split("x"))
                first_frame = None
                ref = req.get("input_reference")
                if ref is not None:
                    if not isinstance(ref, dict) or len(ref) != 1 or not ({"image_url", "file_id"} & set(ref)):
                        return self.error(400, "Provide exactly one of image_url or file_id.", "input_reference")
                    url = ref.get("image_url", "")
                    if not url.startswith("data:image/"):
                        return self.error(400, "input_reference.image_url must be a data URL here.",
                                          "input_reference")
                    data = base64.b64decode(url.split(",", 1)[1])
                    if image_size(data) != (w, h):
                        return self.error(400, "Inpaint image must match the requested width and height",
                                          "input_reference")
                    first_frame = data
                vid = "video_" + uuid.uuid4().hex
                fake.videos[vid] = {
                    "id": vid, "object": "video", "model": req.get("model", "sora-2"), "status": "queued",
                    "progress": 0, "created_at": int(time.time()), "seconds": seconds, "size": size,
                    "_polls": 0, "_dims": (w, h), "_secs": int(seconds), "_audio": model["audio"],
                    "_profile": fake.next_profile, "_first_frame": first_frame,
                }
                self.reply(200, fake.public(vid))

            def do_GET(self):
                fake.seen.append(("GET", self.path, dict(self.headers), b""))
                if not self.authorized():
                    return
                parts = self.path.strip("/").split("/")
                if len(parts) < 3 or parts[:2] != ["v1", "videos"] or parts[2] not in fake.videos:
                    return self.error(404, "Video not found")
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
                        still = None
                        if v["_first_frame"]:
                            still = path + ".jpg"
                            with open(still, "wb") as f:
                                f.write(v["_first_frame"])
                        make_mp4(path, *v["_dims"], v["_secs"], audio=v["_audio"], profile=v["_profile"],
                                 first_frame=still)
                    data = open(path, "rb").read()
                    padding = fake.padding_mib << 20
                    self.send_response(200)
                    self.send_header("content-type", "video/mp4")
                    self.send_header("content-length", str(len(data) + padding))
                    self.end_headers()
                    self.wfile.write(data)
                    if padding:
                        self.wfile.write(struct.pack(">I", padding) + b"free" + bytes((1 << 20) - 8))
                        for _ in range(fake.padding_mib - 1):
                            self.wfile.write(bytes(1 << 20))
                    return
                self.error(400, "Video is not ready yet")

            def do_DELETE(self):
                fake.seen.append(("DELETE", self.path, dict(self.headers), b""))
                if not self.authorized():
                    return
                vid = self.path.strip("/").split("/")[-1]
                if vid not in fake.videos:
                    return self.error(404, "Video not found")
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


def start_server(data_dir, fake_videos, upstream, env=None, renders_at_once=2):
    """A server whose catalog holds the reference engine, the fake OpenAI-shaped server's models
    and the second reelgate's, its plan allowing `renders_at_once`; its person has agreed to the
    video terms."""
    path = os.path.join(data_dir, "catalog.toml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(catalog_text().replace("max_concurrent_renders = 2", f"max_concurrent_renders = {renders_at_once}"))
    srv = LocalServer(data_dir, env={
        "REELGATE_CATALOG": path,
        "FAKE_VIDEOS_URL": fake_videos.base_url,
        "FAKE_VIDEOS_KEY": fake_videos.key,
        "UPSTREAM_REELGATE_URL": upstream.base_url,
        "UPSTREAM_REELGATE_KEY": upstream.api_key,
        **(env or {}),
    }).start()
    srv.agree(srv.user, srv.org)
    return srv


@pytest.fixture(scope="session")
def server(fake_videos, upstream):
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, fake_videos, upstream)
        try:
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
