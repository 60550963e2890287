"""Item 2: nothing internal is reachable from the public listener without a credential.

The local server mounts the in-process reference engine under /_engine on the same port; it
must answer 401 to anyone without the per-process engine key (even with fault injection on),
and every other undocumented path must be 404. The signed blob route needs its signature.
"""

import tempfile
import time

import httpx
import pytest

from conftest import auth, start_server

ENGINE_PROBES = [
    ("GET", "/_engine/v1/faults"),
    ("PUT", "/_engine/v1/faults"),
    ("POST", "/_engine/v1/renders"),
    ("GET", "/_engine/v1/renders/rnd_000000000000000000000000"),
    ("POST", "/_engine/v1/renders/rnd_000000000000000000000000/cancel"),
    ("GET", "/_engine/v1/renders/rnd_000000000000000000000000/result"),
]

UNDOCUMENTED = [
    ("GET", "/_engine"),
    ("GET", "/_engine/"),
    ("GET", "/admin"),
    ("GET", "/admin/orgs"),
    ("POST", "/v1/admin/keys"),
    ("GET", "/debug"),
    ("GET", "/debug/pprof"),
    ("GET", "/metrics"),
    ("GET", "/internal"),
    ("GET", "/_fake/requests"),
    ("GET", "/v1/organizations"),
    ("GET", "/v1/users"),
    ("GET", "/v1/keys"),
    ("GET", "/v1/console"),
    ("GET", "/.env"),
    ("GET", "/reelgate.sqlite3"),
    ("GET", "/url-signing.key"),
    ("GET", "/blobs"),
    ("GET", "/v1/engine/renders"),
    ("POST", "/v1/jobs/sweep"),
    ("GET", "/v1/moderations"),
]


@pytest.fixture(scope="module")
def fault_server():
    """A server with the engine's fault switches on: even these must need the engine key."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, args=["--engine-fault-injection"])
        try:
            yield srv
        finally:
            srv.stop()


def send(srv, method, path, key=None):
    headers = auth(key) if key else {}
    body = {"prompt": "x", "seconds": 4, "aspect_ratio": "16:9"} if method in ("POST", "PUT") else None
    return httpx.request(method, f"{srv.base_url}{path}", headers=headers, json=body, timeout=10)


@pytest.mark.parametrize("method,path", ENGINE_PROBES)
def test_the_in_process_engine_needs_its_own_key(fault_server, method, path):
    for key in (None, fault_server.api_key):  # a tenant's API key is not the engine's
        r = send(fault_server, method, path, key)
        assert r.status_code == 401, f"{method} {path} -> {r.status_code} {r.text}"


@pytest.mark.parametrize("method,path", UNDOCUMENTED)
def test_undocumented_paths_are_not_found(fault_server, method, path):
    for key in (None, fault_server.api_key):
        r = send(fault_server, method, path, key)
        assert r.status_code in (401, 404), f"{method} {path} -> {r.status_code} {r.text}"


def test_the_signed_blob_route_needs_a_valid_signature(fault_server):
    for path in [
        "/blobs/files/x",
        "/blobs/files/x?expires=9999999999&signature=00",
        "/blobs/../reelgate.sqlite3",
        "/blobs/%2e%2e/url-signing.key",
    ]:
        r = httpx.get(f"{fault_server.base_url}{path}", timeout=10)
        assert r.status_code in (401, 403, 404), f"{path} -> {r.status_code}"
        assert r.status_code == 404 or r.json()["error"]["code"] in ("signature_mismatch", "url_expired")


def test_the_service_itself_still_renders_through_the_engine(fault_server):
    """The engine key is wired: a job admitted on this server completes."""
    srv = fault_server
    srv.agree(srv.user, srv.org)
    r = httpx.post(
        f"{srv.base_url}/v1/videos",
        headers=auth(srv.api_key),
        json={"model": "reel-1", "prompt": "a paper lantern over a river", "seconds": 4, "aspect_ratio": "16:9"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    vid = r.json()["id"]
    deadline = time.time() + 120
    status = None
    while time.time() < deadline:
        status = httpx.get(f"{srv.base_url}/v1/videos/{vid}", headers=auth(srv.api_key), timeout=10).json()
        if status["status"] in ("completed", "failed"):
            break
        time.sleep(0.5)
    assert status["status"] == "completed", status
