"""The console in a real headless Chromium (Debian's package, driven by Playwright) against the
real `reelgate serve`: sign in by link, agree, create a 4-second video, watch it complete, play
it, delete it; chat with streaming against tests/python/fake_upstream.py (a fake upstream);
create and revoke a key; sign out. Also the Japanese UI, 375 px without horizontal scrolling,
the agree and create flows by keyboard alone, and an axe-core pass on every page. Screenshots go
to a temporary folder (printed; CONSOLE_SCREENSHOTS names another): they are committed only on
request."""

import base64
import contextlib
import decimal
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import httpx
import pytest
from playwright.sync_api import expect, sync_playwright

from harness import FakeHangingEngine, FakeUpstream, serving

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "webhooks"))
from receiver import Receiver, verify  # noqa: E402

HERE = os.path.dirname(__file__)
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS") or tempfile.mkdtemp(prefix="reelgate-console-shots-")
print(f"console screenshots: {SHOTS}", file=sys.stderr)
# axe-core, installed by scripts/test-tools.sh into the tools folder's node_modules (no network here).
AXE = os.path.join(os.environ.get("REELGATE_TOOLS_DIR", os.path.expanduser("~/.cache/reelgate/tools")),
                   "node", "node_modules", "axe-core", "axe.min.js")
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


def new_page(browser, locale="en-US", width=1280, height=900, bypass_csp=False):
    context = browser.new_context(locale=locale, viewport={"width": width, "height": height}, bypass_csp=bypass_csp)
    page = context.new_page()
    # The console asks inside the page: a browser dialog is dismissed, so an action that asked
    # with one would stay undone and fail the test that needed it.
    page.on("dialog", lambda d: d.dismiss())
    page.set_default_timeout(20000)
    return context, page


def confirm_in_page(page, action):
    """Confirms the console's in-page dialog, whose button says `action`; the page behind it
    keeps its place."""
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#confirm-no")).to_be_focused()
    dialog.get_by_role("button", name=action).click()
    expect(dialog).to_be_hidden()


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
    # Seconds are chosen from what the model renders, whole seconds only: nothing to round.
    options = page.locator("#f-seconds option").all_inner_texts()
    assert options == [f"{n} s" for n in range(4, 4 + len(options))] and len(options) > 1, options
    page.select_option("#f-seconds", "4")
    page.select_option("#f-aspect", "16:9")
    # Every problem at once, next to its field: no prompt yet, and the server's refusal of
    # the balance-independent rules comes back with it.
    page.click("#create")
    expect(page.locator("#err-prompt")).to_have_text("Write a prompt: what the video shows.")
    expect(page.locator("#page-new")).to_be_visible()
    page.fill("#f-prompt", "A paper boat drifting on a calm lake at dawn")
    expect(page.locator("#err-prompt")).to_be_empty()
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    expect(page.locator("#quote-available")).to_have_text("25.00 USD")
    shot(page, "new-video.png")
    page.click("#create")

    # Create lands on the new video's own page, with its quote (not a charge) while it runs.
    expect(page).to_have_url(re.compile(r"/console/videos/video_[A-Za-z0-9_-]+$"))
    expect(page.locator("#page-video")).to_be_visible()
    expect(page.locator("#vp-charge")).to_have_text(re.compile(r"^(quote 0\.40 USD|charged 0\.40 USD)$"))
    expect(page.locator("#vp-status")).to_have_text("Completed", timeout=120000)
    page.click(".crumbs a")
    expect(page.locator("#page-videos")).to_be_visible()
    card = page.locator("#video-list li.card").first
    expect(card.locator(".badge")).to_have_text("Completed", timeout=120000)
    expect(card.locator(".charge")).to_have_text("charged 0.40 USD")
    # The thumbnail and Download are there without any click.
    thumb = card.locator("img.thumb")
    expect(thumb).to_be_visible()
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=thumb.element_handle())
    box_before = card.locator(".media").bounding_box()
    download = card.get_by_role("link", name="Download")
    assert download.get_attribute("download", timeout=5000).endswith(".mp4")
    card.get_by_role("button", name="Play").click()
    video = card.locator("video")
    page.wait_for_function(
        "v => v.readyState >= 2 && Math.abs(v.duration - 4) < 0.25", arg=video.element_handle(), timeout=30000
    )
    # Play plays: the time advances by itself; the player took the reserved box (no jump).
    page.wait_for_function("v => !v.paused && v.currentTime > 0.3", arg=video.element_handle(), timeout=15000)
    box_after = card.locator(".media").bounding_box()
    assert abs(box_after["height"] - box_before["height"]) < 2, (box_before, box_after)
    # Seeking works (the signed URL serves ranges).
    video.evaluate("v => { v.pause(); v.currentTime = 3; }")
    page.wait_for_function("v => !v.seeking && v.currentTime >= 2.9", arg=video.element_handle())
    assert download.get_attribute("download", timeout=5000).endswith(".mp4")
    r = httpx.get(download.get_attribute("href"), headers={"Range": "bytes=0-15"})
    assert r.status_code == 206 and r.content[4:8] == b"ftyp"
    shot(page, "videos.png")
    video_id = card.get_attribute("id").removeprefix("video-")
    card.get_by_role("button", name=f"Delete {video_id}").click()
    confirm_in_page(page, "Delete")
    expect(page.locator(f"#video-{video_id}")).to_have_count(0)
    r = httpx.get(f"{site.base_url}/v1/videos/{video_id}", headers={"Authorization": f"Bearer {site.api_key}"})
    assert r.status_code == 404

    page.click("nav a[href='#usage']")
    expect(page.locator("#u-balance")).to_have_text("24.60 USD")
    expect(page.locator("#u-charges")).to_contain_text("Video render · reel-1")
    shot(page, "usage.png")
    context.close()


def run_code(code: str, lang: str, key: str) -> str:
    """Runs "View code" output as a person would: the key in REELGATE_API_KEY, the text as shown."""
    env = {**os.environ, "REELGATE_API_KEY": key}
    if lang == "curl":
        argv = ["bash", "-c", code]
    elif lang == "python":
        argv = [sys.executable, "-c", code]
    else:
        # The SDK the project's tools installed (an ES module import does not search NODE_PATH).
        sdk = os.path.join(os.path.dirname(os.path.dirname(AXE)), "openai", "index.mjs")
        argv = ["node", "--input-type=module", "-e", code.replace('from "openai"', f'from "{sdk}"')]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (code, out.stdout, out.stderr)
    return out.stdout


