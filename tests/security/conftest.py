"""Security suite fixtures: the real `reelgate serve` binary (tests/harness.py) attacked over
HTTP. Shared here: a server with a fake chat upstream (tests/python/fake_upstream.py, a fake)
and an allow list naming the fake "public" host 127.0.0.2; tenants made through `reelgate admin`;
small HTTP servers playing a public file host (127.0.0.2) and a private one (127.0.0.1).
"""

import os
import struct
import sys
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, FakeUpstream, LocalServer  # noqa: E402

# What the private host serves; it must never reach a caller.
PRIVATE_MARKER = "PRIVATE-HOST-ANSWER-7f3c9e"
PUBLIC_TEXT = "public file body 41d2"
# The address the fake public host listens on; the security server's allow list names it.
FAKE_PUBLIC_IP = "127.0.0.2"


class FileHost:
    """A tiny HTTP server on `ip` (a fake, for tests): /file.txt, /secret, /redirect?to=URL,
    /big?mb=N and /bigpng?mb=N (an image by its first bytes; streamed, no Content-Length). Counts the requests it got."""

    def __init__(self, ip: str):
        host = self
        self.hits = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                host.hits.append(self.path)
                u = urlparse(self.path)
                if u.path == "/file.txt":
                    self._send(200, PUBLIC_TEXT.encode(), "text/plain")
                elif u.path == "/secret":
                    self._send(200, PRIVATE_MARKER.encode(), "text/plain")
                elif u.path == "/redirect":
                    to = parse_qs(u.query)["to"][0]
                    self.send_response(302)
                    self.send_header("Location", to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif u.path in ("/big", "/bigpng"):
                    query = parse_qs(u.query)
                    mb = int(query.get("mb", ["60"])[0])
                    png = u.path == "/bigpng"
                    self.send_response(200)
                    self.send_header("Content-Type", "image/png" if png else "text/plain")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"a" * (1 << 20)
                    try:
                        if png:
                            # A PNG's signature, a whole header chunk (of w x h, 16x16 unless
                            # asked) and an IDAT chunk's start, then bytes: an image by its
                            # first bytes, and its size readable from them.
                            w, h = int(query.get("w", ["16"])[0]), int(query.get("h", ["16"])[0])
                            ihdr = b"IHDR" + struct.pack(">II", w, h) + b"\x08\x02\x00\x00\x00"
                            head = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0d" + ihdr + struct.pack(">I", zlib.crc32(ihdr))
                                    + struct.pack(">I", mb << 20) + b"IDAT")
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(head), head))
                        for _ in range(mb):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.write(b"0\r\n\r\n")
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                else:
                    self._send(404, b"nope", "text/plain")

            def _send(self, status, body, ctype):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((ip, 0), Handler)
        self.port = self.server.server_address[1]
        self.base = f"http://{ip}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def start_server(data_dir, env=None, args=()):
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    return LocalServer(data_dir, args=args, env=env or {}).start()


@pytest.fixture(scope="session")
def upstream():
    fake = FakeUpstream()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def server(upstream):
    """The server under attack: the fake upstream's models, the fake public host allowed."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(
            data_dir,
            env={
                "REELGATE_UPSTREAM_BASE_URL": upstream.url,
                "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision",
                "REELGATE_FETCH_ALLOW": FAKE_PUBLIC_IP,
            },
        )
        try:
            yield srv
        finally:
            srv.stop()


@pytest.fixture(scope="session")
def public_host():
    h = FileHost(FAKE_PUBLIC_IP)
    yield h
    h.stop()


@pytest.fixture(scope="session")
def private_host():
    h = FileHost("127.0.0.1")
    yield h
    h.stop()


def auth(key):
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture()
def tenant(server):
    """A fresh funded organization whose person agreed to the video terms: (org, user, key)."""
    org = server.admin("org", "create", "--name", "Security test", "--credits", "20.00")
    user = server.admin("user", "create", "--org", org["id"], "--email", "sec@example.test")
    key = server.admin("key", "create", "--user", user["id"])
    server.agree(user["id"], org["id"])
    return {"org": org["id"], "user": user["id"], "key": key["secret"], "key_id": key["id"]}
