"""Console sign-in through OpenID Connect, end to end: the real `reelgate serve` configured with
a FakeOidcIssuer (tests/console/fake_oidc_issuer.py, a real HTTP issuer signing real RS256 ID
tokens) as its issuer. The browser's part is played over HTTP, following each redirect by hand
with one cookie jar: start → the issuer's authorization endpoint → the callback."""

import os
import sqlite3
import time
import uuid
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from fake_oidc_issuer import FakeOidcIssuer
from harness import serving

CLIENT_ID = "reelgate-console"


@pytest.fixture(scope="module")
def issuer():
    fake = FakeOidcIssuer(client_id=CLIENT_ID, client_secret="fake-client-secret")
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def sso(issuer):
    env = {
        "REELGATE_OIDC_ISSUER": issuer.issuer,
        "REELGATE_OIDC_CLIENT_ID": CLIENT_ID,
        "REELGATE_OIDC_CLIENT_SECRET": "fake-client-secret",
        "REELGATE_OIDC_NAME": "Fake IdP",
    }
    with serving(env=env) as srv:
        yield srv


def new_person(server, org=None, email=None):
    """A person (with a fresh email unless given) in `org` (a new organization unless given)."""
    if org is None:
        org = server.admin("org", "create", "--name", f"Org {uuid.uuid4().hex[:6]}")["id"]
    email = email or f"{uuid.uuid4().hex[:10]}@example.test"
    user = server.admin("user", "create", "--org", org, "--email", email)
    return user["id"], org, email


class Browser:
    """One browser: a cookie jar, following redirects by hand so each hop can be inspected."""

    def __init__(self, server):
        self.server = server
        self.http = httpx.Client(base_url=server.base_url, timeout=30)

    def start(self) -> str:
        """Opens the sign-in button's link; answers the issuer's callback URL."""
        r = self.http.get("/console/oidc/start", follow_redirects=False)
        assert r.status_code == 303, r.text
        authorize = r.headers["location"]
        at_issuer = httpx.get(authorize, follow_redirects=False)
        assert at_issuer.status_code == 302, at_issuer.text
        return at_issuer.headers["location"]

    def callback(self, url: str) -> httpx.Response:
        return self.http.get(url, follow_redirects=False)

    def sign_in(self) -> httpx.Response:
        return self.callback(self.start())

    def session(self) -> httpx.Response:
        return self.http.get("/console/api/session")

    def close(self):
        self.http.close()


@pytest.fixture
def browser(sso):
    b = Browser(sso)
    yield b
    b.close()


def session_cookie(r: httpx.Response):
    return next((c for c in r.headers.get_list("set-cookie") if c.startswith("reelgate_console=")), None)


def refused(r: httpx.Response, status: int, words: str):
    assert r.status_code == status, r.text
    assert words in r.text, r.text
    assert session_cookie(r) is None
    assert r.headers["content-type"].startswith("text/html")


def test_the_sign_in_button_appears_only_when_an_issuer_is_configured(sso, server):
    page = httpx.get(f"{sso.base_url}/console/").text
    assert 'id="oidc-signin"' in page and 'href="/console/oidc/start"' in page
    assert "Sign in with Fake IdP" in page
    plain = httpx.get(f"{server.base_url}/console/").text
    assert "oidc-signin" not in plain
    r = httpx.get(f"{server.base_url}/console/oidc/start", follow_redirects=False)
    assert r.status_code == 404 and "not configured" in r.text


def test_sign_in_by_verified_email_then_by_subject(sso, issuer, browser):
    user, org, email = new_person(sso)
    sub = f"sub-{uuid.uuid4().hex[:8]}"
    issuer.reset({"sub": sub, "email": email.upper(), "email_verified": True})
    r = browser.sign_in()
    assert r.status_code == 303, r.text
    assert r.headers["location"] == "/console/"
    cookie = session_cookie(r)
    parts = [p.strip() for p in cookie.split(";")]
    assert "HttpOnly" in parts and "SameSite=Lax" in parts and "Path=/console" in parts
    me = browser.session().json()
    assert me["user"]["id"] == user and me["organization"]["id"] == org

    # The authorization request: PKCE S256, a nonce, a state, our callback; the token request
    # authenticated the client (the fake refuses a wrong verifier or secret).
    ask = issuer.authorize_requests[-1]
    assert ask["code_challenge_method"] == "S256" and len(ask["code_challenge"]) == 43
    assert ask["nonce"] and ask["state"] and ask["scope"].split() == ["openid", "email"]
    assert ask["redirect_uri"] == f"{sso.base_url}/console/oidc/callback"
    assert issuer.token_requests[-1]["form"]["code_verifier"]
    assert issuer.token_requests[-1]["authorization"].startswith("Basic ")

    # The flow cookie is bound to this browser and cleared after use.
    assert any(c.startswith("reelgate_oidc=;") for c in r.headers.get_list("set-cookie"))

    # Later: the address at the issuer changed and is unverified; the subject still finds them.
    again = Browser(sso)
    issuer.reset({"sub": sub, "email": "changed@example.test", "email_verified": False})
    r = again.sign_in()
    assert r.status_code == 303, r.text
    assert again.session().json()["user"]["id"] == user
    again.close()

    # The console session works as a console session (CSRF and all) and never as an API key.
    csrf = me["csrf_token"]
    assert browser.http.post("/console/api/terms/agree", headers={"X-CSRF-Token": csrf}).status_code == 200
    secret = cookie.split(";")[0].split("=", 1)[1]
    v1 = httpx.get(f"{sso.base_url}/v1/models", headers={"Authorization": f"Bearer {secret}"})
    assert v1.status_code == 401