def wait_done(site, video_id, timeout=120):
    """Waits until a job ends (the plan renders two at a time)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = httpx.get(f"{site.base_url}/v1/videos/{video_id}",
                      headers={"Authorization": f"Bearer {site.api_key}"}, timeout=30).json()
        if v["status"] in ("completed", "failed", "canceled"):
            return v
        time.sleep(0.5)
    raise AssertionError(f"{video_id} did not finish")


@pytest.mark.parametrize("width,height", [(1366, 768), (375, 812)])
def test_a_video_page_shows_the_video_remixes_it_and_its_code_runs(site, browser, width, height):
    """A video's own page: linkable, the output large with what made it; Remix lands on the new
    video's page, which names its source; "View code" is the request, and run as shown (with a
    key) it creates a job."""
    site.agree(site.user, site.org)
    headers = {"Authorization": f"Bearer {site.api_key}"}
    made = httpx.post(f"{site.base_url}/v1/videos", headers=headers, timeout=30, json={
        "model": "reel-1", "prompt": "A lighthouse at dusk, waves below", "seconds": 4, "aspect_ratio": "16:9"})
    assert made.status_code == 200, made.text
    source = made.json()["id"]
    context, page = new_page(browser, width=width, height=height)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/videos/{source}")
    expect(page.locator("#page-video")).to_be_visible()
    expect(page.locator("#vp-id")).to_have_text(source)
    expect(page.locator("#vp-status")).to_have_text("Completed", timeout=120000)
    expect(page.locator("#vp-title")).to_have_text("A lighthouse at dusk, waves below")
    expect(page.locator("#vp-facts")).to_contain_text("reel-1")
    expect(page.locator("#vp-facts")).to_contain_text("Charge0.40 USD")
    page.wait_for_function("v => v && v.readyState >= 1", arg=page.locator("#vp-media video").element_handle(),
                           timeout=30000)
    expect(page.get_by_role("link", name="Download")).to_be_visible()
    shot(page, f"video-page-{width}.png")

    # View code, each language, as shown.
    page.click("#vp-code summary")
    expect(page.locator("#vp-code-text")).to_contain_text("/v1/videos")
    curl = page.locator("#vp-code-text").inner_text()
    assert "$REELGATE_API_KEY" in curl and site.api_key not in curl
    made_by_curl = json.loads(run_code(curl, "curl", site.api_key))
    assert made_by_curl["object"] == "video" and made_by_curl["prompt"] == "A lighthouse at dusk, waves below"
    assert wait_done(site, made_by_curl["id"])["status"] == "completed"
    if width == 1366:
        page.click("#vp-code-python")
        expect(page.locator("#vp-code-text")).to_contain_text("client.videos.create(")
        out = run_code(page.locator("#vp-code-text").inner_text(), "python", site.api_key)
        assert out.startswith("video_"), out
        wait_done(site, out.split()[0])
        page.click("#vp-code-node")
        expect(page.locator("#vp-code-text")).to_contain_text("client.videos.create(")
        out = run_code(page.locator("#vp-code-text").inner_text(), "node", site.api_key)
        assert out.startswith("video_"), out
        wait_done(site, out.split()[0])
        shot(page, "video-page-code.png")

    # Remix from the page: the new video's page names its source, and links to it.
    page.get_by_role("button", name="Remix").click()
    expect(page.locator("#vp-op-form")).to_be_visible()
    page.fill("#vp-op-prompt", "The same lighthouse, in snow")
    page.click("#vp-op-submit")
    page.wait_for_url(lambda url: re.search(r"/console/videos/video_[A-Za-z0-9_-]+$", url) and source not in url)
    remix = page.url.rsplit("/", 1)[1]
    expect(page.locator("#vp-facts")).to_contain_text(f"remix of {source}")
    expect(page.locator("#vp-status")).to_have_text("Completed", timeout=120000)
    page.click("#vp-code summary")
    expect(page.locator("#vp-code-text")).to_contain_text(f"/v1/videos/{source}/remix")
    shot(page, f"video-page-remix-{width}.png")
    page.get_by_role("link", name=f"remix of {source}").click()
    expect(page.locator("#vp-id")).to_have_text(source)
    if width == 1366:
        # Extend from the page, seconds chosen from what the model renders; reel-1 also edits.
        expect(page.get_by_role("button", name="Edit")).to_be_visible()
        page.get_by_role("button", name="Extend").click()
        options = page.locator("#vp-op-seconds option").all_inner_texts()
        assert options and all(re.fullmatch(r"\d+ s", o) for o in options), options
        page.select_option("#vp-op-seconds", "4")
        page.fill("#vp-op-prompt", "The lighthouse beam sweeps on into the night")
        page.click("#vp-op-submit")
        page.wait_for_url(lambda url: re.search(r"/console/videos/video_", url) and source not in url)
        expect(page.locator("#vp-facts")).to_contain_text(f"extension of {source}")
        expect(page.locator("#vp-status")).to_have_text("Completed", timeout=120000)
        expect(page.locator("#vp-facts")).to_contain_text("8 s")
        shot(page, "video-page-extension.png")
        page.get_by_role("link", name=f"extension of {source}").click()
        expect(page.locator("#vp-id")).to_have_text(source)
    # A nav link from a video's page goes back to the console's own pages.
    page.click("nav a[href='#videos']")
    expect(page.locator("#page-videos")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/console/#videos$"))
    # An id that is not the organization's.
    page.goto(f"{site.base_url}/console/videos/video_nonexistent")
    expect(page.locator("#vp-title")).to_have_text("No such video.")
    context.close()


def test_the_gallery_pages_through_120_videos_and_filters_and_searches_by_the_api(browser):
    """120 videos (made and canceled on an engine that never finishes, so none renders or
    costs): the gallery shows the newest page and loads older ones as the person scrolls, down
    to the first video made; the status filter and the prompt search are the API's, and page
    too; a card keeps its video's shape."""
    engine = FakeHangingEngine()
    try:
        with serving(env={"REELGATE_REFERENCE_ENGINE_URL": engine.url}) as srv:
            srv.agree(srv.user, srv.org)
            # A plan without per-minute limits: 240 requests in well under a minute.
            srv.admin("plan", "set", "--org", srv.org, "--plan", "enterprise")
            h = {"Authorization": f"Bearer {srv.api_key}"}
            with httpx.Client(base_url=srv.base_url, headers=h, timeout=30) as client:
                for n in range(1, 121):
                    ratio = "9:16" if n == 120 else "16:9"
                    r = client.post("/v1/videos", json={"model": "reel-1", "prompt": f"Video number {n:03d}",
                                                         "seconds": 4, "aspect_ratio": ratio})
                    assert r.status_code == 200, r.text
                    # The last two stay rendering; the rest are canceled at once.
                    if n < 119:
                        assert client.post(f"/v1/videos/{r.json()['id']}/cancel").status_code == 200
            context, page = new_page(browser)
            sign_in(page, srv)
            page.click("nav a[href='#videos']")
            cards = page.locator("#video-list li.card")
            expect(cards).to_have_count(24)
            expect(cards.first.locator(".prompt")).to_have_text("Video number 120")
            # Scrolling to the end loads the next older page, until the first video made.
            for shown in range(48, 121, 24):
                page.locator("#videos-more").scroll_into_view_if_needed()
                expect(cards).to_have_count(min(shown, 120))
            expect(cards.last.locator(".prompt")).to_have_text("Video number 001")
            expect(page.locator("#videos-more")).to_be_hidden()
            shot(page, "videos-all-pages.png")
            # The API filters: the rendering ones, then a search among the canceled.
            page.select_option("#v-filter", "running")
            expect(cards).to_have_count(2)
            expect(cards.first.locator(".prompt")).to_have_text("Video number 120")
            # A rendering 9:16 card keeps its shape: taller than wide.
            box = cards.first.locator(".media").bounding_box()
            assert box["height"] > box["width"], box
            shot(page, "videos-rendering-portrait.png")
            page.select_option("#v-filter", "canceled")
            page.fill("#v-search", "number 11")
            expect(page.locator("#video-list .prompt")).to_have_text([f"Video number {n}" for n in range(118, 109, -1)])
            page.fill("#v-search", "no such words")
            expect(page.locator("#videos-none-match")).to_be_visible()
            expect(cards).to_have_count(0)
            context.close()
    finally:
        engine.stop()


