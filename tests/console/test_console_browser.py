"""The console in a real headless Chromium (Debian's package, driven by Playwright) against the
real `reelgate serve`: sign in by link, agree, create a 4-second video, watch it complete, play
it, delete it; chat with streaming against tests/python/fake_upstream.py (a fake upstream);
create and revoke a key; sign out. Also the Japanese UI, 375 px without horizontal scrolling,
and the agree and create flows by keyboard alone. Screenshots go to docs/console/."""

import os
import re
import time

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from harness import FakeHangingEngine, FakeUpstream, serving

HERE = os.path.dirname(__file__)
SHOTS = os.path.join(HERE, "..", "..", "docs", "console")
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PAGES = ["terms", "new", "videos", "chat", "keys", "usage"]


@pytest.fixture(scope="module")
def site():
    """`reelgate serve` with the fake chat upstream (streams its reply in chunks 50 ms apart)."""
    fake = FakeUpstream(gap_ms=50)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text"}
        with serving(env=env) as server:
            yield server
    finally:
        fake.stop()


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


def new_page(browser, locale="en-US", width=1280, height=900):
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
    page = context.new_page()
    page.on("dialog", lambda d: d.accept())
    page.set_default_timeout(20000)
    return context, page


def shot(page, name):
    os.makedirs(SHOTS, exist_ok=True)
    page.screenshot(path=os.path.join(SHOTS, name), full_page=True)


def person(site, email):
    user = site.admin("user", "create", "--org", site.org, "--email", email)
    return user["id"]


def sign_in(page, site, user=None):
    page.goto(site.console_link(user or site.user, site.org))
    expect(page.locator("#nav")).to_be_visible()
    # Signed in and landed (on the terms or the new-video page), as a person sees it.
    expect(page).to_have_url(re.compile(r"#(new|terms)$"))


def test_sign_in_agree_create_watch_play_delete(site, browser):
    context, page = new_page(browser)
    page.goto(f"{site.base_url}/console/")
    expect(page.locator("#page-signin")).to_be_visible()
    shot(page, "sign-in.png")
    sign_in(page, site)
    # Not yet agreed: the console opens on the terms.
    expect(page.locator("#page-terms")).to_be_visible()
    expect(page.locator("#terms-text")).to_contain_text("You may use the video service")
    expect(page.locator("#terms-state")).to_have_text("You have not agreed to this version yet.")
    shot(page, "terms.png")
    page.click("#agree")
    expect(page.locator("#terms-state")).to_have_text("You agreed to this version.")

    page.click("nav a[href='#new']")
    page.select_option("#f-model", "reel-1")
    page.fill("#f-seconds", "4")
    page.select_option("#f-aspect", "16:9")
    page.fill("#f-prompt", "A paper boat drifting on a calm lake at dawn")
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    expect(page.locator("#quote-available")).to_have_text("25.00 USD")
    # An error is shown next to the field it concerns.
    page.fill("#f-seconds", "20")
    expect(page.locator("#err-seconds")).to_contain_text("seconds must be an integer from 4 to 15")
    page.fill("#f-seconds", "4")
    expect(page.locator("#err-seconds")).to_be_empty()
    shot(page, "new-video.png")
    page.click("#create")

    expect(page.locator("#page-videos")).to_be_visible()
    card = page.locator("#video-list li.card").first
    expect(card.locator(".badge")).to_have_text("completed", timeout=120000)
    card.get_by_role("button", name="Play").click()
    video = card.locator("video")
    page.wait_for_function(
        "v => v.readyState >= 2 && Math.abs(v.duration - 4) < 0.25", arg=video.element_handle(), timeout=30000
    )
    # Seeking works (the signed URL serves ranges).
    video.evaluate("v => { v.currentTime = 3; }")
    page.wait_for_function("v => !v.seeking && v.currentTime >= 2.9", arg=video.element_handle())
    expect(card.locator("img.thumb")).to_be_visible()
    download = card.get_by_role("link", name="Download")
    assert download.get_attribute("download", timeout=5000).endswith(".mp4")
    r = httpx.get(download.get_attribute("href"), headers={"Range": "bytes=0-15"})
    assert r.status_code == 206 and r.content[4:8] == b"ftyp"
    shot(page, "videos.png")
    video_id = card.get_attribute("id").removeprefix("video-")
    card.get_by_role("button", name=f"Delete {video_id}").click()
    expect(page.locator(f"#video-{video_id}")).to_have_count(0)
    r = httpx.get(f"{site.base_url}/v1/videos/{video_id}", headers={"Authorization": f"Bearer {site.api_key}"})
    assert r.status_code == 404

    page.click("nav a[href='#usage']")
    expect(page.locator("#u-balance")).to_have_text("24.60 USD")
    expect(page.locator("#u-charges")).to_contain_text("video render completed")
    shot(page, "usage.png")
    context.close()


