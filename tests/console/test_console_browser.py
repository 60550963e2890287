"""The console in a real headless Chromium (Debian's package, driven by Playwright) against the
real `reelgate serve`: sign in by link, agree, create a 4-second video, watch it complete, play
it, delete it; chat with streaming against tests/python/fake_upstream.py (a fake upstream);
create and revoke a key; sign out. Also the Japanese UI, 375 px without horizontal scrolling,
and the agree and create flows by keyboard alone. Screenshots go to docs/console/."""

import base64
import os
import re
import struct
import subprocess
import sys
import time
import zlib

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from harness import FakeHangingEngine, FakeUpstream, serving

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "webhooks"))
from receiver import Receiver, verify  # noqa: E402

HERE = os.path.dirname(__file__)
SHOTS = os.path.join(HERE, "..", "..", "docs", "console")
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PAGES = ["terms", "new", "videos", "chat", "keys", "webhooks", "usage"]


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
    # A text-only model: no image attachment is offered.
    expect(page.locator("#c-image-field")).to_be_hidden()
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
    page.get_by_role("button", name=f"Revoke {key_id}").click()
    expect(page.get_by_role("button", name=f"Revoke {key_id}")).to_have_count(0)
    assert httpx.get(f"{site.base_url}/v1/videos/models", headers=h).status_code == 401
    context.close()


