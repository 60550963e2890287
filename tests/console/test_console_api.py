"""The console's sign-in and JSON routes against the real `reelgate serve`, over HTTP: one-time
expiring sign-in links, the session cookie (flags, CSRF, sign-out, never an API key), agreement
recorded only in the console, and the console's video, key and usage routes."""

import os
import subprocess
import tempfile
import time

import httpx
import pytest

from harness import BIN, ConsoleClient, LocalServer, serving

JOB = {"model": "reel-1", "prompt": "A paper boat on a calm lake", "seconds": 4, "aspect_ratio": "16:9"}


def error_code(r: httpx.Response) -> str:
    return r.json()["error"]["code"]


def test_serve_prints_a_sign_in_link_that_works_once(server):
    assert server.sign_in_link and server.sign_in_link.startswith(f"{server.base_url}/console/signin?token=rgl_")
    console = ConsoleClient(server.base_url).sign_in(server.sign_in_link)
    me = console.get("/console/api/session").json()
    assert me["user"]["id"] == server.user and me["organization"]["id"] == server.org
    again = httpx.get(server.sign_in_link, follow_redirects=False)
    assert again.status_code == 401
    assert "expired or was already used" in again.text
    assert "set-cookie" not in again.headers
    console.close()


def test_session_cookie_flags(server):
    with server.console() as console:
        cookie = console.set_cookie
        assert cookie.startswith("reelgate_console=rgc_")
        parts = [p.strip() for p in cookie.split(";")]
        assert "HttpOnly" in parts
        assert "SameSite=Lax" in parts
        assert "Path=/console" in parts
        max_age = [p for p in parts if p.startswith("Max-Age=")]
        assert max_age and 0 < int(max_age[0].split("=")[1]) <= 12 * 3600
        assert "Secure" not in parts, "the public URL is http here"


def test_secure_cookie_when_the_public_url_is_https():
    with serving(args=["--public-url", "https://reel.example.test"]) as srv:
        link = srv.sign_in_link.replace("https://reel.example.test", srv.base_url)
        r = httpx.get(link, follow_redirects=False)
        assert r.status_code == 303
        assert "Secure" in [p.strip() for p in r.headers["set-cookie"].split(";")]


def test_expired_link_is_refused():
    with serving(env={"REELGATE_CONSOLE_LINK_TTL_SECS": "1"}) as srv:
        time.sleep(2.2)
        r = httpx.get(srv.sign_in_link, follow_redirects=False)
        assert r.status_code == 401
        assert "set-cookie" not in r.headers
        fresh = srv.console_link(srv.user, srv.org)
        assert httpx.get(fresh, follow_redirects=False).status_code == 303


def test_forged_link_is_refused(server):
    for token in ["", "rgl_nonsense", server.sign_in_link.split("token=")[1][:-3] + "AAA"]:
        r = httpx.get(f"{server.base_url}/console/signin", params={"token": token}, follow_redirects=False)
        assert r.status_code == 401, token