def test_cancel_a_video_that_is_rendering(browser):
    """A job on a fake engine that never finishes (named so): the Videos page offers Cancel
    while it renders; cancelling shows it canceled, offers Delete, charges nothing, and the
    render is canceled at the engine."""
    engine = FakeHangingEngine()
    try:
        with serving(env={"REELGATE_REFERENCE_ENGINE_URL": engine.url}) as srv:
            srv.agree(srv.user, srv.org)
            body = {"model": "reel-1", "prompt": "A slow pan over a harbour", "seconds": 4, "aspect_ratio": "16:9"}
            r = httpx.post(f"{srv.base_url}/v1/videos", json=body, headers={"Authorization": f"Bearer {srv.api_key}"})
            assert r.status_code == 200, r.text
            video_id = r.json()["id"]
            context, page = new_page(browser)
            sign_in(page, srv)
            page.click("nav a[href='#videos']")
            card = page.locator(f"#video-{video_id}")
            expect(card.locator(".badge")).to_have_text("in progress", timeout=60000)
            expect(card.get_by_role("button", name=f"Delete {video_id}")).to_have_count(0)
            shot(page, "videos-rendering.png")
            card.get_by_role("button", name=f"Cancel {video_id}").click()
            card = page.locator(f"#video-{video_id}")
            expect(card.locator(".badge")).to_have_text("canceled")
            expect(card.get_by_role("button", name=f"Cancel {video_id}")).to_have_count(0)
            expect(card.get_by_role("button", name=f"Delete {video_id}")).to_be_visible()
            expect(page.locator("#flash")).to_contain_text("You were not charged")
            shot(page, "videos-canceled.png")
            r = httpx.get(f"{srv.base_url}/v1/videos/{video_id}", headers={"Authorization": f"Bearer {srv.api_key}"})
            assert r.json()["status"] == "canceled"
            org = srv.admin("org", "show", "--org", srv.org)
            assert org["reserved"] == "0.00" and org["balance"] == "25.00", org
            # Canceled at the engine (by the cancel, and maybe again by the worker's next poll:
            # the protocol's cancel is idempotent).
            assert len(set(engine.canceled)) == 1, engine.canceled
            context.close()
    finally:
        engine.stop()