@pytest.mark.parametrize(
    "misbehave, words",
    [
        (lambda i: setattr(i, "sign_with_forger", True), "signature does not verify"),
        (lambda i: i.overrides.update(exp=int(time.time()) - 600, iat=int(time.time()) - 900), "has expired"),
        (lambda i: i.overrides.update(aud="another-client"), "issued for another client"),
        (lambda i: i.overrides.update(nonce="not-the-nonce-we-sent"), "nonce is not the one"),
        (lambda i: i.overrides.update(iss="https://evil.example.test"), "issued by another issuer"),
        (lambda i: i.overrides.update(nonce=None), "nonce is not the one"),
    ],
    ids=["forged-signature", "expired", "wrong-audience", "wrong-nonce", "wrong-issuer", "no-nonce"],
)
def test_tokens_that_do_not_verify_are_refused(sso, issuer, browser, misbehave, words):
    _, _, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    misbehave(issuer)
    r = browser.sign_in()
    refused(r, 401, words)
    assert "oidc_sign_in_refused" in r.text
    assert browser.session().status_code == 401


def test_an_unverified_email_does_not_find_the_person(sso, issuer, browser):
    _, _, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": False})
    r = browser.sign_in()
    refused(r, 403, "no organization on this service has you as a member")


def test_someone_in_no_organization_gets_a_clear_page(sso, issuer, browser):
    issuer.reset({"sub": "sub-stranger", "email": "stranger@example.test", "email_verified": True})
    r = browser.sign_in()
    refused(r, 403, "no organization on this service has you as a member")
    assert "stranger@example.test" in r.text and "Fake IdP" in r.text
    assert "oidc_no_organization" in r.text


def test_a_replayed_callback_is_refused(sso, issuer, browser):
    _, _, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    callback = browser.start()
    assert browser.callback(callback).status_code == 303
    # Same browser, same callback again (its flow cookie was cleared; send it back by hand).
    again = browser.callback(callback)
    refused(again, 401, "did not start this sign-in")


def test_a_replayed_flow_with_its_cookie_is_refused(sso, issuer):
    _, _, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    b = Browser(sso)
    callback = b.start()
    flow_cookie = b.http.cookies.get("reelgate_oidc", path="/console/oidc")
    assert flow_cookie
    assert b.callback(callback).status_code == 303
    replay = httpx.get(f"{sso.base_url}{urlparse(callback).path}?{urlparse(callback).query}",
                       headers={"Cookie": f"reelgate_oidc={flow_cookie}"}, follow_redirects=False)
    refused(replay, 401, "already used")
    b.close()


def test_state_must_come_back_to_the_browser_that_started(sso, issuer, browser):
    _, _, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    callback = browser.start()
    # Another browser (no flow cookie) opens the victim's callback: refused.
    stranger = httpx.get(callback, follow_redirects=False)
    refused(stranger, 401, "did not start this sign-in")
    # This browser, but the state altered or absent: refused.
    url = urlparse(callback)
    q = parse_qs(url.query)
    altered = f"{url.scheme}://{url.netloc}{url.path}?code={q['code'][0]}&state=forged-state"
    refused(browser.callback(altered), 401, "state is not this sign-in")
    url = urlparse(browser.start())
    q = parse_qs(url.query)
    refused(browser.callback(f"{url.scheme}://{url.netloc}{url.path}?code={q['code'][0]}"), 401,
            "state is not this sign-in")


