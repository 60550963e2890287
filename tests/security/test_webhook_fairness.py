"""Webhook attacks against the real `reelgate serve` (docs/security.md, "Webhook endpoint cap
and fair delivery").

- The endpoint cap (16 per organization) holds under 40 concurrent creates: exactly 16 exist
  afterwards, counted with GET /v1/webhooks.
- A tarpit: tenant A registers 16 endpoints on a server that accepts the connection and never
  answers, and makes 32 events for them. Tenant B's event to B's fast endpoint must still
  arrive within seconds (measured from B's cancel answer to the receiver's arrival time), and a
  tarpit endpoint sees at most 2 POSTs at once (its concurrency), A's endpoints at most 4.

The endpoints listen on 127.0.0.2, the address the server's allow list names
(REELGATE_FETCH_ALLOW), as the fake public host of conftest.py does.
"""

import select
import socket
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from conftest import FAKE_PUBLIC_IP, auth, start_server

CAP = 16


class Endpoints:
    """A webhook receiver on 127.0.0.2 (a fake, for tests): paths under /tarpit/ accept the
    request and never answer (the connection is held for `hold_s`); any other path answers
    204 at once. Records arrival times and the tarpit's concurrency."""

    def __init__(self, hold_s: float = 120):
        host = self
        self.lock = threading.Lock()
        self.arrivals = []  # (path, monotonic time, body)
        self.in_tarpit = {}  # path -> requests held now (the service still waiting on them)
        self.peak_per_path = {}
        self.in_tarpit_total = 0
        self.peak_total = 0
        self.closing = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                now = time.monotonic()
                with host.lock:
                    host.arrivals.append((self.path, now, body))
                if not self.path.startswith("/tarpit/"):
                    self.send_response(204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with host.lock:
                    host.in_tarpit[self.path] = host.in_tarpit.get(self.path, 0) + 1
                    host.in_tarpit_total += 1
                    host.peak_per_path[self.path] = max(
                        host.peak_per_path.get(self.path, 0), host.in_tarpit[self.path])
                    host.peak_total = max(host.peak_total, host.in_tarpit_total)
                try:
                    # Hold the request unanswered until the service gives up on it (the
                    # connection closes) or `hold_s` passes.
                    deadline = time.monotonic() + hold_s
                    while not host.closing.is_set() and time.monotonic() < deadline:
                        readable, _, _ = select.select([self.connection], [], [], 0.2)
                        if readable and not self.connection.recv(1, socket.MSG_PEEK):
                            break
                finally:
                    with host.lock:
                        host.in_tarpit[self.path] -= 1
                        host.in_tarpit_total -= 1
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server((FAKE_PUBLIC_IP, 0), Handler)
        self.base = f"http://{FAKE_PUBLIC_IP}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def first_arrival(self, path):
        with self.lock:
            return next((t for p, t, _ in self.arrivals if p == path), None)

    def tarpit_posts(self):
        with self.lock:
            return sum(1 for p, _, _ in self.arrivals if p.startswith("/tarpit/"))

    def stop(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def endpoints():
    e = Endpoints()
    yield e
    e.stop()


@pytest.fixture(scope="module")
def hook_server():
    """A server of its own: the tarpit must not slow the session's other tests."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, env={"REELGATE_FETCH_ALLOW": FAKE_PUBLIC_IP})
        try:
            yield srv
        finally:
            srv.stop()


def new_tenant(server, name):
    org = server.admin("org", "create", "--name", name, "--credits", "50.00")
    user = server.admin("user", "create", "--org", org["id"], "--email", f"{name}@example.test")
    key = server.admin("key", "create", "--user", user["id"])
    server.agree(user["id"], org["id"])
    return key["secret"]


def list_endpoints(server, key):
    r = httpx.get(f"{server.base_url}/v1/webhooks", headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_forty_concurrent_creates_make_exactly_the_cap(hook_server, endpoints):
    key = new_tenant(hook_server, "capattack")
    barrier = threading.Barrier(40)

    def create(i):
        barrier.wait()
        return httpx.post(f"{hook_server.base_url}/v1/webhooks",
                          json={"url": f"{endpoints.base}/ok/cap{i}"}, headers=auth(key), timeout=60)

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(create, range(40)))
    created = [r for r in answers if r.status_code == 200]
    refused = [r for r in answers if r.status_code != 200]
    existing = list_endpoints(hook_server, key)
    print(f"\n40 concurrent creates: {len(created)} created, {len(existing)} listed (cap {CAP})")
    assert len(existing) == CAP, f"{len(existing)} endpoints exist against a cap of {CAP}"
    assert len(created) == CAP
    assert all(r.status_code == 400 and "at most 16" in r.json()["error"]["message"] for r in refused)

    # A delete frees exactly one place, and the count follows it.
    r = httpx.delete(f"{hook_server.base_url}/v1/webhooks/{existing[0]['id']}", headers=auth(key))
    assert r.status_code == 200, r.text
    again = [httpx.post(f"{hook_server.base_url}/v1/webhooks", json={"url": f"{endpoints.base}/ok/again{i}"},
                        headers=auth(key), timeout=30).status_code for i in range(3)]
    assert again == [200, 400, 400], again
    assert len(list_endpoints(hook_server, key)) == CAP


def cancel_video(server, key, prompt):
    body = {"model": "reel-1", "prompt": prompt, "seconds": 15, "aspect_ratio": "16:9"}
    r = httpx.post(f"{server.base_url}/v1/videos", json=body, headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    video = r.json()["id"]
    r = httpx.post(f"{server.base_url}/v1/videos/{video}/cancel", headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    return video


def test_a_tarpit_tenant_does_not_delay_another_tenants_event(hook_server, endpoints):
    a = new_tenant(hook_server, "tarpitter")
    b = new_tenant(hook_server, "bystander")
    for i in range(CAP):
        r = httpx.post(f"{hook_server.base_url}/v1/webhooks", json={"url": f"{endpoints.base}/tarpit/{i}"},
                       headers=auth(a), timeout=30)
        assert r.status_code == 200, r.text
    r = httpx.post(f"{hook_server.base_url}/v1/webhooks", json={"url": f"{endpoints.base}/fast/b"},
                   headers=auth(b), timeout=30)
    assert r.status_code == 200, r.text

    # 32 deliveries into the tarpit, queued before B's one.
    for n in range(2):
        cancel_video(hook_server, a, f"a slow river {n}")
    time.sleep(1.0)
    video = cancel_video(hook_server, b, "a fast train")
    sent = time.monotonic()
    deadline = sent + 150
    while endpoints.first_arrival("/fast/b") is None and time.monotonic() < deadline:
        time.sleep(0.05)
    arrived = endpoints.first_arrival("/fast/b")
    latency = (arrived or time.monotonic()) - sent
    print(f"\nB's event arrived {latency:.2f} s after its cancel"
          f" ({'on time' if arrived else 'NOT within 150 s'}); tarpit POSTs so far: {endpoints.tarpit_posts()},"
          f" peak per tarpit endpoint: {max(endpoints.peak_per_path.values(), default=0)},"
          f" peak over A's endpoints: {endpoints.peak_total}")
    assert arrived is not None, "B's event did not arrive within 150 s"
    assert video.encode() in next(body for p, _, body in endpoints.arrivals if p == "/fast/b")
    assert latency < 5.0, f"B's event took {latency:.1f} s behind A's tarpit"

    # Let the tarpit run a while: per endpoint at most 2 POSTs at once, A at most 4 overall,
    # and after the first timeouts (10 s) the endpoints back off instead of taking 32 POSTs.
    time.sleep(25)
    assert max(endpoints.peak_per_path.values()) <= 2, endpoints.peak_per_path
    assert endpoints.peak_total <= 4, endpoints.peak_total
    records = list_endpoints(hook_server, a)
    failed = [e for e in records if e["delivery"]["consecutive_failures"] > 0]
    assert failed, "no tarpit attempt timed out within 25 s (the answer timeout is 10 s)"
    for e in failed:
        for attempt in e["delivery"]["last_attempts"]:
            assert not attempt["succeeded"] and attempt["error"] == "the URL did not answer in time"