def test_a_key_limited_to_2_requests_per_minute_refuses_the_third_chat(site, browser):
    context, page = new_page(browser)
    sign_in(page, site, person(site, "limits@example.test"))
    page.goto(f"{site.base_url}/console/#keys")
    page.click("#key-create")
    expect(page.locator("#key-secret-value")).to_have_value(re.compile(r"^rgk_"))
    secret = page.locator("#key-secret-value").input_value()
    key_id = "key_" + secret[4:30]
    box = page.locator(f"#lim-{key_id}")
    # Before: the plan's limits, said to be the plan's.
    expect(box.locator("dd[data-limit=requests_per_minute]")).to_have_text("600 · plan's limit")
    expect(box.locator("dd[data-limit=monthly_budget]")).to_have_text("no budget")
    box.get_by_text("Change limits").click()
    # Above the plan: refused next to the field.
    page.fill(f"#lim-{key_id}-requests_per_minute", "601")
    page.get_by_role("button", name=f"Save limits {key_id}").click()
    expect(page.locator(f"#err-lim-{key_id}-requests_per_minute")).to_contain_text("per-key limit of 600")
    expect(page.locator(f"#lim-{key_id}-requests_per_minute")).to_have_attribute("aria-invalid", "true")
    page.fill(f"#lim-{key_id}-requests_per_minute", "2")
    page.fill(f"#lim-{key_id}-monthly_budget", "5.00")
    page.get_by_role("button", name=f"Save limits {key_id}").click()
    expect(page.locator("#flash")).to_have_text("Limits saved.")
    expect(box.locator("dd[data-limit=requests_per_minute]")).to_have_text("2 · set on this key (plan's limit: 600)")
    expect(box.locator("dd[data-limit=monthly_budget]")).to_have_text("5.00 USD · committed this month: 0 USD")
    shot(page, "keys.png")
    # The limit holds on /v1: two chats pass, the third in the same minute is refused.
    h = {"Authorization": f"Bearer {secret}"}
    body = {"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=site.base_url, headers=h, timeout=30) as client:
        answers = [client.post("/v1/chat/completions", json=body) for _ in range(3)]
    assert [a.status_code for a in answers[:2]] == [200, 200], [a.text for a in answers]
    third = answers[2]
    for _ in range(2):
        if third.status_code == 429:
            break
        # The three straddled a minute boundary (the window is a fixed minute): at most two more
        # requests fill the new minute's window.
        third = httpx.post(f"{site.base_url}/v1/chat/completions", json=body, headers=h, timeout=30)
    assert third.status_code == 429, third.text
    assert third.json()["error"]["code"] == "rate_limit_exceeded"
    assert third.headers["x-ratelimit-limit-requests"] == "2"
    assert int(third.headers["retry-after"]) >= 1
    # The same page in Japanese, and at 375 px without horizontal scrolling.
    page.click("#lang")
    expect(box.locator("dd[data-limit=requests_per_minute]")).to_have_text(re.compile(r"^2 · このキーに設定"))
    expect(box.locator("dd[data-limit=monthly_budget]")).to_contain_text("今月の使用額")
    page.click("#lang")
    expect(box.locator("dd[data-limit=requests_per_minute]")).to_contain_text("set on this key")
    context.close()
    context, page = new_page(browser, width=375, height=800)
    sign_in(page, site, person(site, "limits-375@example.test"))
    page.goto(f"{site.base_url}/console/#keys")
    page.click("#key-create")
    expect(page.locator("#key-list dl.limit-list")).to_have_count(1)
    page.locator("#key-list summary").first.click()
    expect(page.locator("#key-list form").first).to_be_visible()
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    assert page.evaluate(overflow) <= 0
    shot(page, "keys-limits-375.png")
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
    # The new pages and inputs are in Japanese too.
    page.click("nav a[href='#webhooks']")
    expect(page.locator("#page-webhooks h1")).to_have_text("Webhook")
    expect(page.locator("#wh-create")).to_have_text("エンドポイントを追加")
    page.click("nav a[href='#new']")
    expect(page.locator("#inputs legend")).to_have_text("画像と参照(任意)")
    expect(page.locator("label[for=u-first_frame]")).to_have_text("最初のフレーム")
    page.click("nav a[href='#terms']")
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


# --- New video: uploads of the inputs the model honours ------------------------------------------

DEFAULT_CATALOG = os.path.join(HERE, "..", "..", "functions", "reelgate", "src", "domain", "catalog.default.toml")
W, H = 1366, 768


def png(width, height, pixel):
    """A PNG whose pixel (x, y) is pixel(x, y) -> (r, g, b)."""
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def quadrants(x, y):
    """Four flat colours a video codec keeps."""
    return [(220, 40, 40), (40, 200, 60)][x >= W // 2] if y < H // 2 else [(30, 60, 220), (230, 210, 40)][x >= W // 2]


@pytest.fixture(scope="module")
def frames_site(tmp_path_factory):
    """`reelgate serve` with two more video models: one whose engine honours frames only, one
    that takes text alone (catalog `inputs`, docs/engines.md)."""
    catalog = tmp_path_factory.mktemp("catalog") / "catalog.toml"
    extra = """
[[video_models]]
id = "reel-frames"
name = "Reel Frames"
description = "Frames only."
engine = "reference"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.10", currency = "usd" }]
inputs = ["first_frame", "last_frame"]

[[video_models]]
id = "reel-text"
name = "Reel Text"
description = "Text only."
engine = "reference"
plans = ["starter", "pro", "enterprise"]
pricing = [{ resolution = "768p", per_second = "0.10", currency = "usd" }]
inputs = []
aspect_ratios = ["16:9", "9:16"]
"""
    with open(DEFAULT_CATALOG) as f:
        catalog.write_text(f.read() + extra)
    with serving(env={"REELGATE_CATALOG": str(catalog)}) as srv:
        srv.agree(srv.user, srv.org)
        yield srv


def slots_shown(page):
    names = ["first_frame", "last_frame", "reference_images", "reference_videos", "reference_audio"]
    return [n for n in names if page.locator(f"#slot-{n}").is_visible()]


def test_new_video_offers_the_models_inputs_and_uploads_a_first_frame_with_progress(frames_site, browser, tmp_path):
    site = frames_site
    picture = tmp_path / "first.png"
    picture.write_bytes(png(W, H, quadrants))
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_bytes(b"these are words, not pixels\n" * 40)
    context, page = new_page(browser)
    sign_in(page, site)
    page.click("nav a[href='#new']")

    # Only the inputs (and aspect ratios) the chosen model's engine honours are offered.
    page.select_option("#f-model", "reel-1")
    expect(page.locator("#inputs")).to_be_visible()
    assert slots_shown(page) == ["first_frame", "last_frame", "reference_images", "reference_videos", "reference_audio"]
    page.select_option("#f-model", "reel-text")
    expect(page.locator("#inputs")).to_be_hidden()
    assert page.locator("#f-aspect option").all_inner_texts() == ["16:9", "9:16"]
    page.select_option("#f-model", "reel-frames")
    expect(page.locator("#slot-first_frame")).to_be_visible()
    assert slots_shown(page) == ["first_frame", "last_frame"]

    # A file that is not an image: the server's refusal is shown next to the first frame.
    page.set_input_files("#u-first_frame", str(not_an_image))
    expect(page.locator("#err-first_frame")).to_contain_text("notes.png")
    expect(page.locator("#u-first_frame")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#list-first_frame li")).to_have_count(0)

    # The PNG goes up through the direct upload flow; its progress bar reaches 100 %.
    page.set_input_files("#u-first_frame", str(picture))
    item = page.locator("#list-first_frame li")
    expect(item).to_have_attribute("data-status", "done", timeout=30000)
    expect(item.locator(".upload-status")).to_have_text("Uploaded · 100 %")
    assert item.locator("progress").evaluate("p => p.value") == 100
    expect(page.locator("#err-first_frame")).to_be_empty()
    page.fill("#f-prompt", "The four colours drift apart slowly")
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    shot(page, "new-video-upload.png")
    page.click("#create")

    expect(page.locator("#page-videos")).to_be_visible()
    card = page.locator("#video-list li.card").first
    expect(card.locator(".prompt")).to_have_text("The four colours drift apart slowly")
    expect(card.locator(".badge")).to_have_text("completed", timeout=120000)
    video_id = card.get_attribute("id").removeprefix("video-")
    # The render starts from the uploaded frame: frame 0, shrunk to 16x9, has its four colours.
    mp4 = httpx.get(f"{site.base_url}/v1/videos/{video_id}/content",
                    headers={"Authorization": f"Bearer {site.api_key}"}, timeout=30)
    assert mp4.status_code == 200
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(mp4.content)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(clip), "-vf", "scale=16:9:flags=area", "-vframes", "1",
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], check=True, capture_output=True).stdout
    assert len(raw) == 16 * 9 * 3
    for x, y in [(3, 1), (12, 1), (3, 7), (12, 7)]:
        got = raw[(y * 16 + x) * 3:(y * 16 + x) * 3 + 3]
        want = quadrants(x * W // 16, y * H // 9)
        assert max(abs(a - b) for a, b in zip(got, want)) < 30, (x, y, tuple(got), want)
    context.close()


def noise_png(width, height):
    """An incompressible PNG (random pixels), so its upload takes a while on a slowed link."""
    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))