def test_view_code_on_new_video_is_the_forms_request_and_runs(site, browser):
    """New video's "View code" follows the form, and run as shown (with a key) creates the job
    the form would have."""
    site.agree(site.user, site.org)
    context, page = new_page(browser)
    sign_in(page, site)
    page.click("nav a[href='#new']")
    page.select_option("#f-model", "reel-1")
    page.select_option("#f-seconds", "5")
    page.fill("#f-prompt", "A red kite over a green hill")
    page.click("#nv-code summary")
    expect(page.locator("#nv-code-text")).to_contain_text("A red kite over a green hill")
    page.select_option("#f-seconds", "6")
    expect(page.locator("#nv-code-text")).to_contain_text('"seconds":6')
    curl = page.locator("#nv-code-text").inner_text()
    made = json.loads(run_code(curl, "curl", site.api_key))
    assert (made["prompt"], made["seconds"], made["model"]) == ("A red kite over a green hill", 6, "reel-1"), made
    page.click("#nv-code-python")
    expect(page.locator("#nv-code-text")).to_contain_text("client.videos.create(")
    out = run_code(page.locator("#nv-code-text").inner_text(), "python", site.api_key)
    assert out.startswith("video_"), out
    shot(page, "new-video-code.png")
    for video in (made["id"], out.split()[0]):
        wait_done(site, video)
    context.close()


def test_view_code_on_chat_is_the_last_request_and_runs(browser):
    """Chat's "View code" is the last request (history included), and each language run as
    shown streams the model's answer."""
    with chat_page(browser, gap_ms=10) as (_fake, srv, page):
        page.fill("#c-message", "echo: the tide is out")
        page.click("#c-send")
        expect(last_reply(page).locator(".content")).to_have_text("the tide is out", timeout=10000)
        page.click("#cc-code summary")
        expect(page.locator("#cc-code-text")).to_contain_text("echo: the tide is out")
        for lang in ("curl", "python", "node"):
            page.click(f"#cc-code-{lang}")
            out = run_code(page.locator("#cc-code-text").inner_text(), lang, srv.api_key)
            # curl shows the stream's events, a word each; the SDKs print the text.
            assert ('" tide"' in out and "data: [DONE]" in out) if lang == "curl" else "the tide is out" in out, (lang, out)
        shot(page, "chat-code.png")


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
            expect(card.locator(".badge")).to_have_text("Rendering", timeout=60000)
            expect(card.locator(".charge")).to_have_text("quote 0.40 USD")
            expect(card.locator(".elapsed")).to_contain_text("Elapsed 0:")
            expect(card.get_by_role("button", name=f"Delete {video_id}")).to_have_count(0)
            shot(page, "videos-rendering.png")
            card.get_by_role("button", name=f"Cancel {video_id}").click()
            confirm_in_page(page, "Cancel video")
            card = page.locator(f"#video-{video_id}")
            expect(card.locator(".badge")).to_have_text("Canceled")
            expect(card.locator(".charge")).to_have_text("not charged")
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


def last_reply(page):
    return page.locator("#c-log li.msg.assistant").last


