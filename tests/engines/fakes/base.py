"""What every hosted-provider fake shares: a threaded HTTP server on 127.0.0.1 whose API routes
the provider's module writes (`HostedFake.api`), and a "CDN" under /cdn/ that serves the real
MP4s the fake renders (see make_mp4 in tests/engines/conftest.py) and refuses any request that
carries a credential, as a provider's storage would never need one (so a test sees at once if
reelgate sent its provider key anywhere but the API).

Test controls (not part of any provider's API): `unavailable_next` answers that many API calls
with 503 before recovering; `create_delay` holds the next create that many seconds (so the
render message is delivered again meanwhile); a prompt containing REFUSE_WORD is refused for
its content, in the provider's own way. Counters: `creates` (renders started, which a provider
bills), `cancels` (ids canceled), `seen` (every API request)."""

import base64
import json
import os
import tempfile
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REFUSE_WORD = "forbidden-subject"


class HostedFake:
    #: the catalog `kind` this fake stands for, and the variable its key is read from
    kind = ""
    key_env = ""

    def __init__(self):
        from harness import free_port

        self.key = f"{self.kind}-key-{uuid.uuid4().hex}"
        self.creates = 0
        self.cancels = []
        self.seen = []
        self.cdn_requests = []
        self.unavailable_next = 0
        self.create_delay = 0.0
        self.first_frames = []  # the first-frame images (bytes) the creates carried
        # each native operation on a source: {"operation", and for a downloaded source
        # "seconds" and "content_type"}
        self.native_ops = []
        self.reference_counts = []  # how many reference images each create carried
        self.lock = threading.Lock()
        self.dir = tempfile.TemporaryDirectory()
        self.clips = {}  # CDN name -> (width, height, seconds, audio, first frame bytes or None)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status, body=None, headers=(), content_type="application/json"):
                data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
                self.send_response(status)
                if data:
                    self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self, method):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path
                if path.startswith("/cdn/"):
                    fake.cdn_requests.append((method, path, dict(self.headers)))
                    credentials = [h for h in ("authorization", "x-goog-api-key", "x-api-key") if self.headers.get(h)]
                    if credentials:
                        return self.send(403, {"error": "the CDN takes no credentials"})
                    clip = fake.clip_path(path[len("/cdn/"):])
                    if clip is None:
                        return self.send(404, {"error": "no such object"})
                    with open(clip, "rb") as f:
                        return self.send(200, f.read(), content_type="video/mp4")
                fake.seen.append((method, path, dict(self.headers), body))
                with fake.lock:
                    if fake.unavailable_next > 0:
                        fake.unavailable_next -= 1
                        return self.send(503, {"error": "service unavailable"})
                status, answer, headers = fake.api(method, path, {k.lower(): v for k, v in self.headers.items()}, body)
                self.send(status, answer, headers)

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_PUT(self):
                self.handle_any("PUT")

            def do_DELETE(self):
                self.handle_any("DELETE")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        # The CDN is another origin (another port), as a provider's storage is another host: a
        # key sent there would be a key sent off the API.
        self.cdn = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.cdn_base_url = f"http://127.0.0.1:{self.cdn.server_address[1]}"
        threading.Thread(target=self.cdn.serve_forever, daemon=True).start()
        self.render_lock = threading.Lock()

    # --- for the provider modules -----------------------------------------------------------

    def api(self, method, path, headers, body):
        """The provider's API: returns (status, JSON-able body or None, [(header, value)])."""
        raise NotImplementedError

    def started(self):
        """Counts a create (a render the provider would bill), after the create delay."""
        delay = self.create_delay
        if delay:
            self.create_delay = 0.0
            time.sleep(delay)
        with self.lock:
            self.creates += 1

    def cdn_url(self, width, height, seconds, audio, first_frame=None):
        """The URL on the fake's CDN of a clip rendered (on first download) at this size."""
        name = uuid.uuid4().hex + ".mp4"
        self.clips[name] = (width, height, seconds, audio, first_frame)
        return f"{self.cdn_base_url}/cdn/{name}"

    def clip_path(self, name):
        spec = self.clips.get(name)
        if spec is None:
            return None
        path = os.path.join(self.dir.name, name)
        # Two downloads at once (a poll delivered twice) must not see a half-written clip.
        with self.render_lock:
            if not os.path.exists(path):
                from conftest import make_mp4

                width, height, seconds, audio, first_frame = spec
                still = None
                if first_frame:
                    still = path + ".img"
                    with open(still, "wb") as f:
                        f.write(first_frame)
                partial = path + ".partial.mp4"
                make_mp4(partial, width, height, seconds, audio=audio, first_frame=still)
                os.replace(partial, path)
        return path

    def read_image(self, reference):
        """The bytes of an image the provider was given: a data URI, or a URL it downloads (the
        signed URL of reelgate's blob store)."""
        if reference.startswith("data:"):
            return base64.b64decode(reference.split(",", 1)[1])
        with urllib.request.urlopen(reference, timeout=30) as r:  # noqa: S310 (test fake)
            return r.read()

    def read_video(self, url):
        """Downloads a source video as the provider would: (bytes, seconds, content type), or
        (None, None, reason) when it is unusable (a provider takes an MP4 served as one)."""
        import subprocess

        try:
            with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 (test fake)
                data, ctype = r.read(), r.headers.get("content-type", "")
        except OSError as e:
            return None, None, f"the video could not be downloaded: {e}"
        if ctype.split(";")[0].strip() != "video/mp4":
            return None, None, f"the video is served as {ctype!r}, not video/mp4"
        probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", "-"],
                               input=data, capture_output=True)
        try:
            seconds = float(probe.stdout.decode().strip())
        except ValueError:
            return None, None, "the video is not a readable MP4"
        return data, seconds, ctype

    @staticmethod
    def refused(prompt):
        return REFUSE_WORD in (prompt or "")

    def engine_toml(self, engine_id):
        """The catalog's [[engines]] entry for this fake (each module adds its own keys)."""
        raise NotImplementedError

    def stop(self):
        self.httpd.shutdown()
        self.cdn.shutdown()
        self.dir.cleanup()