def test_upload_progress_moves_as_the_bytes_go_out(frames_site, browser, tmp_path):
    """On a link slowed to 1 MB/s (Chromium's network emulation), a 2 MB reference image's bar
    shows intermediate percentages from the upload's progress events before it reaches 100 %."""
    big = tmp_path / "noise.png"
    big.write_bytes(noise_png(820, 820))
    assert big.stat().st_size > 2_000_000
    context, page = new_page(browser)
    sign_in(page, frames_site)
    page.click("nav a[href='#new']")
    page.select_option("#f-model", "reel-1")
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 20, "downloadThroughput": 1_000_000, "uploadThroughput": 1_000_000,
    })
    page.evaluate("""() => {
        window.__percents = [];
        const list = document.getElementById('list-reference_images');
        new MutationObserver(() => {
            const bar = list.querySelector('progress');
            if (bar) window.__percents.push(bar.value);
        }).observe(list, {childList: true, subtree: true, attributes: true, characterData: true});
    }""")
    page.set_input_files("#u-reference_images", str(big))
    item = page.locator("#list-reference_images li")
    expect(item).to_have_attribute("data-status", "done", timeout=60000)
    expect(item.locator(".upload-status")).to_have_text("Uploaded · 100 %")
    percents = page.evaluate("window.__percents")
    assert any(0 < p < 100 for p in percents), percents
    assert percents[-1] == 100, percents
    context.close()


