"""Item 8: credentials end when their person leaves the organization, and the URL-signing key
file is readable by its owner only (created 0600; a looser existing one is tightened at start)."""

import os
import stat
import tempfile

import httpx

from conftest import auth, start_server


def whoami(server, key):
    return httpx.get(f"{server.base_url}/v1/videos/models", headers=auth(key), timeout=10)


def test_api_keys_and_console_sessions_stop_when_the_person_leaves(server, tenant):
    other = server.admin("user", "create", "--org", tenant["org"], "--email", "leaver@example.test")
    key = server.admin("key", "create", "--user", other["id"])["secret"]
    console = server.console(other["id"], tenant["org"])
    assert whoami(server, key).status_code == 200
    assert console.get("/console/api/session").status_code == 200
    removed = server.admin("user", "remove", "--org", tenant["org"], "--user", other["id"])
    assert removed["records_deleted"] >= 1, removed
    r = whoami(server, key)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["type"] == "authentication_error"
    # The browser session signed in before the removal is refused on its next request.
    r = console.get("/console/api/session")
    assert r.status_code == 401, r.text
    # The organization's other member is unaffected.
    assert whoami(server, tenant["key"]).status_code == 200


def key_mode(data_dir):
    return stat.S_IMODE(os.stat(os.path.join(data_dir, "url-signing.key")).st_mode)


def test_the_url_signing_key_is_created_owner_only_and_a_loose_one_is_tightened():
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir)
        try:
            assert key_mode(data_dir) == 0o600, oct(key_mode(data_dir))
        finally:
            srv.stop()
        path = os.path.join(data_dir, "url-signing.key")
        secret = open(path, "rb").read()
        os.chmod(path, 0o644)
        srv = start_server(data_dir)
        try:
            assert key_mode(data_dir) == 0o600, oct(key_mode(data_dir))
            assert open(path, "rb").read() == secret, "the key itself is kept"
        finally:
            srv.stop()
