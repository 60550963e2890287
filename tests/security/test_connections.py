"""Issue #30, items 1 (JSON), 2 (connections) and 3 (overload): attacks on the real
`reelgate serve` binary's listener. Each test starts its own server with the bounds it attacks
(docs/security.md §8 states them) and measures what the attack got: peak RSS from
/proc/<pid>/status, answer times, status codes."""

import json
import socket
import tempfile
import threading
import time

import httpx
import pytest

from conftest import auth, start_server
from harness import peak_rss_kib

MIB = 1 << 20


@pytest.fixture()
def fresh_server(upstream):
    """A server of its own per test, so RSS figures and connection counts are this test's."""
    servers = []

    def start(**env):
        data_dir = tempfile.TemporaryDirectory()
        srv = start_server(
            data_dir.name,
            env={
                "REELGATE_UPSTREAM_BASE_URL": upstream.url,
                "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision",
                "REELGATE_LOG": "warn",
                **env,
            },
        )
        servers.append((srv, data_dir))
        return srv

    yield start
    for srv, data_dir in servers:
        srv.stop()
        data_dir.cleanup()


def rss_mib(srv):
    return peak_rss_kib(srv.proc.pid) / 1024


def raw(srv, head: str, body: bytes = b"", timeout=5.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=timeout)
    s.sendall(head.encode() + body)
    return s


def read_status(s: socket.socket, timeout: float):
    """The status line's code, or None if the server closed or said nothing in `timeout`."""
    s.settimeout(timeout)
    try:
        data = s.recv(65536)
    except (socket.timeout, ConnectionResetError):
        return None
    if not data:
        return None
    return int(data.split(b" ", 2)[1])


def seconds_until_closed(s: socket.socket, limit: float = 10.0) -> float:
    """How long the server took to close `s` (reading and dropping whatever it sent)."""
    started = time.monotonic()
    s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except (socket.timeout, ConnectionResetError):
        pass
    return time.monotonic() - started


def chat(srv, content="hello", timeout=30):
    return httpx.post(
        f"{srv.base_url}/v1/chat/completions",
        headers=auth(srv.api_key),
        json={"model": "fake-model-v1", "messages": [{"role": "user", "content": content}]},
        timeout=timeout,
    )