def test_new_video_shows_each_input_error_next_to_its_input(frames_site, browser, tmp_path):
    site = frames_site
    small = tmp_path / "small.png"
    small.write_bytes(png(64, 36, lambda x, y: (x * 4, y * 7, 120)))
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    context, page = new_page(browser)
    sign_in(page, site)
    page.click("nav a[href='#new']")
    page.select_option("#f-model", "reel-1")
    page.fill("#f-prompt", "A kite over the dunes")
    page.set_input_files("#u-first_frame", str(small))
    expect(page.locator("#list-first_frame li")).to_have_attribute("data-status", "done", timeout=30000)
    # A reference image beside a first frame: the API's 400 (param `references`) is shown next
    # to the reference images, not in a banner.
    page.set_input_files("#u-reference_images", str(small))
    expect(page.locator("#list-reference_images li")).to_have_attribute("data-status", "done", timeout=30000)
    expect(page.locator("#err-reference_images")).to_contain_text("cannot be used together")
    expect(page.locator("#quote-amount")).to_have_text("—")
    page.click("#create")
    expect(page.locator("#err-reference_images")).to_contain_text("cannot be used together")
    expect(page.locator("#page-new")).to_be_visible()
    # Removing it clears the error and the quote comes back.
    page.get_by_role("button", name="Remove small.png").last.click()
    expect(page.locator("#err-reference_images")).to_be_empty()
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    # An empty file is refused by the upload's own validation, next to its input.
    page.set_input_files("#u-last_frame", str(empty))
    expect(page.locator("#err-last_frame")).to_contain_text("bytes must be from 1")
    shot(page, "new-video-errors.png")
    # Switching to a model that honours no inputs hides them; the create sends none of them.
    page.select_option("#f-model", "reel-text")
    expect(page.locator("#inputs")).to_be_hidden()
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    context.close()


# --- Chat: image attachments where the model has vision ------------------------------------------

def test_chat_sends_an_attached_image_to_a_vision_model(browser, tmp_path):
    fake = FakeUpstream(gap_ms=10)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,vision"}
        with serving(env=env) as srv:
            picture = png(32, 24, lambda x, y: (200, x * 8, y * 10))
            path = tmp_path / "cat.png"
            path.write_bytes(picture)
            context, page = new_page(browser)
            sign_in(page, srv)
            page.goto(f"{srv.base_url}/console/#chat")
            page.select_option("#c-model", "fake-model-v1")
            expect(page.locator("#c-image-field")).to_be_visible()
            page.set_input_files("#c-image", str(path))
            expect(page.locator("#c-image-chosen")).to_be_visible()
            expect(page.locator("#c-image-preview")).to_have_attribute("alt", "cat.png")
            page.fill("#c-message", "What is in this picture?")
            page.click("#c-send")
            # The fake answers an image part with "image <n> bytes …" (it does not decode data URLs).
            expect(page.locator("#c-output")).to_contain_text("image")
            shot(page, "chat-image.png")
            sent = fake.requests()[-1]
            parts = sent["messages"][-1]["content"]
            assert parts[0] == {"type": "text", "text": "What is in this picture?"}, parts
            image = [p for p in parts if p.get("type") == "image_url"]
            assert len(image) == 1, parts
            url = image[0]["image_url"]["url"]
            assert url.startswith("data:image/png;base64,"), url[:40]
            assert base64.b64decode(url.split(",", 1)[1]) == picture
            # Removed, the next message goes as plain text.
            page.click("#c-image-remove")
            expect(page.locator("#c-image-chosen")).to_be_hidden()
            page.click("#c-send")
            expect(page.locator("#c-output")).to_have_text("Hello from the fake upstream.")
            assert fake.requests()[-1]["messages"][-1]["content"] == "What is in this picture?"
            context.close()
    finally:
        fake.stop()


# --- Webhooks ------------------------------------------------------------------------------------

