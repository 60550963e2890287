"""OpenID Connect sign-in in a real headless Chromium (Debian's, through Playwright) against
`reelgate serve` configured with the FakeOidcIssuer: the sign-in page's button, the round trip
through the issuer, and the organization choice for a person in two organizations."""

import os
import re
import tempfile
import uuid

import pytest
from playwright.sync_api import expect, sync_playwright

from fake_oidc_issuer import FakeOidcIssuer
from harness import serving

HERE = os.path.dirname(__file__)
# Screenshots go to a temporary folder (committed only on request; CONSOLE_SCREENSHOTS names another).
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS") or tempfile.mkdtemp(prefix="reelgate-console-shots-")
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def issuer():
    fake = FakeOidcIssuer(client_id="reelgate-console")
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def site(issuer):
    env = {"REELGATE_OIDC_ISSUER": issuer.issuer, "REELGATE_OIDC_CLIENT_ID": "reelgate-console",
           "REELGATE_OIDC_NAME": "Fake IdP"}
    with serving(env=env) as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is missing (scripts/test-tools.sh installs it)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def new_page(browser, locale="en-US"):
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20000)
    return context, page


def test_sign_in_with_the_issuer_button(site, issuer, browser):
    email = f"{uuid.uuid4().hex[:8]}@example.test"
    user = site.admin("user", "create", "--org", site.org, "--email", email)["id"]
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    context, page = new_page(browser)
    page.goto(f"{site.base_url}/console/")
    button = page.get_by_role("link", name="Sign in with Fake IdP")
    expect(button).to_be_visible()
    expect(page.locator("#page-signin")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, "signin-oidc.png"), full_page=True)
    button.focus()
    page.keyboard.press("Enter")  # by keyboard: the button is a focusable link
    expect(page.locator("#nav")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/console/#(new|terms)$"))
    expect(page.locator("#who")).to_contain_text(email)
    session = page.evaluate("fetch('/console/api/session').then(r => r.json())")
    assert session["user"]["id"] == user
    context.close()


def test_the_button_speaks_japanese(site, browser):
    context, page = new_page(browser, locale="ja-JP")
    page.goto(f"{site.base_url}/console/")
    expect(page.locator("#oidc-signin")).to_have_text("Fake IdP でサインイン")
    context.close()


def test_a_person_in_two_organizations_chooses_one(site, issuer, browser):
    email = f"{uuid.uuid4().hex[:8]}@example.test"
    other = site.admin("org", "create", "--name", "Second Studio")["id"]
    site.admin("user", "create", "--org", site.org, "--email", email)
    site.admin("user", "create", "--org", other, "--email", email)
    issuer.reset({"sub": f"sub-{uuid.uuid4().hex[:8]}", "email": email, "email_verified": True})
    context, page = new_page(browser)
    page.goto(f"{site.base_url}/console/")
    page.get_by_role("link", name="Sign in with Fake IdP").click()
    expect(page.get_by_role("heading", name="Choose an organization")).to_be_visible()
    page.screenshot(path=os.path.join(SHOTS, "choose-organization.png"), full_page=True)
    page.get_by_role("button", name=re.compile("Second Studio")).click()
    expect(page.locator("#nav")).to_be_visible()
    expect(page.locator("#who")).to_contain_text("Second Studio")
    context.close()