def test_state_changing_requests_need_the_csrf_token(server):
    with server.console() as console:
        r = console.post("/console/api/terms/agree", csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post("/console/api/terms/agree", headers={"X-CSRF-Token": "wrong"}, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post("/console/api/keys", csrf=False)
        assert r.status_code == 403
        r = console.delete("/console/api/keys/key_00000000000000000000000000", csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        assert console.get("/console/api/terms").json()["accepted"] in (True, False)


def test_session_cookie_is_not_an_api_key_and_api_key_is_not_a_session(server):
    with server.console() as console:
        secret = console.http.cookies.get("reelgate_console")
        assert secret and secret.startswith("rgc_")
        r = httpx.get(f"{server.base_url}/v1/videos/models", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 401 and error_code(r) == "invalid_api_key"
        r = httpx.get(f"{server.base_url}/v1/videos/models", cookies={"reelgate_console": secret})
        assert r.status_code == 401
    r = httpx.get(f"{server.base_url}/console/api/session", headers={"Authorization": f"Bearer {server.api_key}"})
    assert r.status_code == 401 and error_code(r) == "console_login_required"
    r = httpx.post(
        f"{server.base_url}/console/api/terms/agree",
        headers={"Authorization": f"Bearer {server.api_key}"},
        cookies={"reelgate_console": server.api_key},
    )
    assert r.status_code == 401


def test_agreement_is_recorded_only_in_the_console(server):
    user = server.admin("user", "create", "--org", server.org, "--email", "agree@example.test")
    key = server.admin("key", "create", "--user", user["id"])["secret"]
    h = {"Authorization": f"Bearer {key}"}
    r = httpx.post(f"{server.base_url}/v1/videos/acceptance", headers=h)
    assert r.status_code == 403 and error_code(r) == "console_login_required"
    assert httpx.get(f"{server.base_url}/v1/videos/acceptance", headers=h).json()["accepted"] is False
    with server.console(user["id"], server.org) as console:
        terms = console.get("/console/api/terms").json()
        assert terms["accepted"] is False and terms["terms_version"]
        r = console.post("/console/api/terms/agree")
        assert r.status_code == 200 and r.json()["accepted"] is True
    assert httpx.get(f"{server.base_url}/v1/videos/acceptance", headers=h).json()["accepted"] is True


def test_sign_out_revokes_the_session(server):
    console = server.console()
    secret = console.http.cookies.get("reelgate_console")
    r = console.post("/console/api/signout")
    assert r.status_code == 200
    assert "Max-Age=0" in r.headers["set-cookie"]
    # The old cookie, replayed, is refused server-side (not only cleared in the browser).
    r = httpx.get(f"{server.base_url}/console/api/session", cookies={"reelgate_console": secret})
    assert r.status_code == 401 and error_code(r) == "console_login_required"
    console.close()


def test_create_watch_play_and_delete_a_video(server):
    with server.console() as console:
        assert console.post("/console/api/terms/agree").status_code == 200
        models = console.get("/console/api/models").json()["data"]
        reel = next(m for m in models if m["id"] == "reel-1")
        per_second = reel["pricing"][0]["per_second"]
        q = console.post("/console/api/videos/quote", json=JOB)
        assert q.status_code == 200, q.text
        quote = q.json()
        assert quote["per_second"] == per_second and quote["seconds"] == 4
        bad = console.post("/console/api/videos/quote", json={**JOB, "seconds": 20})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "seconds"
        before = console.get("/console/api/usage").json()
        created = console.post("/console/api/videos", json=JOB)
        assert created.status_code == 200, created.text
        video = created.json()
        assert video["cost"] == quote["amount"]
        deadline = time.time() + 120
        while video["status"] not in ("completed", "failed") and time.time() < deadline:
            time.sleep(1)
            video = console.get(f"/console/api/videos/{video['id']}").json()
        assert video["status"] == "completed", video
        listed = console.get("/console/api/videos").json()["data"]
        assert listed[0]["id"] == video["id"], "newest first"
        media = console.get(f"/console/api/videos/{video['id']}/media").json()
        # The signed URL needs no header or cookie, and serves ranges (seeking).
        r = httpx.get(media["content_url"], headers={"Range": "bytes=0-99"})
        assert r.status_code == 206 and len(r.content) == 100
        assert r.headers["content-type"].startswith("video/mp4")
        thumb = httpx.get(media["thumbnail_url"])
        assert thumb.status_code == 200 and thumb.content[:2] == b"\xff\xd8"
        after = console.get("/console/api/usage").json()
        assert float(after["balance"]) == pytest.approx(float(before["balance"]) - float(quote["amount"]))
        assert any(c["id"] == video["id"] for c in after["recent_charges"])
        # The job is attributed to the console, visible to the organization's API key too.
        r = httpx.get(f"{server.base_url}/v1/videos/{video['id']}", headers={"Authorization": f"Bearer {server.api_key}"})
        assert r.status_code == 200
        assert console.delete(f"/console/api/videos/{video['id']}").status_code == 200
        assert console.get(f"/console/api/videos/{video['id']}").status_code == 404


def test_keys_are_created_once_listed_and_revoked(server):
    with server.console() as console:
        created = console.post("/console/api/keys")
        assert created.status_code == 200
        key = created.json()
        assert key["secret"].startswith("rgk_")
        h = {"Authorization": f"Bearer {key['secret']}"}
        assert httpx.get(f"{server.base_url}/v1/videos/models", headers=h).status_code == 200
        listed = console.get("/console/api/keys").json()["data"]
        assert any(k["id"] == key["id"] and not k["revoked"] for k in listed)
        assert all("secret" not in k for k in listed)
        assert console.delete(f"/console/api/keys/{key['id']}").status_code == 200
        assert httpx.get(f"{server.base_url}/v1/videos/models", headers=h).status_code == 401
        listed = console.get("/console/api/keys").json()["data"]
        assert any(k["id"] == key["id"] and k["revoked"] for k in listed)
    # Another person's key cannot be revoked from this person's console.
    other = server.admin("user", "create", "--org", server.org, "--email", "other@example.test")
    other_key = server.admin("key", "create", "--user", other["id"])
    with server.console() as console:
        r = console.delete(f"/console/api/keys/{other_key['id']}")
        assert r.status_code == 404


def test_a_new_terms_version_asks_again():
    catalog_src = os.path.join(
        os.path.dirname(__file__), "..", "..", "functions", "reelgate", "src", "domain", "catalog", "catalog.default.toml"
    )
    with tempfile.TemporaryDirectory() as data_dir:
        srv = LocalServer(data_dir).start()
        try:
            with srv.console() as console:
                assert console.post("/console/api/terms/agree").json()["accepted"] is True
        finally:
            srv.stop()
        newer = os.path.join(data_dir, "catalog-newer.toml")
        with open(catalog_src) as f:
            text = f.read()
        assert 'terms_version = "2026-11-01"' in text
        text = text.replace('terms_version = "2026-11-01"', 'terms_version = "2027-01-01"')
        # A terms version without its text stops start-up with a clear message.
        with open(newer, "w") as f:
            f.write(text)
        out = subprocess.run(
            [BIN, "serve", "--addr", "127.0.0.1:0", "--data-dir", data_dir],
            env={**os.environ, "REELGATE_CATALOG": newer},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode != 0
        assert "the terms version 2027-01-01 has no text" in out.stderr, out.stderr
        with open(newer, "a") as f:
            f.write('\n[[terms]]\nversion = "2027-01-01"\nen = "New terms."\nja = "新しい規約。"\n')
        srv = LocalServer(data_dir, env={"REELGATE_CATALOG": newer})
        srv.start()
        try:
            with srv.console(srv.user, srv.org) as console:
                terms = console.get("/console/api/terms").json()
                assert terms["terms_version"] == "2027-01-01" and terms["accepted"] is False
                assert terms["text"] == {"en": "New terms.", "ja": "新しい規約。"}
        finally:
            srv.stop()


def test_console_uploads_and_webhooks_need_the_csrf_token(server):
    with server.console() as console:
        body = {"purpose": "vision", "filename": "a.png", "bytes": 10, "mime_type": "image/png"}
        r = console.post("/console/api/uploads", json=body, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post("/console/api/uploads/upload_00000000000000000000000000/complete", csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post("/console/api/webhooks", json={"url": "https://example.com/h"}, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post("/console/api/webhooks/wh_00000000000000000000000000/rotate_secret", csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.delete("/console/api/webhooks/wh_00000000000000000000000000", csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
    # Without a session at all, and with an API key instead of one: refused.
    for h in ({}, {"Authorization": f"Bearer {server.api_key}"}):
        r = httpx.get(f"{server.base_url}/console/api/webhooks", headers=h)
        assert r.status_code == 401 and error_code(r) == "console_login_required"


def test_a_console_upload_is_the_organizations_file_and_nobody_elses(server):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8  # sniffed as PNG by its signature
    other_org = server.admin("org", "create", "--name", "Elsewhere", "--credits", "1.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "up@example.test")
    other_key = server.admin("key", "create", "--user", other_user["id"])["secret"]
    with server.console() as console:
        r = console.post("/console/api/uploads", json={"purpose": "vision", "filename": "f.png", "bytes": len(png),
                                                        "mime_type": "image/png"})
        assert r.status_code == 200, r.text
        up = r.json()
        assert up["object"] == "upload" and up["upload_method"] == "PUT"
        # Not yet uploaded: completing says so, next to upload_id.
        r = console.post(f"/console/api/uploads/{up['id']}/complete")
        assert r.status_code == 400 and r.json()["error"]["param"] == "upload_id"
        put = httpx.put(up["upload_url"], content=png, headers=up["upload_headers"])
        assert put.status_code in (200, 201, 204), put.text
        # Another organization cannot complete (or learn about) this upload.
        r = httpx.post(f"{server.base_url}/v1/uploads/{up['id']}/complete",
                       headers={"Authorization": f"Bearer {other_key}"})
        assert r.status_code == 404
        r = console.post(f"/console/api/uploads/{up['id']}/complete")
        assert r.status_code == 200, r.text
        f = r.json()
        assert f["purpose"] == "vision" and f["bytes"] == len(png)
        # The same file through the API, for this organization only.
        h = {"Authorization": f"Bearer {server.api_key}"}
        assert httpx.get(f"{server.base_url}/v1/files/{f['id']}", headers=h).status_code == 200
        r = httpx.get(f"{server.base_url}/v1/files/{f['id']}", headers={"Authorization": f"Bearer {other_key}"})
        assert r.status_code == 404
        # A purpose the bytes do not match is refused at completion (the server sniffs them).
        r = console.post("/console/api/uploads", json={"purpose": "audio", "filename": "f.mp3", "bytes": len(png),
                                                        "mime_type": "audio/mpeg"})
        up = r.json()
        assert httpx.put(up["upload_url"], content=png, headers=up["upload_headers"]).status_code in (200, 201, 204)
        r = console.post(f"/console/api/uploads/{up['id']}/complete")
        assert r.status_code == 400, r.text


def test_console_webhooks_are_the_organizations():
    # Loopback is allowed so an endpoint can be registered without any network; every other
    # private address is still refused.
    with serving(env={"REELGATE_FETCH_ALLOW": "127.0.0.1"}) as server:
        console_webhooks_are_the_organizations(server)


def console_webhooks_are_the_organizations(server):
    other_org = server.admin("org", "create", "--name", "Hooks elsewhere", "--credits", "1.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "hooks@example.test")
    with server.console() as console, server.console(other_user["id"], other_org["id"]) as other:
        r = console.post("/console/api/webhooks", json={"url": "http://127.0.0.1:9/hooks", "events": ["video.failed"]})
        assert r.status_code == 200, r.text
        endpoint = r.json()
        assert endpoint["secret"].startswith("whsec_") and endpoint["events"] == ["video.failed"]
        listed = console.get("/console/api/webhooks").json()
        assert [e["id"] for e in listed["data"]] == [endpoint["id"]] and "secret" not in listed["data"][0]
        # The API key of the same organization sees it; the other organization's console does not,
        # and cannot rotate or delete it.
        h = {"Authorization": f"Bearer {server.api_key}"}
        assert httpx.get(f"{server.base_url}/v1/webhooks/{endpoint['id']}", headers=h).status_code == 200
        assert other.get("/console/api/webhooks").json()["data"] == []
        r = other.post(f"/console/api/webhooks/{endpoint['id']}/rotate_secret")
        assert r.status_code == 404 and error_code(r) == "webhook_not_found"
        assert other.delete(f"/console/api/webhooks/{endpoint['id']}").status_code == 404
        # Private addresses are refused, naming the url.
        r = console.post("/console/api/webhooks", json={"url": "http://169.254.169.254/latest/meta-data"})
        assert r.status_code == 400 and r.json()["error"]["param"] == "url"
        rotated = console.post(f"/console/api/webhooks/{endpoint['id']}/rotate_secret").json()
        assert rotated["secret"].startswith("whsec_") and rotated["secret"] != endpoint["secret"]
        r = console.delete(f"/console/api/webhooks/{endpoint['id']}")
        assert r.status_code == 200 and r.json()["deleted"] is True
        assert console.get("/console/api/webhooks").json()["data"] == []


def test_a_person_sets_and_clears_their_own_keys_limits_and_budget(server):
    with server.console() as console:
        key = console.post("/console/api/keys").json()
        path = f"/console/api/keys/{key['id']}/limits"
        shown = console.get(path).json()
        # Nothing set: every limit is the plan's (starter: 600 requests, 2,000,000 tokens, 30 videos).
        assert shown["plan"] == "starter" and shown["currency"] == "usd"
        assert shown["requests_per_minute"] == {"effective": 600, "source": "plan", "key": None, "plan": 600}
        assert shown["tokens_per_minute"]["effective"] == 2000000
        assert shown["monthly_budget"] is None and shown["committed"] == "0"
        r = console.post(path, json={"requests_per_minute": 2, "tokens_per_minute": None,
                                     "video_creates_per_minute": 30, "monthly_budget": "12.50"})
        assert r.status_code == 200, r.text
        c = r.json()
        assert c["requests_per_minute"] == {"effective": 2, "source": "key", "key": 2, "plan": 600}
        assert c["tokens_per_minute"]["source"] == "plan"
        assert c["video_creates_per_minute"] == {"effective": 30, "source": "key", "key": 30, "plan": 30}
        assert c["monthly_budget"] == "12.50" and c["committed"] == "0"
        assert console.get(path).json() == c
        # The operator's view of the same key agrees: the console wrote the key record itself.
        admin = server.admin("key", "limits", "show", "--key-id", key["id"])
        assert admin["own"] == {"requests_per_minute": 2, "video_creates_per_minute": 30}
        assert server.admin("key", "budget", "--key-id", key["id"])["monthly_budget"] == "12.50"
        # Clearing: an empty body puts every limit back to the plan's and removes the budget.
        c = console.post(path, json={}).json()
        assert all(c[f]["source"] == "plan" and c[f]["key"] is None
                   for f in ["requests_per_minute", "tokens_per_minute", "video_creates_per_minute"])
        assert c["monthly_budget"] is None
        assert server.admin("key", "limits", "show", "--key-id", key["id"])["own"] == {}


def test_key_limits_refusals(server):
    other = server.admin("user", "create", "--org", server.org, "--email", "limits-other@example.test")
    other_key = server.admin("key", "create", "--user", other["id"])
    elsewhere = server.admin("org", "create", "--name", "Limits elsewhere", "--credits", "1.00")
    far_user = server.admin("user", "create", "--org", elsewhere["id"], "--email", "far@example.test")
    far_key = server.admin("key", "create", "--user", far_user["id"])
    with server.console() as console:
        key = console.post("/console/api/keys").json()
        path = f"/console/api/keys/{key['id']}/limits"
        # Another person's key, in this organization or another, does not exist to this person:
        # neither shown nor changed, and left as it was.
        for k in (other_key, far_key):
            r = console.get(f"/console/api/keys/{k['id']}/limits")
            assert r.status_code == 404 and error_code(r) == "api_key_not_found"
            r = console.post(f"/console/api/keys/{k['id']}/limits", json={"requests_per_minute": 1})
            assert r.status_code == 404 and error_code(r) == "api_key_not_found"
            assert server.admin("key", "limits", "show", "--key-id", k["id"])["own"] == {}
        r = console.get("/console/api/keys/not-a-key/limits")
        assert r.status_code == 404
        # Above the plan's per-key limit: refused, naming the field, nothing written.
        r = console.post(path, json={"requests_per_minute": 601, "monthly_budget": "5"})
        assert r.status_code == 400 and error_code(r) == "above_plan_limit"
        assert r.json()["error"]["param"] == "requests_per_minute"
        assert "600" in r.json()["error"]["message"]
        r = console.post(path, json={"video_creates_per_minute": 31})
        assert r.status_code == 400 and r.json()["error"]["param"] == "video_creates_per_minute"
        assert console.get(path).json()["monthly_budget"] is None
        # Malformed numbers, each named.
        for field, bad in [("requests_per_minute", 0), ("requests_per_minute", -5), ("tokens_per_minute", 1.5),
                           ("tokens_per_minute", "100"), ("video_creates_per_minute", True),
                           ("requests_per_minute", 10 ** 30), ("monthly_budget", 12.5),
                           ("monthly_budget", "-1"), ("monthly_budget", "ten"), ("monthly_budget", "0.1234567"),
                           ("burst", 3)]:
            r = console.post(path, json={field: bad})
            assert r.status_code == 400, (field, bad, r.text)
            assert r.json()["error"]["param"] == field, (field, bad)
        r = console.post(path, json=[1, 2])
        assert r.status_code == 400
        # No CSRF token (or a wrong one): refused before anything is read or written.
        r = console.post(path, json={"requests_per_minute": 1}, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post(path, json={"requests_per_minute": 1}, headers={"X-CSRF-Token": "wrong"}, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        assert console.get(path).json()["requests_per_minute"]["source"] == "plan"
        # A revoked key's limits are gone with it.
        assert console.delete(f"/console/api/keys/{key['id']}").status_code == 200
        assert console.post(path, json={"requests_per_minute": 1}).status_code == 404
    # An API key is not a console session.
    r = httpx.get(f"{server.base_url}{path}", headers={"Authorization": f"Bearer {server.api_key}"})
    assert r.status_code == 401


def test_console_remix_extend_and_edit_need_the_session_the_csrf_token_and_the_organizations_own_video(server):
    """`POST /console/api/videos/{id}/remix`: no session is 401, no CSRF token 403, an API key is
    not a session, and another organization's video is 404 (nothing reserved); the own completed
    video remixes."""
    import time

    headers = {"Authorization": f"Bearer {server.api_key}"}
    server.agree(server.user, server.org)
    made = httpx.post(f"{server.base_url}/v1/videos", headers=headers, timeout=30, json={
        "model": "reel-1", "prompt": "a harbour at noon", "seconds": 4, "aspect_ratio": "16:9"})
    assert made.status_code == 200, made.text
    source = made.json()["id"]
    deadline = time.time() + 120
    while httpx.get(f"{server.base_url}/v1/videos/{source}", headers=headers).json()["status"] != "completed":
        assert time.time() < deadline
        time.sleep(0.5)
    path = f"/console/api/videos/{source}/remix"
    r = httpx.post(f"{server.base_url}{path}", json={"prompt": "in snow"})
    assert r.status_code == 401 and error_code(r) == "console_login_required"
    r = httpx.post(f"{server.base_url}{path}", json={"prompt": "in snow"}, headers=headers)
    assert r.status_code == 401 and error_code(r) == "console_login_required"
    other_org = server.admin("org", "create", "--name", "Remix elsewhere", "--credits", "5.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "remix@example.test")
    server.agree(other_user["id"], other_org["id"])
    with server.console(other_user["id"], other_org["id"]) as other:
        r = other.post(path, json={"prompt": "in snow"})
        assert r.status_code == 404, r.text
        assert server.admin("org", "show", "--org", other_org["id"])["reserved"] in ("0", "0.00")
    with server.console() as console:
        r = console.post(path, json={"prompt": "in snow"}, csrf=False)
        assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
        r = console.post(path, json={"prompt": "in snow"})
        assert r.status_code == 200, r.text
        assert r.json()["remixed_from_video_id"] == source
        remixed = r.json()["id"]
    # Extend and edit behind the same walls; their source is the path's video, never one the
    # body names.
    for op, body in (("extend", {"prompt": "on into the night", "seconds": 4}), ("edit", {"prompt": "in snow"})):
        op_path = f"/console/api/videos/{source}/{op}"
        r = httpx.post(f"{server.base_url}{op_path}", json=body, headers=headers)
        assert r.status_code == 401 and error_code(r) == "console_login_required"
        with server.console(other_user["id"], other_org["id"]) as other:
            r = other.post(op_path, json=body)
            assert r.status_code == 404, r.text
        with server.console() as console:
            r = console.post(op_path, json=body, csrf=False)
            assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
            r = console.post(op_path, json={**body, "video": {"id": "video_elsewhere"}})
            assert r.status_code == 400 and "unknown field `video`" in r.json()["error"]["message"], r.text
    assert server.admin("org", "show", "--org", other_org["id"])["reserved"] in ("0", "0.00")
    with server.console() as console:
        r = console.post(f"/console/api/videos/{source}/extend", json={"prompt": "on into the night", "seconds": 4})
        assert r.status_code == 200, r.text
        assert r.json()["extended_from_video_id"] == source and r.json()["seconds"] == 8
        # The plan renders two at a time: the edit waits for the remix and the extension.
        for running in (remixed, r.json()["id"]):
            while httpx.get(f"{server.base_url}/v1/videos/{running}", headers=headers).json()["status"] not in (
                    "completed", "failed"):
                assert time.time() < deadline + 120
                time.sleep(0.5)
        r = console.post(f"/console/api/videos/{source}/edit", json={"prompt": "in snow"})
        assert r.status_code == 200, r.text
        assert r.json()["edited_from_video_id"] == source and r.json()["seconds"] == 4
        # The page's details: the prompt as rendered and the inputs.
        detail = console.get(f"/console/api/videos/{source}").json()
        assert detail["engine_prompt"] == "a harbour at noon" and detail["inputs"]["characters"] == []


def test_a_test_event_reaches_the_receiver_signed_and_the_answer_says_what_it_answered():
    """`POST /console/api/webhooks/{id}/test`: one `webhook.test` event, signed like every
    delivery, sent at once; the answer reports the receiver's status (or the error in plain
    words) and how long it took. Only the organization's own endpoint (another's is 404), the
    CSRF token is needed, a second test at once is 429 with Retry-After, and nothing is recorded
    on the endpoint."""
    import json
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "webhooks"))
    from receiver import Receiver, verify

    receiver = Receiver()
    try:
        with serving(env={"REELGATE_FETCH_ALLOW": "127.0.0.1"}) as server:
            other_org = server.admin("org", "create", "--name", "Tests elsewhere", "--credits", "1.00")
            other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "tests@example.test")
            with server.console() as console, server.console(other_user["id"], other_org["id"]) as other:
                made = console.post("/console/api/webhooks", json={"url": f"{receiver.url}/test/ok", "events": ["video.completed"]})
                assert made.status_code == 200, made.text
                endpoint = made.json()
                path = f"/console/api/webhooks/{endpoint['id']}/test"

                # No session, no CSRF token, another organization's console: nothing is sent.
                assert httpx.post(f"{server.base_url}{path}").status_code == 401
                r = console.post(path, csrf=False)
                assert r.status_code == 403 and error_code(r) == "csrf_token_invalid"
                r = other.post(path)
                assert r.status_code == 404 and error_code(r) == "webhook_not_found", r.text
                r = console.post("/console/api/webhooks/wh_00000000000000000000000000/test")
                assert r.status_code == 404 and error_code(r) == "webhook_not_found"
                assert receiver.received("/test/ok") == []

                r = console.post(path)
                assert r.status_code == 200, r.text
                sent = r.json()
                assert sent["object"] == "webhook_test_delivery" and sent["type"] == "webhook.test"
                assert sent["webhook_id"] == endpoint["id"] and sent["url"] == endpoint["url"]
                assert sent["delivered"] is True and sent["status_code"] == 204
                assert sent["error"] is None and sent["error_code"] is None and "hint" not in sent
                assert isinstance(sent["duration_ms"], int) and 0 <= sent["duration_ms"] < 10000
                assert sent["event_id"].startswith("evt_")
                # The receiver got it once, signed with the endpoint's secret (its own HMAC code).
                [(headers, body, status)] = receiver.received("/test/ok")
                assert status == 204 and verify(endpoint["secret"], headers, body)
                assert headers["webhook-id"] == sent["event_id"]
                assert headers["webhook-timestamp"] == str(sent["sent_at"])
                event = json.loads(body)
                assert event["type"] == "webhook.test" and set(event) == {"type", "timestamp", "data"}
                assert event["data"]["webhook_id"] == endpoint["id"]

                # A second test at once is refused, and sends nothing.
                r = console.post(path)
                assert r.status_code == 429 and error_code(r) == "webhook_test_too_soon", r.text
                wait = int(r.headers["retry-after"])
                assert 1 <= wait <= 5
                assert len(receiver.received("/test/ok")) == 1
                # After the wait it may be sent again.
                time.sleep(wait + 0.5)
                r = console.post(path)
                assert r.status_code == 200 and r.json()["delivered"] is True, r.text
                assert len(receiver.received("/test/ok")) == 2

                # A receiver that answers 500: not delivered, its status reported.
                down = console.post("/console/api/webhooks", json={"url": f"{receiver.url}/down/test"}).json()
                r = console.post(f"/console/api/webhooks/{down['id']}/test")
                assert r.status_code == 200, r.text
                assert r.json()["delivered"] is False and r.json()["status_code"] == 500
                # Nobody listening: no status, the error in plain words.
                closed = console.post("/console/api/webhooks", json={"url": "http://127.0.0.1:9/closed"}).json()
                r = console.post(f"/console/api/webhooks/{closed['id']}/test")
                assert r.status_code == 200, r.text
                failed = r.json()
                assert failed["delivered"] is False and failed["status_code"] is None
                assert failed["error_code"] == "unreachable" and "connection was refused" in failed["error"]

                # A test is not a delivery: the endpoints' records are untouched.
                for e in console.get("/console/api/webhooks").json()["data"]:
                    assert e["status"] == "enabled"
                    assert e["delivery"]["last_attempts"] == [] and e["delivery"]["consecutive_failures"] == 0
    finally:
        receiver.stop()


def test_a_refused_webhook_url_on_the_local_server_says_how_to_allow_a_local_receiver():
    """On the local server (no REELGATE_FETCH_ALLOW) a loopback endpoint is refused, and the
    refusal says which setting allows a receiver on this machine and that the server must be
    started again; a test event to an endpoint registered while it was allowed is refused too,
    with the same hint. The rule itself is unchanged."""
    hint = "REELGATE_FETCH_ALLOW=localhost,127.0.0.1"
    with tempfile.TemporaryDirectory() as data_dir:
        server = LocalServer(data_dir, env={"REELGATE_FETCH_ALLOW": "127.0.0.1"}).start()
        try:
            with server.console() as console:
                r = console.post("/console/api/webhooks", json={"url": "http://127.0.0.1:9/hooks"})
                assert r.status_code == 200, r.text
                endpoint = r.json()
            server.stop()
            server.extra_env = {}
            user, org = server.user, server.org
            server.start()
            server.user, server.org = user, org
            with server.console() as console:
                r = console.post("/console/api/webhooks", json={"url": "http://localhost:8000/hooks"})
                assert r.status_code == 400 and error_code(r) == "url_refused", r.text
                message = r.json()["error"]["message"]
                assert hint in message and "start it again" in message
                r = console.post(f"/console/api/webhooks/{endpoint['id']}/test")
                assert r.status_code == 200, r.text
                sent = r.json()
                assert sent["delivered"] is False and sent["status_code"] is None
                assert sent["error_code"] == "url_refused" and hint in sent["hint"]
        finally:
            server.stop()


def test_video_lists_filter_and_search_and_page_by_cursor_through_exactly_the_matches():
    """`GET /v1/videos` and the console's `GET /console/api/videos` take `status`, `model` and
    `q` (a case-insensitive, trimmed substring of the prompt as sent) with `after`/`limit`/
    `order`: following `last_id` while `has_more` yields exactly the organization's matching
    videos in order, every page full but the last and no empty page at the end. A bad `status`,
    an unknown `model` and a `q` over 200 characters are 400s naming the parameter. The jobs
    render on an engine that never finishes (and the blocked ones fail in moderation), so their
    statuses hold still while the test pages."""
    from harness import FakeHangingEngine

    engine = FakeHangingEngine()
    try:
        with serving(env={"REELGATE_REFERENCE_ENGINE_URL": engine.url}) as server:
            org = server.admin("org", "create", "--name", "Gallery", "--plan", "enterprise", "--credits", "100.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "gallery@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            server.agree(user["id"], org["id"])
            server.agree(server.user, server.org)
            h = {"Authorization": f"Bearer {key}"}

            def create(headers, prompt, model="reel-1"):
                body = {"model": model, "prompt": prompt, "seconds": 4, "aspect_ratio": "16:9"}
                r = httpx.post(f"{server.base_url}/v1/videos", json=body, headers=headers, timeout=30)
                assert r.status_code == 200, r.text
                return r.json()["id"]

            # Another organization's matching video never shows.
            theirs = create({"Authorization": f"Bearer {server.api_key}"}, "A paper lantern elsewhere")
            made = []
            for i in range(18):
                if i % 3 == 0:
                    prompt = f"A paper LANTERN and gore, take {i}"  # blocked: failed in moderation
                elif i % 2 == 0:
                    prompt = f"a paper lantern over the river, take {i}"
                else:
                    prompt = f"a quiet street at dawn, take {i}"
                made.append(create(h, prompt, "reel-1-pro" if i % 4 == 1 else "reel-1"))
            deadline = time.time() + 120
            for video_id in made:
                while True:
                    v = httpx.get(f"{server.base_url}/v1/videos/{video_id}", headers=h).json()
                    if v["status"] in ("failed", "in_progress"):
                        break
                    assert time.time() < deadline, v
                    time.sleep(0.3)
            everything = httpx.get(f"{server.base_url}/v1/videos", params={"limit": 100}, headers=h).json()
            assert everything["has_more"] is False
            assert [v["id"] for v in everything["data"]] == made[::-1], "newest first"
            assert theirs not in made

            def matching(status=None, model=None, q=None, order="desc"):
                found = [v["id"] for v in everything["data"]
                         if (status is None or v["status"] == status)
                         and (model is None or v["model"] == model)
                         and (q is None or q.strip().lower() in v["prompt"].lower())]
                return found[::-1] if order == "asc" else found

            def pages(get, params):
                got, after = [], None
                while True:
                    r = get({**params, **({"after": after} if after else {})})
                    assert r.status_code == 200, r.text
                    page = r.json()
                    got.append(page)
                    if not page["has_more"]:
                        return got
                    after = page["last_id"]
                    assert after and len(got) < 40

            api = lambda p: httpx.get(f"{server.base_url}/v1/videos", params=p, headers=h)  # noqa: E731
            cases = [
                {"status": "failed", "limit": 2},
                {"q": "  PAPER Lantern ", "limit": 5},
                {"q": "lantern", "status": "in_progress", "limit": 4, "order": "asc"},
                {"model": "reel-1-pro", "limit": 2},
                {"model": "reel-1", "status": "in_progress", "q": "street", "limit": 3},
                {"status": "completed", "limit": 3},
            ]
            with server.console(user["id"], org["id"]) as console:
                gallery = lambda p: console.get("/console/api/videos", params=p)  # noqa: E731
                for params in cases:
                    want = matching(params.get("status"), params.get("model"), params.get("q"),
                                    params.get("order", "desc"))
                    limit = params["limit"]
                    for name, get in (("api", api), ("console", gallery)):
                        got = pages(get, params)
                        ids = [v["id"] for page in got for v in page["data"]]
                        assert ids == want, (name, params)
                        assert len(got) == max(1, -(-len(want) // limit)), (name, params)
                        for page in got[:-1]:
                            assert len(page["data"]) == limit and page["has_more"] is True, (name, params)
                            assert page["last_id"] == page["data"][-1]["id"]
                        assert got[-1]["has_more"] is False
                assert len(matching(status="failed")) == 6 and len(matching(q="lantern")) == 12

                for get in (api, gallery):
                    for params, param in (({"status": "cancelled"}, "status"), ({"status": "Done"}, "status"),
                                          ({"model": "reel-9"}, "model"), ({"q": "x" * 201}, "q"),
                                          ({"status": "failed", "limit": "0"}, "limit")):
                        r = get(params)
                        assert r.status_code == 400, (params, r.text)
                        err = r.json()["error"]
                        assert err["param"] == param and err["code"] == "invalid_request_error", err
                    # Empty values filter nothing; 200 characters of search are allowed.
                    r = get({"status": "", "model": "", "q": "   ", "limit": 100})
                    assert [v["id"] for v in r.json()["data"]] == made[::-1]
                    assert get({"q": "ä" * 200}).json()["data"] == []
    finally:
        engine.stop()