def test_webhooks_page_creates_shows_failures_rotates_and_deletes(browser):
    receiver = Receiver()
    try:
        env = {"REELGATE_FETCH_ALLOW": "127.0.0.1", "REELGATE_WEBHOOK_RETRY_SECS": "1,1,1"}
        with serving(env=env) as srv:
            srv.agree(srv.user, srv.org)
            context, page = new_page(browser)
            sign_in(page, srv)
            page.click("nav a[href='#webhooks']")
            expect(page.locator("#page-webhooks")).to_be_visible()
            expect(page.locator("#wh-empty")).to_be_visible()
            # The private-address guard: the metadata address is refused, next to the URL.
            page.fill("#wh-url", "http://169.254.169.254/latest/meta-data")
            page.click("#wh-create")
            expect(page.locator("#err-url")).not_to_be_empty()
            expect(page.locator("#wh-url")).to_have_attribute("aria-invalid", "true")
            # No event chosen: the API's refusal is shown next to the events.
            page.fill("#wh-url", f"{receiver.url}/down/console")
            for box in page.locator("input[name=events]").all():
                box.uncheck()
            page.click("#wh-create")
            expect(page.locator("#err-events")).to_contain_text("events")
            page.check("input[value='video.completed']")
            page.fill("#wh-description", "render notices")
            page.click("#wh-create")
            expect(page.locator("#wh-secret")).to_be_visible()
            secret = page.locator("#wh-secret-value").input_value()
            assert secret.startswith("whsec_")
            card = page.locator("#wh-list li.card")
            expect(card).to_have_count(1)
            endpoint_id = card.get_attribute("id").removeprefix("wh-")
            expect(card).to_contain_text("video.completed")
            expect(card.locator(".badge")).to_have_text("enabled")
            expect(card).to_contain_text("No deliveries yet.")

            # A render completes; the receiver answers 500 to every attempt: after one attempt
            # and three retries the endpoint is disabled, and the page says why.
            body = {"model": "reel-1", "prompt": "A harbour crane at night", "seconds": 4, "aspect_ratio": "16:9"}
            r = httpx.post(f"{srv.base_url}/v1/videos", json=body, headers={"Authorization": f"Bearer {srv.api_key}"})
            assert r.status_code == 200, r.text
            deadline = time.time() + 150
            while time.time() < deadline:
                page.click("#wh-refresh")
                if page.locator(f"#wh-{endpoint_id} .badge").inner_text() == "disabled":
                    break
                time.sleep(1)
            card = page.locator(f"#wh-{endpoint_id}")
            expect(card.locator(".badge")).to_have_text("disabled")
            expect(card.locator(".reason")).to_contain_text("HTTP 500")
            expect(card.locator("table.attempts tbody tr")).to_have_count(4)
            expect(card).to_contain_text("4 failures in a row")
            shot(page, "webhooks.png")
            # Every attempt was signed with the secret the page showed once.
            received = receiver.received("/down/console")
            assert len(received) == 4
            assert all(verify(secret, h, b) for h, b, _ in received)

            # Rotate: a new secret, shown once.
            card.get_by_role("button", name=f"Rotate secret {endpoint_id}").click()
            expect(page.locator("#flash")).to_contain_text("New signing secret")
            rotated = page.locator("#wh-secret-value").input_value()
            assert rotated.startswith("whsec_") and rotated != secret
            listed = httpx.get(f"{srv.base_url}/v1/webhooks", headers={"Authorization": f"Bearer {srv.api_key}"}).json()
            assert [e["id"] for e in listed["data"]] == [endpoint_id]
            assert "secret" not in listed["data"][0]

            # Delete.
            page.locator(f"#wh-{endpoint_id}").get_by_role("button", name=f"Delete {endpoint_id}").click()
            expect(page.locator(f"#wh-{endpoint_id}")).to_have_count(0)
            expect(page.locator("#wh-empty")).to_be_visible()
            expect(page.locator("#wh-secret")).to_be_hidden()
            listed = httpx.get(f"{srv.base_url}/v1/webhooks", headers={"Authorization": f"Bearer {srv.api_key}"}).json()
            assert listed["data"] == []
            context.close()
    finally:
        receiver.stop()