def test_a_person_in_several_organizations_chooses_one(sso, issuer, browser):
    email = f"{uuid.uuid4().hex[:10]}@example.test"
    user_a, org_a, _ = new_person(sso, email=email)
    user_b, org_b, _ = new_person(sso, email=email)
    _, stranger_org, _ = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    r = browser.sign_in()
    assert r.status_code == 200, r.text
    assert "Choose an organization" in r.text and session_cookie(r) is None
    assert org_a in r.text and org_b in r.text
    token = r.text.split('name="token" value="')[1].split('"')[0]
    # An organization the person is not in, a wrong form token, no flow cookie: refused.
    refused(browser.http.post("/console/oidc/choose", data={"token": token, "org": stranger_org}), 401, "not a member")
    refused(browser.http.post("/console/oidc/choose", data={"token": "x" * len(token), "org": org_b}), 401, "not part of a sign-in")
    refused(httpx.post(f"{sso.base_url}/console/oidc/choose", data={"token": token, "org": org_b}), 401, "did not start")
    chosen = browser.http.post("/console/oidc/choose", data={"token": token, "org": org_b}, follow_redirects=False)
    assert chosen.status_code == 303 and session_cookie(chosen)
    me = browser.session().json()
    assert me["user"]["id"] == user_b and me["organization"]["id"] == org_b
    # The choice is spent.
    again = browser.http.post("/console/oidc/choose", data={"token": token, "org": org_a})
    assert again.status_code == 401 and session_cookie(again) is None


def test_a_removed_member_is_no_longer_found(sso, issuer, browser):
    user, org, email = new_person(sso)
    sub = f"sub-{uuid.uuid4().hex[:8]}"
    issuer.reset({"sub": sub, "email": email, "email_verified": True})
    assert browser.sign_in().status_code == 303
    sso.admin("user", "remove", "--org", org, "--user", user)
    fresh = Browser(sso)
    refused(fresh.sign_in(), 403, "no organization")
    fresh.close()


def test_a_rotated_signing_key_is_fetched_again(sso, issuer, browser):
    user, org, email = new_person(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    assert browser.sign_in().status_code == 303
    fetches = issuer.jwks_fetches
    issuer.rotate_key()
    time.sleep(5.5)  # the service asks for keys again at most every 5 s
    fresh = Browser(sso)
    r = fresh.sign_in()
    assert r.status_code == 303, r.text
    assert issuer.jwks_fetches == fetches + 1
    assert fresh.session().json()["user"]["id"] == user
    fresh.close()


def test_an_issuer_error_is_refused(sso, issuer, browser):
    callback = browser.start()
    url = urlparse(callback)
    state = parse_qs(url.query)["state"][0]
    r = browser.callback(f"{url.scheme}://{url.netloc}{url.path}?error=access_denied&state={state}")
    refused(r, 401, "did not sign you in")


def forget_email_index(server, email):
    """Puts a person back in the state of people created before the email index existed: no
    `EMAIL#…` entry and no back-reference to it (written straight into the embedded store)."""
    pk = f"EMAIL#{email.strip().lower()}"
    db = sqlite3.connect(os.path.join(server.data_dir, "reelgate.sqlite3"), timeout=10)
    try:
        with db:
            gone = db.execute("DELETE FROM items WHERE pk = ?", (pk,)).rowcount
            gone += db.execute("DELETE FROM items WHERE sk = ?", (f"IDENTITY#{pk}",)).rowcount
    finally:
        db.close()
    assert gone == 2, gone


def test_a_person_without_the_email_index_signs_in_by_email_after_the_backfill(sso, issuer, browser):
    user, org, email = new_person(sso)
    indexed, _, indexed_email = new_person(sso, org=org)
    forget_email_index(sso, email)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    refused(browser.sign_in(), 403, "no organization on this service has you as a member")

    report = sso.admin("user", "backfill-email", "--org", org)
    assert report == {"org": org, "members": 2, "written": 1, "present": 1, "without_email": 0}
    r = browser.sign_in()
    assert r.status_code == 303, r.text
    assert browser.session().json()["user"]["id"] == user
    # Idempotent: a second run writes nothing, and both people still sign in.
    assert sso.admin("user", "backfill-email", "--org", org)["written"] == 0
    other = Browser(sso)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": indexed_email, "email_verified": True})
    r = other.sign_in()
    assert r.status_code == 303, r.text
    assert other.session().json()["user"]["id"] == indexed
    other.close()
    # Removing the person afterwards removes the backfilled entry too (through its back-reference).
    sso.admin("user", "remove", "--org", org, "--user", user)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    again = Browser(sso)
    refused(again.sign_in(), 403, "no organization on this service has you as a member")
    again.close()