def test_chat_streams_its_reply(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#chat")
    page.select_option("#c-model", "fake-model-v1")
    page.fill("#c-message", "hi")
    # Record the reply's length as it grows: a streamed reply shows several partial states.
    page.evaluate("""() => {
        window.__lengths = [];
        const out = document.getElementById('c-output');
        new MutationObserver(() => window.__lengths.push(out.textContent.length))
            .observe(out, {childList: true, characterData: true, subtree: true});
    }""")
    page.click("#c-send")
    expect(page.locator("#c-output")).to_have_text("Hello from the fake upstream.")
    lengths = page.evaluate("window.__lengths")
    partial = {n for n in lengths if 0 < n < len("Hello from the fake upstream.")}
    assert len(partial) >= 2, lengths
    shot(page, "chat.png")
    context.close()


def test_create_and_revoke_a_key(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#keys")
    page.click("#key-create")
    expect(page.locator("#key-secret-value")).to_have_value(re.compile(r"^rgk_"))
    secret = page.locator("#key-secret-value").input_value()
    assert secret.startswith("rgk_")
    h = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(f"{site.base_url}/v1/videos/models", headers=h).status_code == 200
    key_id = "key_" + secret[4:30]
    expect(page.get_by_role("button", name=f"Revoke {key_id}")).to_be_visible()
    shot(page, "keys.png")
    page.get_by_role("button", name=f"Revoke {key_id}").click()
    expect(page.get_by_role("button", name=f"Revoke {key_id}")).to_have_count(0)
    assert httpx.get(f"{site.base_url}/v1/videos/models", headers=h).status_code == 401
    context.close()


def test_cookie_csrf_and_sign_out(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    cookies = {c["name"]: c for c in context.cookies()}
    session = cookies["reelgate_console"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Lax"
    assert session["path"] == "/console"
    assert session["expires"] > time.time()
    # Page script cannot read it.
    assert "reelgate_console" not in page.evaluate("document.cookie")
    # A state-changing request without the CSRF token is refused, even with the cookie.
    status = page.evaluate("fetch('/console/api/keys', {method: 'POST'}).then(r => r.status)")
    assert status == 403
    # The session cookie is not an API key.
    r = httpx.get(f"{site.base_url}/v1/videos", headers={"Authorization": f"Bearer {session['value']}"})
    assert r.status_code == 401
    page.click("#signout")
    expect(page.locator("#page-signin")).to_be_visible()
    expect(page.locator("#flash")).to_have_text("You are signed out.")
    status = page.evaluate("fetch('/console/api/session').then(r => r.status)")
    assert status == 401
    # The revoked session, replayed from outside the browser, is refused too.
    r = httpx.get(f"{site.base_url}/console/api/session", cookies={"reelgate_console": session["value"]})
    assert r.status_code == 401
    context.close()


def test_japanese_ui(site, browser):
    context, page = new_page(browser, locale="ja-JP")
    sign_in(page, site, person(site, "ja@example.test"))
    expect(page.locator("html")).to_have_attribute("lang", "ja")
    expect(page.locator("nav a[href='#terms']")).to_have_text("規約")
    expect(page.locator("#terms-text")).to_contain_text("動画サービスは")
    expect(page.locator("#agree")).to_have_text("同意する")
    shot(page, "terms-ja.png")
    page.click("#lang")
    expect(page.locator("nav a[href='#terms']")).to_have_text("Terms")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    context.close()


def test_every_page_fits_375_px(site, browser):
    context, page = new_page(browser, width=375, height=800)
    page.goto(f"{site.base_url}/console/")
    expect(page.locator("#page-signin")).to_be_visible()
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    assert page.evaluate(overflow) <= 0, "sign-in page"
    sign_in(page, site)
    for name in PAGES:
        page.goto(f"{site.base_url}/console/#{name}")
        expect(page.locator(f"#page-{name}")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert page.evaluate(overflow) <= 0, name
        shot(page, f"{name}-375.png")
    context.close()


def tab_to(page, selector, limit=60):
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_agree_and_create_by_keyboard_alone(site, browser):
    context, page = new_page(browser)
    sign_in(page, site, person(site, "keys-only@example.test"))
    expect(page.locator("#page-terms")).to_be_visible()
    tab_to(page, "#agree")
    page.keyboard.press("Enter")
    expect(page.locator("#terms-state")).to_have_text("You agreed to this version.")
    tab_to(page, "nav a[href='#new']")
    page.keyboard.press("Enter")
    expect(page.locator("#page-new")).to_be_visible()
    tab_to(page, "#f-model")
    tab_to(page, "#f-seconds")
    page.keyboard.press("Control+A")
    page.keyboard.type("5")
    tab_to(page, "#f-prompt")
    page.keyboard.type("A lighthouse at dusk, waves rolling in")
    expect(page.locator("#quote-amount")).to_have_text("0.50 USD")
    tab_to(page, "#create")
    page.keyboard.press("Enter")
    expect(page.locator("#page-videos")).to_be_visible()
    expect(page.locator("#video-list li.card").first.locator(".prompt")).to_have_text(
        "A lighthouse at dusk, waves rolling in"
    )
    context.close()