def test_a_json_bomb_is_refused_before_it_is_parsed(fresh_server):
    srv = fresh_server()
    chat(srv).raise_for_status()
    before = rss_mib(srv)
    # 24 MiB of `0,`: twelve million values, 925 MiB once parsed on 359e46c.
    bomb = b"[" + b"0," * (12 * MIB) + b"0]"
    started = time.monotonic()
    r = httpx.post(
        f"{srv.base_url}/v1/chat/completions",
        headers={**auth(srv.api_key), "Content-Type": "application/json"},
        content=bomb,
        timeout=60,
    )
    took = time.monotonic() - started
    grew = rss_mib(srv) - before
    print(f"\njson bomb: {r.status_code} in {took:.2f} s, peak RSS +{grew:.0f} MiB")
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "json_too_complex"
    # The buffered body itself (24 MiB) and nothing parsed from it.
    assert grew < 64, f"peak RSS grew {grew:.0f} MiB"
    # A deep one too: refused, the server still answers.
    r = httpx.post(
        f"{srv.base_url}/v1/chat/completions",
        headers={**auth(srv.api_key), "Content-Type": "application/json"},
        content=b"[" * 100_000 + b"]" * 100_000,
        timeout=30,
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "json_too_complex"
    assert chat(srv).status_code == 200


def test_unauthenticated_trickles_do_not_delay_a_tenant(fresh_server):
    srv = fresh_server()
    socks = []
    refused_at_once = []
    # The attack: bodies announced at 32 MiB and 16 MiB (the whole 48 MiB budget),
    # then trickled; twice over, to a /v1 route and to the console's.
    for path in ("/v1/videos", "/v1/chat/completions", "/console/api/videos", "/console/api/chat"):
        for size in (32 * MIB, 16 * MIB):
            s = raw(
                srv,
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; "
                f"boundary=b\r\nContent-Length: {size}\r\n\r\n",
                b"--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n",
            )
            socks.append((path, s))
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for _, s in socks:
                try:
                    s.sendall(b"a")
                except OSError:
                    pass
            time.sleep(0.5)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        for path, s in socks:
            if path.startswith("/v1/"):
                # No credential, a large body: 401 before a byte of it is read.
                refused_at_once.append(read_status(s, 3.0))
        # A tenant's 1 MiB chat request, authenticated, while the trickles go on.
        started = time.monotonic()
        r = chat(srv, content="x" * MIB, timeout=20)
        took = time.monotonic() - started
    finally:
        stop.set()
        t.join()
        for _, s in socks:
            s.close()
    print(f"\ntenant's 1 MiB chat during 8 unauthenticated trickles: {r.status_code} in {took:.2f} s")
    assert refused_at_once == [401, 401, 401, 401], refused_at_once
    assert r.status_code == 200, r.text
    assert took < 5, f"the tenant waited {took:.1f} s"


def test_a_body_slower_than_the_minimum_rate_is_cut_off(fresh_server):
    srv = fresh_server()
    size = 300 * 1024  # over the small-body threshold: it holds part of the body budget
    s = raw(
        srv,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {srv.api_key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {size}\r\n\r\n",
        b'{"model": "fake-model-v1", "messages": [{"role": "user", "content": "',
    )
    started = time.monotonic()
    status = None
    s.settimeout(0.2)
    # One kilobyte a second: far under the 16 KiB/s minimum once the 10 s grace is over.
    while time.monotonic() - started < 25:
        try:
            s.sendall(b"a" * 1024)
        except OSError:
            break
        try:
            data = s.recv(65536)
            if data:
                status = int(data.split(b" ", 2)[1])
                assert b"request_timeout" in data, data[:400]
            break
        except socket.timeout:
            time.sleep(0.8)
    took = time.monotonic() - started
    s.close()
    print(f"\n1 KiB/s body: answered {status} after {took:.1f} s")
    assert status == 408, status
    assert 9 < took < 16, took


def test_slow_headers_and_idle_connections_are_closed(fresh_server):
    srv = fresh_server(REELGATE_HEADER_TIMEOUT_SECS="2")
    # Headers that never finish.
    s = raw(srv, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    took_headers = seconds_until_closed(s)
    s.close()
    # A keep-alive connection that went quiet after one request.
    s = raw(srv, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_status(s, 5) == 200
    took_idle = seconds_until_closed(s)
    s.close()
    print(f"\nunfinished headers closed after {took_headers:.1f} s, idle keep-alive after {took_idle:.1f} s")
    assert took_headers < 4, took_headers
    assert took_idle < 4, took_idle


def test_connections_past_the_cap_are_closed_at_once(fresh_server):
    srv = fresh_server(REELGATE_MAX_CONNECTIONS="16")
    # The start-up probe's connection may still hold a slot for a moment after it closed: wait
    # until 16 connections of ours are each answered (and kept alive), so all 16 slots are ours.
    deadline = time.monotonic() + 10
    while True:
        held = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(16)]
        for s in held:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        if all(read_status(s, 5) == 200 for s in held) or time.monotonic() > deadline:
            break
        for s in held:
            s.close()
        time.sleep(0.2)
    extra = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    started = time.monotonic()
    status = read_status(extra, 5)
    took = time.monotonic() - started
    extra.close()
    for s in held:
        s.close()
    time.sleep(0.3)
    after = httpx.get(f"{srv.base_url}/health", timeout=5).status_code
    print(f"\n17th connection: {status} after {took:.2f} s; once the 16 closed: {after}")
    assert status is None and took < 1, (status, took)
    assert after == 200


def stalled_request(srv) -> socket.socket:
    """A chat request's headers and half its body: in flight, its handler waiting for the rest."""
    return raw(
        srv,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {srv.api_key}\r\nContent-Type: application/json\r\n"
        "Content-Length: 200\r\n\r\n",
        b'{"model": "fake-model-v1", ',
    )


def test_past_the_in_flight_bound_requests_are_shed_and_health_answers(fresh_server):
    srv = fresh_server(REELGATE_MAX_IN_FLIGHT="4", REELGATE_SHED_LAG_MS="0")
    stalled = [stalled_request(srv) for _ in range(4)]
    time.sleep(0.5)
    started = time.monotonic()
    shed = chat(srv, timeout=10)
    took = time.monotonic() - started
    health = httpx.get(f"{srv.base_url}/health", timeout=5)
    for s in stalled:
        s.close()
    time.sleep(0.5)
    after = chat(srv)
    print(f"\n5th request with 4 in flight: {shed.status_code} in {took * 1000:.0f} ms; "
          f"health {health.status_code}; after: {after.status_code}")
    assert shed.status_code == 503, shed.text
    assert shed.headers.get("retry-after") == "1"
    assert shed.json()["error"]["code"] == "server_overloaded"
    assert took < 1
    assert health.status_code == 200
    assert after.status_code == 200, after.text


def read_answer(s: socket.socket, timeout: float = 5.0) -> tuple[str, bytes]:
    """One whole answer with a Content-Length body: its head (lower-cased) and its body."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError(f"the connection closed mid-answer: {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    head = head.decode("latin-1").lower()
    length = next(int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.startswith("content-length:"))
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError("the connection closed mid-body")
        body += chunk
    return head, body[:length]


def test_a_shed_request_keeps_its_connection_when_its_body_came_with_it(fresh_server):
    """Shedding must cost less than serving: a shed request whose small body arrived with its
    headers keeps its connection open for the client's next request (closing it made every
    client reconnect, and under overload the reconnects took the CPU the admitted requests
    needed). A shed request whose body has not arrived still says `Connection: close`."""
    srv = fresh_server(REELGATE_MAX_IN_FLIGHT="2", REELGATE_SHED_LAG_MS="0")
    stalled = [stalled_request(srv) for _ in range(2)]
    time.sleep(0.5)
    body = json.dumps({"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}]}).encode()
    whole = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {srv.api_key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    s = raw(srv, whole, body)
    head, answer = read_answer(s)
    assert head.startswith("http/1.1 503"), head
    assert json.loads(answer)["error"]["code"] == "server_overloaded"
    assert "connection: close" not in head, head
    # The same connection carries the next request.
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _ = read_answer(s)
    assert head.startswith("http/1.1 200"), head
    s.close()
    # Headers alone, the body still to come: the connection cannot be kept, and the answer says so.
    partial = raw(srv, whole)
    head, _ = read_answer(partial)
    assert head.startswith("http/1.1 503"), head
    assert "connection: close" in head, head
    partial.close()
    for st in stalled:
        st.close()


def test_a_refusal_before_the_body_is_read_says_the_connection_closes(fresh_server):
    """A refusal decided from the headers alone (a bad credential here) leaves the body unread,
    so the connection cannot carry another request: the answer says `Connection: close` rather
    than dropping a client's next request unanswered. An answer that read its body keeps the
    connection open for the next request."""
    srv = fresh_server()
    body = json.dumps({"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}]}).encode()
    # The headers go first and the body later, as on a busy network: the refusal comes before it.
    s = raw(
        srv,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n",
    )
    head, _ = read_answer(s)
    assert head.startswith("http/1.1 401"), head
    assert "connection: close" in head, head
    s.close()
    # The body read to its end (the same request with a good key): the connection stays open
    # and answers a second request.
    with httpx.Client(base_url=srv.base_url, headers=auth(srv.api_key), timeout=30) as client:
        first = client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
        assert first.status_code == 200, first.text
        assert first.headers.get("connection") != "close"
        second = client.get("/v1/models")
        assert second.status_code == 200


def test_bodies_declaring_more_than_the_limit_are_refused_before_a_byte_is_read(fresh_server):
    """Twelve authenticated requests at once declaring 33 MiB (the limit is 32 MiB), each sending
    its body in full: every one is a 413 answered before the body is read, and the server's peak
    RSS does not grow by the bodies (it grew 376 MiB when the extractors' limit refused them only
    after reading 32 MiB each)."""
    srv = fresh_server()
    chat(srv).raise_for_status()
    before = rss_mib(srv)
    declared = 33 * MIB
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.api_key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n")
    socks = [raw(srv, head, b'{"model": "' + b"a" * 65536) for _ in range(12)]
    answers = []
    started = time.monotonic()
    for s in socks:
        answers.append(read_status(s, 10))
    took = time.monotonic() - started
    for s in socks:
        s.close()
    grew = rss_mib(srv) - before
    print(f"\n12 bodies declaring 33 MiB: {answers} in {took:.2f} s, peak RSS +{grew:.0f} MiB")
    assert answers == [413] * 12, answers
    assert grew < 32, f"peak RSS grew {grew:.0f} MiB"
    assert chat(srv).status_code == 200


def test_a_client_that_never_reads_its_answers_loses_its_connection(fresh_server):
    """A client that asks for large answers and never reads them fills its socket buffers; once a
    write has waited the write timeout the server closes the connection and its slot is free
    (with a cap of 4 connections, 4 such clients left a tenant unanswered before)."""
    srv = fresh_server(REELGATE_MAX_CONNECTIONS="4", REELGATE_WRITE_TIMEOUT_SECS="2")
    spec = "/openapi.json"
    size = len(httpx.get(f"{srv.base_url}{spec}", timeout=10).content)
    # Enough pipelined requests that their answers overflow both sides' socket buffers.
    repeats = max(4, (8 << 20) // max(size, 1))
    hogs = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(f"GET {spec} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * repeats)
        hogs.append(s)
    started = time.monotonic()
    answered = None
    while time.monotonic() - started < 20:
        try:
            r = httpx.get(f"{srv.base_url}/health", timeout=2)
            answered = r.status_code
            break
        except httpx.HTTPError:
            time.sleep(0.5)
    took = time.monotonic() - started
    for s in hogs:
        s.close()
    print(f"\n4 connections that never read {repeats} answers of {size} bytes: a new client answered "
          f"{answered} after {took:.1f} s")
    assert answered == 200 and took < 15, (answered, took)


def second_tenant(srv):
    org = srv.admin("org", "create", "--name", "Bystander", "--plan", "enterprise", "--credits", "10.00")
    user = srv.admin("user", "create", "--org", org["id"], "--email", "bystander@example.test")
    return srv.admin("key", "create", "--user", user["id"])["secret"]


def test_one_tenants_trickled_bodies_leave_room_for_another(fresh_server):
    """Issue #45's attack: one tenant's two 24 MiB bodies trickled at 20 KiB/s held the whole
    48 MiB budget, and another tenant's 300 KiB chat waited 18 s behind them. A tenant now holds
    at most its share (32 MiB), so the other's body finds room at once; the same tenant's third
    large body waits at most REELGATE_BODY_WAIT_SECS and is answered 503 in words."""
    srv = fresh_server(REELGATE_MIN_BODY_RATE="1024", REELGATE_BODY_WAIT_SECS="2")
    other_key = second_tenant(srv)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.api_key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {24 * MIB}\r\n\r\n")
    socks = [raw(srv, head, b'{"model": "fake-model-v1", "messages": [{"role": "user", "content": "')
             for _ in range(2)]
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in socks:
                try:
                    s.sendall(b"a" * 5 * 1024)
                except OSError:
                    pass
            time.sleep(0.25)

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        time.sleep(1)
        started = time.monotonic()
        r = httpx.post(f"{srv.base_url}/v1/chat/completions", headers=auth(other_key), timeout=30,
                       json={"model": "fake-model-v1", "messages": [{"role": "user", "content": "x" * 300 * 1024}]})
        other_took = time.monotonic() - started
        started = time.monotonic()
        third = raw(srv, head, b"{")
        third_status = read_status(third, 10)
        third_took = time.monotonic() - started
        third.close()
    finally:
        stop.set()
        t.join()
        for s in socks:
            s.close()
    print(f"\nanother tenant's 300 KiB chat during two trickled 24 MiB bodies: {r.status_code} in "
          f"{other_took:.2f} s (18 s before); the trickler's third body: {third_status} after {third_took:.1f} s")
    assert r.status_code == 200, r.text
    assert other_took < 3, f"the other tenant waited {other_took:.1f} s"
    assert third_status == 503 and 1.5 < third_took < 6, (third_status, third_took)


def test_an_absurd_content_length_without_a_body_is_refused_at_once(fresh_server):
    """A request declaring a terabyte and sending nothing is answered 413 at once, on the upload
    route (which streams its body, and so used to wait for the body-rate timeout) as on JSON
    routes; nothing is read or stored."""
    srv = fresh_server()
    took = {}
    for path, kind in (("/v1/files", "multipart/form-data; boundary=b"), ("/v1/chat/completions", "application/json")):
        started = time.monotonic()
        s = raw(srv, f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.api_key}\r\n"
                     f"Content-Type: {kind}\r\nContent-Length: {10**12}\r\n\r\n")
        status = read_status(s, 5)
        took[path] = (status, round(time.monotonic() - started, 2))
        s.close()
    print(f"\na terabyte declared, no body: {took}")
    assert all(status == 413 and secs < 1 for status, secs in took.values()), took
    assert httpx.get(f"{srv.base_url}/v1/files", headers=auth(srv.api_key), timeout=10).json()["data"] == []