def test_chat_streams_its_reply(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#chat")
    page.select_option("#c-model", "fake-model-v1")
    page.fill("#c-message", "hi")
    # Record the reply's length as it grows: a streamed reply shows several partial states.
    page.evaluate("""() => {
        window.__lengths = [];
        const log = document.getElementById('c-log');
        new MutationObserver(() => {
            const r = log.querySelector('li.msg.assistant:last-child .content');
            if (r) window.__lengths.push(r.textContent.length);
        }).observe(log, {childList: true, characterData: true, subtree: true});
    }""")
    # A text-only model: no image attachment is offered.
    expect(page.locator("#c-image-field")).to_be_hidden()
    page.click("#c-send")
    expect(last_reply(page).locator(".content")).to_have_text("Hello from the fake upstream.")
    lengths = page.evaluate("window.__lengths")
    partial = {n for n in lengths if 0 < n < len("Hello from the fake upstream.")}
    assert len(partial) >= 2, lengths
    # A model found by listing the upstream has no price set (zero in the catalog): not
    # "0.00 USD".
    models = page.evaluate("fetch('/console/api/chat/models').then(r => r.json())")["data"]
    pricing = next(m for m in models if m["id"] == "fake-model-v1")["pricing"]
    assert (pricing["input_per_million"], pricing["output_per_million"]) == ("0", "0"), pricing
    expect(last_reply(page).locator(".usage")).to_have_text(re.compile(r"tokens · no price set$"))
    context.close()


@contextlib.contextmanager
def chat_page(browser, gap_ms, priced=False):
    """A server of its own on a fake upstream streaming a word every `gap_ms`, and a signed-in
    page on its chat: (fake, server, page). `priced`: on the Python suite's catalog, whose
    `fake-chat` costs 1.00 / 2.00 USD per million tokens, instead of the listed, unpriced model."""
    fake = FakeUpstream(gap_ms=gap_ms)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text"}
        if priced:
            env = {"REELGATE_CATALOG": os.path.join(os.path.dirname(__file__), "..", "python", "catalog.toml"),
                   "FAKE_UPSTREAM_URL": fake.url}
        with serving(env=env) as srv:
            context, page = new_page(browser)
            sign_in(page, srv)
            page.goto(f"{srv.base_url}/console/#chat")
            page.select_option("#c-model", "fake-chat" if priced else "fake-model-v1")
            try:
                yield fake, srv, page
            finally:
                context.close()
    finally:
        fake.stop()


def test_stop_ends_a_slow_reply_and_keeps_what_arrived(browser):
    """Stop on a slow stream (one word a second) of a priced model: the upstream call ends
    then (the fake sees its reader leave, the rest never generated), the words that arrived
    stay as the turn's answer, marked stopped, the balance falls by exactly the charge the usage
    records for what was generated, and the next message sends them as the assistant's turn."""
    with chat_page(browser, gap_ms=1000, priced=True) as (fake, srv, page):
        before = decimal.Decimal(srv.admin("org", "show", "--org", srv.org)["balance"])
        page.fill("#c-message", "hi")
        page.click("#c-send")
        expect(page.locator("#c-stop")).to_be_visible()
        expect(last_reply(page).locator(".content")).to_contain_text("Hello", timeout=10000)
        page.click("#c-stop")
        stopped_at = time.time()
        expect(page.locator("#c-stop")).to_be_hidden()
        expect(last_reply(page).locator(".usage")).to_contain_text("Stopped")
        kept = last_reply(page).locator(".content").inner_text()
        assert kept.startswith("Hello") and kept != "Hello from the fake upstream.", kept
        deadline = time.time() + 10
        while not fake.streams() and time.time() < deadline:
            time.sleep(0.2)
        [ended] = fake.streams()
        assert ended["ended"] == "reader_left" and ended["words_sent"] < ended["words"], ended
        assert ended["at"] - stopped_at < 3, ended
        # Charged once, for the prompt and what was generated until the stop (the upstream,
        # cut off, reported nothing): the usage's chat amount is the balance's fall.
        deadline = time.time() + 10
        while decimal.Decimal(srv.admin("org", "show", "--org", srv.org)["balance"]) == before:
            assert time.time() < deadline, "the stopped reply was never charged"
            time.sleep(0.2)
        charged = before - decimal.Decimal(srv.admin("org", "show", "--org", srv.org)["balance"])
        usage = page.evaluate("fetch('/console/api/usage').then(r => r.json())")
        amounts = [decimal.Decimal(x["amount"]) for b in usage["days"] for x in b["results"]]
        assert charged > 0 and sum(amounts) == charged, (charged, usage)
        shot(page, "chat-stopped.png")
        page.fill("#c-message", "go on")
        page.click("#c-send")
        expect(page.locator("#c-log li.msg.assistant")).to_have_count(2)
        expect(last_reply(page).locator(".content")).to_contain_text("Hello", timeout=10000)
        sent = fake.requests()[-1]["messages"]
        assert sent[1] == {"role": "assistant", "content": kept}, sent
        page.click("#c-stop")


def test_chat_renders_markdown_and_shows_markup_from_the_model_as_text(site, browser):
    """A reply's markdown becomes headings, emphasis, code and a code block with Copy; markup in
    a reply is shown as its characters and never runs."""
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#chat")
    page.click("#c-new")
    page.select_option("#c-model", "fake-model-v1")
    reply = ("# Tide tables\n\nSome **bold** words and `inline code`.\n\n- first\n- second\n\n"
             "```python\nprint('hi')\n```\n\n<img src=x onerror=window.__pwned=1> and <b>not bold</b>")
    page.fill("#c-message", "echo: " + reply)
    page.click("#c-send")
    content = last_reply(page).locator(".content")
    expect(content.locator("h3")).to_have_text("Tide tables")
    expect(content.locator("strong")).to_have_text("bold")
    expect(content.locator("p code")).to_have_text("inline code")
    expect(content.locator("ul li")).to_have_count(2)
    expect(content.locator(".md-code code")).to_have_text("print('hi')")
    expect(content.locator(".md-code").get_by_role("button", name="Copy")).to_be_visible()
    expect(content).to_contain_text("<img src=x onerror=window.__pwned=1> and <b>not bold</b>")
    assert content.locator("img, b").count() == 0
    assert page.evaluate("window.__pwned") is None
    shot(page, "chat-markdown.png")
    context.close()


@pytest.mark.parametrize("width,height", [(1366, 768), (375, 812)])
def test_chat_follows_the_reply_and_keeps_the_conversation_across_a_refresh(site, browser, width, height):
    """Four turns: the composer stays on screen and the streamed reply in view; a refresh keeps
    the conversation and the unsent draft; New chat keeps it in the list of past chats, from
    which it reopens; signing out forgets them."""
    context, page = new_page(browser, width=width, height=height)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#chat")
    page.click("#c-new")
    page.select_option("#c-model", "fake-model-v1")
    for n in range(1, 5):
        page.fill("#c-message", f"turn {n}: " + "tell me more " * 12)
        page.click("#c-send")
        expect(page.locator("#c-log li.msg.assistant")).to_have_count(n)
        expect(last_reply(page).locator(".content")).to_have_text("Hello from the fake upstream.")
        expect(page.locator("#c-send")).to_be_in_viewport()
        expect(last_reply(page)).to_be_in_viewport()
    shot(page, f"chat-four-turns-{width}.png")
    page.fill("#c-message", "an unsent thought")
    page.reload()
    expect(page.locator("#c-log li.msg")).to_have_count(8)
    expect(page.locator("#c-message")).to_have_value("an unsent thought")
    expect(page.locator("#c-log li.msg.user .content").first).to_contain_text("turn 1:")
    # The restored turns are the history the next message sends.
    page.fill("#c-message", "and one more")
    page.click("#c-send")
    expect(page.locator("#c-log li.msg.assistant")).to_have_count(5)
    expect(last_reply(page).locator(".content")).to_have_text("Hello from the fake upstream.")
    # New chat keeps this one among the past chats, and either can be reopened.
    page.click("#c-new")
    expect(page.locator("#c-log li.msg")).to_have_count(0)
    page.fill("#c-message", "a second conversation")
    page.click("#c-send")
    expect(page.locator("#c-log li.msg.assistant")).to_have_count(1)
    history = page.locator("#c-history li")
    expect(history).to_have_count(2)
    expect(history.first.locator(".chat-open")).to_have_text("a second conversation")
    expect(history.nth(1).locator(".chat-open")).to_contain_text("turn 1:")
    shot(page, f"chat-history-{width}.png")
    history.nth(1).locator(".chat-open").click()
    expect(page.locator("#c-log li.msg")).to_have_count(10)
    page.reload()
    expect(page.locator("#c-log li.msg")).to_have_count(10)
    page.locator("#c-history li").first.get_by_role("button", name=re.compile("^Delete chat")).click()
    confirm_in_page(page, "Delete")
    expect(page.locator("#c-history li")).to_have_count(1)
    page.click("#signout")
    expect(page.locator("#page-signin")).to_be_visible()
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#chat")
    expect(page.locator("#c-log li.msg")).to_have_count(0)
    expect(page.locator("#c-message")).to_have_value("")
    context.close()


def test_chat_is_a_conversation_enter_sends_and_the_upstream_gets_the_whole_history(browser):
    """Three turns typed and sent with Enter (Shift+Enter is a new line): every message and reply
    stays on screen, and each request carries the system prompt and every earlier turn, with
    the parameters; each turn shows its tokens and cost; New chat starts over."""
    with chat_page(browser, gap_ms=5) as (fake, _srv, page):
        page.fill("#c-system", "Answer briefly.")
        page.fill("#c-temperature", "0.2")
        page.fill("#c-max-tokens", "200")
        box = page.locator("#c-message")
        turns = ["first question", "second question", "third\nquestion"]
        for n, text in enumerate(turns, start=1):
            box.click()
            for i, line in enumerate(text.split("\n")):
                if i:
                    page.keyboard.press("Shift+Enter")
                page.keyboard.type(line)
            if "\n" in text:
                assert box.input_value() == text  # Shift+Enter made a new line, sent nothing
            page.keyboard.press("Enter")
            expect(page.locator("#c-log li.msg.assistant")).to_have_count(n)
            expect(last_reply(page).locator(".content")).to_have_text("Hello from the fake upstream.")
            expect(last_reply(page).locator(".usage")).to_contain_text("tokens")
            expect(box).to_have_value("")
        users = page.locator("#c-log li.msg.user .content")
        expect(users).to_have_count(3)
        assert users.all_inner_texts() == turns
        sent = fake.requests()[-1]
        reply = "Hello from the fake upstream."
        assert sent["messages"] == [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": turns[0]}, {"role": "assistant", "content": reply},
            {"role": "user", "content": turns[1]}, {"role": "assistant", "content": reply},
            {"role": "user", "content": turns[2]},
        ], sent["messages"]
        assert sent["temperature"] == 0.2 and sent["max_tokens"] == 200, sent
        assert [len(r["messages"]) for r in fake.requests()[-3:]] == [2, 4, 6]
        # The fake's model has no price set: said so, not "0.00 USD".
        expect(last_reply(page).locator(".usage")).to_have_text(re.compile(r"^10 in · \d+ out tokens · no price set$"))
        shot(page, "chat.png")
        page.click("#c-new")
        expect(page.locator("#c-log li")).to_have_count(0)
        page.fill("#c-message", "fresh start")
        page.keyboard.press("Enter")
        expect(page.locator("#c-log li.msg.assistant")).to_have_count(1)
        expect(last_reply(page).locator(".content")).to_have_text(reply)
        assert fake.requests()[-1]["messages"][-1] == {"role": "user", "content": "fresh start"}
        assert len(fake.requests()[-1]["messages"]) == 2


def test_create_and_revoke_a_key(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#keys")
    page.fill("#key-name", "ci pipeline")
    page.click("#key-create")
    expect(page.locator("#key-secret-value")).to_have_value(re.compile(r"^rgk_"))
    secret = page.locator("#key-secret-value").input_value()
    assert secret.startswith("rgk_")
    heading = page.locator("#page-keys h1")
    top = heading.bounding_box()["y"]
    page.click("#key-copy")
    expect(page.locator("#flash")).to_have_text("Copied to the clipboard.")
    # The notice floats over the page: nothing under it moved.
    assert heading.bounding_box()["y"] == top
    shot(page, "keys-notice.png")
    page.click("#flash")
    expect(page.locator("#flash")).to_be_hidden()
    key_id = "key_" + secret[4:30]
    card = page.locator(f"#key-{key_id}")
    expect(card.locator(".key-name")).to_have_text("ci pipeline")
    expect(card.locator("div.meta")).to_contain_text("never used")
    h = {"Authorization": f"Bearer {secret}"}
    assert httpx.get(f"{site.base_url}/v1/videos/models", headers=h).status_code == 200
    page.reload()
    expect(page.locator(f"#key-{key_id} div.meta")).to_contain_text("last used")
    shot(page, "keys-named.png")
    expect(page.get_by_role("button", name=f"Revoke {key_id}")).to_be_visible()
    page.get_by_role("button", name=f"Revoke {key_id}").click()
    # Keep first: nothing happens; then Revoke.
    expect(page.locator("#confirm-dialog")).to_be_visible()
    shot(page, "confirm-revoke.png")
    page.keyboard.press("Escape")
    expect(page.locator("#confirm-dialog")).to_be_hidden()
    expect(page.get_by_role("button", name=f"Revoke {key_id}")).to_be_visible()
    page.get_by_role("button", name=f"Revoke {key_id}").click()
    confirm_in_page(page, "Revoke")
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
    expect(box.locator("dd[data-limit=monthly_budget]")).to_have_text("5.00 USD · committed this month: 0.00 USD")
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
    expect(page.locator("#inputs summary")).to_have_text("画像と参照(任意)")
    page.locator("#inputs summary").click()
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
        # A compact header: two short rows, not a quarter of the screen.
        assert page.locator("header.top").bounding_box()["height"] <= 96, name
        # The tabs scroll sideways; the current one is scrolled into view.
        tab = page.locator(f"nav a[href='#{name}']").bounding_box()
        assert tab["x"] >= 0 and tab["x"] + tab["width"] <= 375, (name, tab)
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
    page.keyboard.type("5")
    tab_to(page, "#f-prompt")
    page.keyboard.type("A lighthouse at dusk, waves rolling in")
    expect(page.locator("#quote-amount")).to_have_text("0.50 USD")
    tab_to(page, "#create")
    page.keyboard.press("Enter")
    expect(page.locator("#page-video")).to_be_visible()
    expect(page.locator("#vp-title")).to_have_text("A lighthouse at dusk, waves rolling in")
    context.close()


# --- New video: uploads of the inputs the model honours ------------------------------------------

DEFAULT_CATALOG = os.path.join(HERE, "..", "..", "functions", "reelgate", "src", "domain", "catalog", "catalog.default.toml")
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


def open_inputs(page):
    """Unfolds the New video page's optional inputs."""
    if not page.locator("#inputs").evaluate("d => d.open"):
        page.locator("#inputs summary").click()


def slots_shown(page):
    open_inputs(page)
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
    assert page.locator("#f-aspect option").evaluate_all("os => os.map(o => o.value)") == ["16:9", "9:16"]
    assert page.locator("#f-aspect option").all_inner_texts() == ["16:9 landscape", "9:16 tall (phones)"]
    page.select_option("#f-model", "reel-frames")
    expect(page.locator("#slot-first_frame")).to_be_visible()
    assert slots_shown(page) == ["first_frame", "last_frame"]

    # A file that is not an image: the server's refusal is shown next to the first frame.
    page.set_input_files("#u-first_frame", str(not_an_image))
    expect(page.locator("#err-first_frame")).to_contain_text("notes.png")
    expect(page.locator("#u-first_frame")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#list-first_frame li")).to_have_count(0)

    # The PNG goes up (with a preview of the picture) through the direct upload flow; its progress bar reaches 100 %.
    page.set_input_files("#u-first_frame", str(picture))
    item = page.locator("#list-first_frame li")
    expect(item).to_have_attribute("data-status", "done", timeout=30000)
    expect(item.locator(".upload-status")).to_have_text("Uploaded · 100 %")
    assert item.locator("progress").evaluate("p => p.value") == 100
    preview = item.locator("img.preview")
    expect(preview).to_be_visible()
    page.wait_for_function("i => i.complete && i.naturalWidth === 1366", arg=preview.element_handle())
    assert page.locator("#u-first_frame").evaluate("i => i.files.length") == 1
    expect(page.locator("#err-first_frame")).to_be_empty()
    page.fill("#f-prompt", "The four colours drift apart slowly")
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    shot(page, "new-video-upload.png")
    page.click("#create")

    expect(page.locator("#page-video")).to_be_visible()
    expect(page.locator("#vp-title")).to_have_text("The four colours drift apart slowly")
    expect(page.locator("#vp-status")).to_have_text("Completed", timeout=120000)
    video_id = page.url.rsplit("/", 1)[1]
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
    open_inputs(page)
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
    open_inputs(page)
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
    # An empty file is refused when picked, next to its input, and nothing is uploaded.
    page.set_input_files("#u-last_frame", str(empty))
    expect(page.locator("#err-last_frame")).to_have_text("empty.png is not a PNG, JPEG or WebP image, which this input takes.")
    expect(page.locator("#list-last_frame li")).to_have_count(0)
    shot(page, "new-video-errors.png")
    # Switching to a model that honours no inputs hides them; the create sends none of them.
    page.select_option("#f-model", "reel-text")
    expect(page.locator("#inputs")).to_be_hidden()
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    context.close()


def test_new_video_refuses_files_when_picked_and_shows_every_problem_at_once(frames_site, browser, tmp_path):
    """A 30 MB image and a text file renamed .png are refused the moment they are picked, in
    words next to their inputs, and never uploaded; Create with no prompt then shows the prompt's
    problem together with theirs."""
    site = frames_site
    big = tmp_path / "big.png"
    head = png(64, 36, lambda x, y: (x, y, 0))
    big.write_bytes(head + b"\0" * (31_459_009 - len(head)))
    notes = tmp_path / "notes.png"
    notes.write_text("shopping: milk, eggs\n")
    context, page = new_page(browser)
    sign_in(page, site)
    page.click("nav a[href='#new']")
    page.select_option("#f-model", "reel-1")
    open_inputs(page)
    uploads = []
    page.on("request", lambda r: uploads.append(r.url) if "/console/api/uploads" in r.url else None)
    page.set_input_files("#u-first_frame", str(big))
    expect(page.locator("#err-first_frame")).to_have_text(
        "big.png is 30.00 MiB (31,459,009 bytes); images must be smaller than 30 MiB.")
    page.set_input_files("#u-reference_images", str(notes))
    expect(page.locator("#err-reference_images")).to_have_text(
        "notes.png is not a PNG, JPEG or WebP image, which this input takes.")
    expect(page.locator("#list-first_frame li")).to_have_count(0)
    expect(page.locator("#list-reference_images li")).to_have_count(0)
    page.click("#create")
    for field, text in (("#err-prompt", "Write a prompt"), ("#err-first_frame", "big.png"),
                        ("#err-reference_images", "notes.png")):
        expect(page.locator(field)).to_contain_text(text)
    expect(page.locator("#f-prompt")).to_be_focused()
    assert uploads == [], uploads
    shot(page, "new-video-refused-at-pick.png")
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
            expect(last_reply(page).locator(".content")).to_contain_text("image")
            expect(page.locator("#c-log li.msg.user img.msg-image")).to_be_visible()
            shot(page, "chat-image.png")
            sent = fake.requests()[-1]
            parts = sent["messages"][-1]["content"]
            assert parts[0] == {"type": "text", "text": "What is in this picture?"}, parts
            image = [p for p in parts if p.get("type") == "image_url"]
            assert len(image) == 1, parts
            url = image[0]["image_url"]["url"]
            assert url.startswith("data:image/png;base64,"), url[:40]
            assert base64.b64decode(url.split(",", 1)[1]) == picture
            # Sent, the attachment leaves the box; the next message goes as plain text, and the
            # image stays in the conversation (the earlier turn is sent again with it).
            expect(page.locator("#c-image-chosen")).to_be_hidden()
            page.fill("#c-message", "And the colours?")
            page.click("#c-send")
            expect(page.locator("#c-log li.msg.assistant")).to_have_count(2)
            messages = fake.requests()[-1]["messages"]
            assert messages[-1]["content"] == "And the colours?"
            assert messages[0]["content"][1]["image_url"]["url"] == url
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
            confirm_in_page(page, "Make a new secret")
            expect(page.locator("#flash")).to_contain_text("New signing secret")
            rotated = page.locator("#wh-secret-value").input_value()
            assert rotated.startswith("whsec_") and rotated != secret
            listed = httpx.get(f"{srv.base_url}/v1/webhooks", headers={"Authorization": f"Bearer {srv.api_key}"}).json()
            assert [e["id"] for e in listed["data"]] == [endpoint_id]
            assert "secret" not in listed["data"][0]

            # Delete.
            page.locator(f"#wh-{endpoint_id}").get_by_role("button", name=f"Delete {endpoint_id}").click()
            confirm_in_page(page, "Delete")
            expect(page.locator(f"#wh-{endpoint_id}")).to_have_count(0)
            expect(page.locator("#wh-empty")).to_be_visible()
            expect(page.locator("#wh-secret")).to_be_hidden()
            listed = httpx.get(f"{srv.base_url}/v1/webhooks", headers={"Authorization": f"Bearer {srv.api_key}"}).json()
            assert listed["data"] == []
            context.close()
    finally:
        receiver.stop()


# --- Round 2: the fold, usage, Japanese, translation, dead ends, accessibility -------------------

@pytest.mark.parametrize("width,height", [(1366, 768), (375, 812)])
def test_new_video_create_is_above_the_fold(site, browser, width, height):
    context, page = new_page(browser, width=width, height=height)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#new")
    page.select_option("#f-model", "reel-1")
    expect(page.locator("#quote-amount")).to_have_text("0.40 USD")
    assert page.evaluate("window.scrollY") == 0
    for sel in ["#f-model", "#f-seconds", "#f-aspect", "#f-prompt", "#quote-amount", "#create"]:
        b = page.locator(sel).bounding_box()
        assert b and b["y"] >= 0 and b["y"] + b["height"] <= height, (sel, b)
    # The range is shown, and every aspect ratio (Auto included) is explained.
    expect(page.locator("#seconds-hint")).to_have_text("4–15 seconds")
    texts = page.locator("#f-aspect option").all_inner_texts()
    assert any(t.startswith("Auto: the engine picks") for t in texts), texts
    assert all(" " in t for t in texts), texts
    shot(page, f"new-video-{width}.png")
    context.close()


# A cell breaks inside a word only with overflow-wrap/word-break allowing it; with both normal
# a too-long word overflows its cell instead, which scrollWidth shows.
NO_WORD_BREAKS = """() => [...document.querySelectorAll('#page-usage th, #page-usage td')].flatMap(c => {
    const s = getComputedStyle(c);
    const bad = [];
    if (s.overflowWrap !== 'normal' || s.wordBreak !== 'normal') bad.push(['style', c.textContent, s.overflowWrap, s.wordBreak]);
    if (c.scrollWidth > c.clientWidth + 1) bad.push(['overflow', c.textContent, c.scrollWidth, c.clientWidth]);
    return bad;
})"""


def test_usage_chart_has_a_bar_per_day_with_charges_and_no_cell_breaks_inside_a_word(site, browser):
    # Charges today: a chat turn (tokens) and a 4 s render (video seconds) through the API.
    h = {"Authorization": f"Bearer {site.api_key}"}
    r = httpx.post(f"{site.base_url}/v1/chat/completions", headers=h,
                   json={"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
    assert r.status_code == 200, r.text
    site.agree(site.user, site.org)
    body = {"model": "reel-1", "prompt": "A lantern in the fog", "seconds": 4, "aspect_ratio": "16:9"}
    r = httpx.post(f"{site.base_url}/v1/videos", json=body, headers=h)
    assert r.status_code == 200, r.text
    deadline = time.time() + 120
    while httpx.get(f"{site.base_url}/v1/videos/{r.json()['id']}", headers=h).json()["status"] != "completed":
        assert time.time() < deadline
        time.sleep(0.5)
    for width in (1366, 375):
        context, page = new_page(browser, width=width, height=900)
        sign_in(page, site)
        page.goto(f"{site.base_url}/console/#usage")
        expect(page.locator("#u-svg")).to_be_visible()
        usage = page.evaluate("fetch('/console/api/usage').then(r => r.json())")
        days = {b["start_time"] for b in usage["days"] if any(float(x["amount"]) > 0 for x in b["results"])}
        assert days
        expect(page.locator("#u-svg g.bar")).to_have_count(len(days))
        expect(page.locator("#u-tokens")).not_to_have_text("0")
        # One money format: two decimals at least, then the code.
        for text in page.locator("#page-usage .amount").all_inner_texts():
            assert re.fullmatch(r"-?\d+\.\d{2,6} USD", text), text
        assert page.evaluate(NO_WORD_BREAKS) == []
        page.click("#u-by-kind")
        expect(page.locator("#u-legend")).to_contain_text("Video seconds")
        expect(page.locator("#u-svg g.bar")).to_have_count(len(days))
        shot(page, f"usage-{width}.png")
        context.close()


def test_a_server_error_shows_in_japanese(site, browser):
    context, page = new_page(browser, locale="ja-JP")
    sign_in(page, site, person(site, "ja-errors@example.test"))
    page.goto(f"{site.base_url}/console/#new")
    page.select_option("#f-model", "reel-1")
    # By code: creating before agreeing to the terms (agreement_required).
    page.fill("#f-prompt", "A quiet harbour at dawn")
    page.click("#create")
    expect(page.locator("#err-form")).to_have_text("動画を作成する前に動画サービス利用規約に同意してください。")
    # A problem the page finds itself, in Japanese too.
    page.fill("#f-prompt", "")
    page.click("#create")
    expect(page.locator("#err-prompt")).to_have_text("プロンプトを入力してください（動画に映す内容）。")
    # Status words differ from action words.
    texts = page.evaluate("[TEXT.ja.status_canceled, TEXT.ja.cancel_video, TEXT.ja.cancel]")
    assert texts[0] not in texts[1:], texts
    shot(page, "new-video-ja-error.png")
    context.close()


def test_a_japanese_prompt_is_warned_about_on_a_server_without_a_translator(site, browser):
    context, page = new_page(browser)
    sign_in(page, site)
    page.goto(f"{site.base_url}/console/#new")
    page.select_option("#f-model", "reel-1")
    before = httpx.get(f"{site.base_url}/v1/videos", headers={"Authorization": f"Bearer {site.api_key}"}).json()["data"]
    # Dialogue alone may be Japanese: no warning.
    page.fill("#f-prompt", "A cat on a roof says <d>こんにちは</d>")
    expect(page.locator("#translate-warning")).to_be_hidden()
    page.fill("#f-prompt", "屋根の上の猫")
    expect(page.locator("#translate-warning")).to_be_visible()
    expect(page.locator("#translate-warning")).to_contain_text("cannot translate Japanese prompts")
    page.click("#create")
    expect(page.locator("#err-prompt")).to_contain_text("cannot translate Japanese prompts")
    expect(page.locator("#page-new")).to_be_visible()
    shot(page, "new-video-no-translator.png")
    after = httpx.get(f"{site.base_url}/v1/videos", headers={"Authorization": f"Bearer {site.api_key}"}).json()["data"]
    assert len(after) == len(before)
    context.close()


def test_translation_unavailable_without_a_translator_says_so_plainly(site):
    """Through the API (which does not stop the prompt): the job fails translation_unavailable,
    and its message says this server has no translator, not 'resubmit later'."""
    site.agree(site.user, site.org)
    h = {"Authorization": f"Bearer {site.api_key}"}
    body = {"model": "reel-1", "prompt": "屋根の上の猫", "seconds": 4, "aspect_ratio": "16:9"}
    r = httpx.post(f"{site.base_url}/v1/videos", json=body, headers=h)
    assert r.status_code == 200, r.text
    video_id = r.json()["id"]
    deadline = time.time() + 60
    while time.time() < deadline:
        v = httpx.get(f"{site.base_url}/v1/videos/{video_id}", headers=h).json()
        if v["status"] in ("failed", "completed", "canceled"):
            break
        time.sleep(0.5)
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "translation_unavailable"
    assert "no translator" in v["error"]["message"] and "resubmit later" not in v["error"]["message"], v


def test_a_used_link_and_the_signed_out_page_lead_somewhere(site, browser):
    """A used link's page, and the page after signing out, say how to get back in on this
    server: locally, the `reelgate admin console-link` command, with the ids of the person who
    last signed in on this browser once there was one."""
    context, page = new_page(browser)
    link = site.console_link(site.user, site.org)
    assert httpx.get(link, follow_redirects=False).status_code == 303  # used once
    r = page.goto(link)
    assert r.status == 401
    expect(page.locator("#signin-refused")).to_be_visible()
    expect(page.locator("header.top .brand")).to_be_visible()
    expect(page.locator("#signin-cli")).to_be_visible()
    # Nobody has signed in on this browser yet: the command with what to fill in.
    expect(page.locator("#signin-command")).to_have_value("reelgate admin console-link --user USER_ID --org ORG_ID")
    expect(page.locator("#signin-cli-who")).to_contain_text("user and organization ids")
    shot(page, "link-refused.png")
    page.click("#lang")
    expect(page.locator("#signin-refused")).to_contain_text("期限切れ")
    expect(page.locator("#signin-cli")).to_contain_text("コマンドライン")
    shot(page, "link-refused-ja.png")
    page.click("#lang")
    # Signed in, then out: the exact command for this person, which makes a link that works.
    sign_in(page, site)
    page.click("#signout")
    expect(page.locator("#page-signin")).to_be_visible()
    command = f"reelgate admin console-link --user {site.user} --org {site.org}"
    expect(page.locator("#signin-command")).to_have_value(command)
    expect(page.locator("#signin-cli-who")).to_contain_text("last signed in on this browser")
    shot(page, "signed-out.png")
    link = site.admin(*command.split()[2:], "--public-url", site.base_url)["url"]
    page.goto(link)
    expect(page.locator("#nav")).to_be_visible()
    context.close()


def axe_violations(page):
    page.add_script_tag(path=AXE)
    result = page.evaluate("""() => axe.run(document, {resultTypes: ['violations'],
        runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})""")
    return [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:5])
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def any_video(site):
    """A completed video of the organization's: the newest, or a new one."""
    headers = {"Authorization": f"Bearer {site.api_key}"}
    listed = httpx.get(f"{site.base_url}/v1/videos?status=completed", headers=headers, timeout=30).json()["data"]
    if listed:
        return listed[0]["id"]
    site.agree(site.user, site.org)
    made = httpx.post(f"{site.base_url}/v1/videos", headers=headers, timeout=30, json={
        "model": "reel-1", "prompt": "A kite over a beach", "seconds": 4, "aspect_ratio": "16:9"})
    assert made.status_code == 200, made.text
    return made.json()["id"]


def test_axe_finds_no_serious_violations_on_any_page(site, browser):
    assert os.path.exists(AXE), f"{AXE} is missing (scripts/test-tools.sh installs axe-core)"
    found = {}
    for width, locale in [(1366, "en-US"), (375, "ja-JP")]:
        # The page's CSP refuses inline scripts, and add_script_tag injects one: axe alone gets in.
        context, page = new_page(browser, locale=locale, width=width, height=800, bypass_csp=True)
        page.goto(f"{site.base_url}/console/")
        expect(page.locator("#page-signin")).to_be_visible()
        found[f"signin@{width}"] = axe_violations(page)
        sign_in(page, site)
        for name in PAGES:
            page.goto(f"{site.base_url}/console/#{name}")
            expect(page.locator(f"#page-{name}")).to_be_visible()
            # With its "View code" open where it has one.
            code = {"new": "#nv-code", "chat": "#cc-code"}.get(name)
            if code:
                page.click(f"{code} summary")
                expect(page.locator(f"{code}-text")).not_to_be_empty()
            page.wait_for_load_state("networkidle")
            found[f"{name}@{width}"] = axe_violations(page)
        # A video's own page, with its View code and the extend form open.
        video = any_video(site)
        wait_done(site, video)
        page.goto(f"{site.base_url}/console/videos/{video}")
        expect(page.locator("#page-video")).to_be_visible()
        # The first action button of a finished video opens its first operation's form.
        page.locator("#vp-actions button").first.click()
        expect(page.locator("#vp-op-form")).to_be_visible()
        page.click("#vp-code summary")
        page.wait_for_load_state("networkidle")
        found[f"video@{width}"] = axe_violations(page)
        context.close()
    bad = {k: v for k, v in found.items() if v}
    assert not bad, bad


def test_webhooks_page_sends_a_test_event_and_shows_the_delivery(browser):
    """Each endpoint's "Send test event" POSTs one signed `webhook.test` event now; the result
    (status, time, event id) appears inside the card in the line kept for it (nothing above it
    moves), a second test at once is refused there, and on this local server a refused URL says
    how to allow a receiver on this machine, in English and in Japanese."""
    receiver = Receiver()
    try:
        with serving(env={"REELGATE_FETCH_ALLOW": "127.0.0.1"}) as srv:
            context, page = new_page(browser)
            sign_in(page, srv)
            page.click("nav a[href='#webhooks']")
            expect(page.locator("#page-webhooks")).to_be_visible()
            page.fill("#wh-url", f"{receiver.url}/test/console")
            page.click("#wh-create")
            expect(page.locator("#wh-secret")).to_be_visible()
            secret = page.locator("#wh-secret-value").input_value()
            card = page.locator("#wh-list li.card")
            expect(card).to_have_count(1)
            endpoint_id = card.get_attribute("id").removeprefix("wh-")
            result = page.locator(f"#wh-test-{endpoint_id}")
            button = card.get_by_role("button", name=f"Send test event {endpoint_id}")
            # Where the card and its button sit in the page (not the viewport, which a click scrolls).
            place = "el => { const r = el.getBoundingClientRect(); return [r.top + window.scrollY, r.height]; }"
            before = (button.evaluate(place), card.evaluate(place))

            button.click()
            expect(result).to_contain_text("Test event delivered: HTTP 204 in")
            expect(result.locator(".badge")).to_have_text("delivered")
            # The result took the line kept for it: nothing moved, the card kept its size.
            assert (button.evaluate(place), card.evaluate(place)) == before
            [(headers, body, status)] = receiver.received("/test/console")
            assert status == 204 and verify(secret, headers, body)
            assert json.loads(body)["type"] == "webhook.test"
            expect(result).to_contain_text(headers["webhook-id"])
            expect(card).to_contain_text("No deliveries yet.")  # a test is not a delivery
            shot(page, "webhooks-test-event.png")

            # At once again: refused in the same place, nothing sent.
            button.click()
            expect(result.locator(".field-error")).to_contain_text("less than 5 seconds ago")
            assert len(receiver.received("/test/console")) == 1

            # A private address is refused; this local server says how to allow a local receiver.
            page.fill("#wh-url", "http://10.0.0.1/hooks")
            page.click("#wh-create")
            expect(page.locator("#err-url")).to_contain_text("REELGATE_FETCH_ALLOW=localhost,127.0.0.1")
            expect(page.locator("#err-url")).to_contain_text("start it again")
            page.click("#lang")
            expect(card.get_by_role("button", name=f"テストイベントを送信 {endpoint_id}")).to_be_visible()
            page.click("#wh-create")
            expect(page.locator("#err-url")).to_contain_text("REELGATE_FETCH_ALLOW=localhost,127.0.0.1")
            expect(page.locator("#err-url")).to_contain_text("起動し直して")
            time.sleep(5)
            card.get_by_role("button", name=f"テストイベントを送信 {endpoint_id}").click()
            expect(result).to_contain_text("テストイベントを配信しました: HTTP 204")
            shot(page, "webhooks-test-event-ja.png")
            page.click("#lang")
            context.close()
    finally:
        receiver.stop()
