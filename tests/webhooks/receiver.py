"""A webhook receiver for the tests, written from the Standard Webhooks specification alone:
it verifies `webhook-signature` (HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>"
keyed by the base64-decoded secret) with its own code, and deduplicates by `webhook-id`.

Paths decide how it answers: `/flaky/...` fails the first delivery of each webhook-id with a
500 and accepts the next; `/down/...` always answers 500; anything else answers 204."""

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time


def expected_signature(secret: str, webhook_id: str, timestamp: str, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def verify(secret: str, headers: dict, body: bytes, tolerance_s: int = 300) -> bool:
    """True when one of the `v1,` signatures is this secret's and the timestamp is fresh."""
    timestamp = headers.get("webhook-timestamp", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance_s:
        return False
    want = expected_signature(secret, headers.get("webhook-id", ""), timestamp, body)
    for part in headers.get("webhook-signature", "").split(" "):
        version, _, sig = part.partition(",")
        if version == "v1" and hmac.compare_digest(sig, want):
            return True
    return False


class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []  # (path, headers, body, status answered) in arrival order
        self.failed_once = set()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    first = (self.path, headers.get("webhook-id")) not in receiver.failed_once
                    if first:
                        receiver.failed_once.add((self.path, headers.get("webhook-id")))
                    failing = self.path.startswith("/down") or (self.path.startswith("/flaky") and first)
                    status = 500 if failing else 204
                    receiver.requests.append((self.path, headers, body, status))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def received(self, path: str):
        """Every delivery attempt that reached `path`: (headers, body, status answered)."""
        with self.lock:
            return [(h, b, s) for p, h, b, s in self.requests if p == path]

    def events(self, path: str, *secrets: str):
        """The events `path` accepted, each verified (with one of `secrets`, the endpoint's
        secrets over time) and deduplicated by webhook-id, in order."""
        seen, out = set(), []
        for headers, body, status in self.received(path):
            if not any(verify(secret, headers, body) for secret in secrets):
                raise AssertionError(f"a delivery to {path} failed signature verification: {headers}")
            if status >= 300 or headers["webhook-id"] in seen:
                continue
            seen.add(headers["webhook-id"])
            out.append((headers["webhook-id"], json.loads(body)))
        return out

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
