"""The hosted video providers' engine kinds (`veo`, `runway`, `luma`, `fal`, `replicate`, `xai`) through
the real `reelgate serve` binary, each against its fake under tests/engines/fakes/ (written from
that provider's documentation; see each module). For every provider: a text job and a
first-frame job complete to the contract (768p H.264 in the job's ratio, AAC, the seconds asked)
and are charged exactly the quote; a content refusal ends `moderation_blocked`, unbilled; a
cancel ends `canceled`; a provider that answers 503 and then recovers completes; and a render
message delivered again while the provider is slow to answer starts no second render."""

import json
import os
import subprocess
import tempfile
import time
from decimal import Decimal

import httpx
import openai
import pytest
from conftest import DEFAULT_CATALOG, auth, content, org_state, upload, wait_terminal
from fakes import fal, luma, replicate, runway, veo, xai
from fakes.base import REFUSE_WORD
from harness import LocalServer
from test_engines import ffprobe_streams, png

PROVIDERS = {"veo": veo.Fake, "runway": runway.Fake, "luma": luma.Fake, "fal": fal.Fake, "replicate": replicate.Fake,
             "xai": xai.Fake}
# While developing one provider: HOSTED_ONLY=veo runs just that one.
if os.environ.get("HOSTED_ONLY"):
    PROVIDERS = {k: v for k, v in PROVIDERS.items() if k in os.environ["HOSTED_ONLY"].split(",")}


def model_id(kind):
    return f"hosted-{kind}"


@pytest.fixture(scope="module")
def hosted():
    fakes = {kind: cls() for kind, cls in PROVIDERS.items()}
    extra = ""
    for kind, fake in fakes.items():
        extra += f"""
[[video_models]]
id = "{model_id(kind)}"
name = "Hosted {kind}"
description = "Rendered by {kind} (a fake of its API)."
engine = "{kind}-fake"
plans = ["starter", "pro", "enterprise"]
pricing = [{{ resolution = "768p", per_second = "0.10", currency = "usd" }}]

{fake.engine_toml(f"{kind}-fake")}
"""
    with open(DEFAULT_CATALOG, encoding="utf-8") as f:
        base = f.read()
    head, sep, terms = base.partition("\n[[terms]]")
    with tempfile.TemporaryDirectory() as data_dir:
        path = os.path.join(data_dir, "catalog.toml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(head + extra + sep + terms)
        env = {
            "REELGATE_CATALOG": path,
            "REELGATE_RENDER_POLL_SECS": "1",
            # A render message comes back after 3 s while its worker is still busy.
            "REELGATE_RENDER_VISIBILITY_SECS": "3",
            # The fakes' CDNs are on this machine: let the guarded fetcher reach them.
            "REELGATE_FETCH_ALLOW": "127.0.0.1",
        }
        for fake in fakes.values():
            env[fake.key_env] = fake.key
        srv = LocalServer(data_dir, env=env).start()
        try:
            srv.agree(srv.user, srv.org)
            srv.admin("credits", "add", "--org", srv.org, "--amount", "100")
            srv.admin("plan", "set", "--org", srv.org, "--plan", "pro")
            yield srv, fakes
        finally:
            srv.stop()
            for fake in fakes.values():
                fake.stop()


def create(server, body):
    r = httpx.post(f"{server.base_url}/v1/videos", headers=auth(server.api_key), json=body, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def assert_contract(server, tmp_path, job, seconds, size):
    mp4 = content(server, job["id"])
    video, audio, duration = ffprobe_streams(mp4, tmp_path)
    assert video["codec_name"] == "h264"
    assert (video["width"], video["height"]) == size
    assert audio is not None and audio["codec_name"] == "aac", audio
    assert abs(duration - seconds) <= 0.5, duration
    return mp4


def two_tone(x, y):
    """A 1280x720 frame: warm above, cool below."""
    return (230, 120, 40) if y < 360 else (30, 90, 220)


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_text_job_completes_to_the_contract(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    before, creates = org_state(server), fake.creates
    job = create(server, {"model": model_id(kind), "prompt": "a paper boat on a pond", "seconds": 4, "aspect_ratio": "16:9"})
    done = wait_terminal(server, job["id"])
    assert done["status"] == "completed", done
    assert fake.creates == creates + 1
    assert_contract(server, tmp_path, job, 4, (1366, 768))
    after = org_state(server)
    assert Decimal(after["balance"]) == Decimal(before["balance"]) - Decimal(done["cost"])
    # The provider key went to the API only; the CDN saw no credential.
    assert all(not any(h.lower() in ("authorization", "x-goog-api-key") for h in r[2]) for r in fake.cdn_requests)


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_first_frame_job_completes_and_starts_on_the_frame(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    image = upload(server, png(1280, 720, two_tone), "vision", "first.png")
    frames = len(fake.first_frames)
    job = create(server, {"model": model_id(kind), "prompt": "a harbour at dawn", "seconds": 4, "aspect_ratio": "9:16",
                          "image_reference": [{"file_id": image, "role": "first_frame"}]})
    done = wait_terminal(server, job["id"])
    assert done["status"] == "completed", done
    assert len(fake.first_frames) == frames + 1, "the provider got the first frame"
    mp4 = assert_contract(server, tmp_path, job, 4, (768, 1366))
    path = tmp_path / "first.mp4"
    path.write_bytes(mp4)
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-vframes", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        check=True, capture_output=True,
    ).stdout
    w, h = 768, 1366
    top = raw[((h // 8) * w + w // 2) * 3:((h // 8) * w + w // 2) * 3 + 3]
    bottom = raw[((7 * h // 8) * w + w // 2) * 3:((7 * h // 8) * w + w // 2) * 3 + 3]
    assert top[0] > 150 and top[2] < 120, top
    assert bottom[2] > 150 and bottom[0] < 120, bottom


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_content_refusal_ends_moderation_blocked_unbilled(hosted, kind):
    server, fakes = hosted
    before = org_state(server)
    job = create(server, {"model": model_id(kind), "prompt": f"a {REFUSE_WORD} at night", "seconds": 4, "aspect_ratio": "16:9"})
    done = wait_terminal(server, job["id"])
    assert done["status"] == "failed", done
    assert done["error"]["code"] == "moderation_blocked", done
    # The sentence names no provider, engine or internal detail.
    assert kind not in done["error"]["message"].lower() and "http" not in done["error"]["message"].lower()
    after = org_state(server)
    assert (Decimal(after["balance"]), Decimal(after["reserved"])) == (Decimal(before["balance"]), Decimal(before["reserved"]))


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_cancel_ends_canceled(hosted, kind):
    server, fakes = hosted
    fake = fakes[kind]
    before = org_state(server)
    job = create(server, {"model": model_id(kind), "prompt": "a slow sunrise", "seconds": 4, "aspect_ratio": "16:9"})
    deadline = time.time() + 60
    while True:
        v = httpx.get(f"{server.base_url}/v1/videos/{job['id']}", headers=auth(server.api_key)).json()
        if v["status"] == "in_progress":
            break
        assert v["status"] not in ("completed", "failed", "canceled") and time.time() < deadline, v
        time.sleep(0.2)
    r = httpx.post(f"{server.base_url}/v1/videos/{job['id']}/cancel", headers=auth(server.api_key), timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    if fake.cancel_supported:
        deadline = time.time() + 30
        while not fake.cancels and time.time() < deadline:
            time.sleep(0.2)
        assert fake.cancels, "the cancel reached the provider"
    after = org_state(server)
    assert (Decimal(after["balance"]), Decimal(after["reserved"])) == (Decimal(before["balance"]), Decimal(before["reserved"]))


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_provider_that_answers_503_then_recovers_completes(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    fake.unavailable_next = 2
    job = create(server, {"model": model_id(kind), "prompt": "a lantern festival", "seconds": 4, "aspect_ratio": "1:1"})
    done = wait_terminal(server, job["id"])
    assert done["status"] == "completed", done
    assert fake.unavailable_next == 0
    assert_contract(server, tmp_path, job, 4, (768, 768))


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_render_message_delivered_twice_starts_one_render(hosted, kind):
    server, fakes = hosted
    fake = fakes[kind]
    creates = fake.creates
    # The provider takes 7 s to answer the create: the queue delivers the message again (after
    # 3 s) while the first delivery waits.
    fake.create_delay = 7.0
    job = create(server, {"model": model_id(kind), "prompt": "a kite over dunes", "seconds": 4, "aspect_ratio": "16:9"})
    done = wait_terminal(server, job["id"])
    assert done["status"] == "completed", done
    assert fake.creates == creates + 1, "one render was started, not two"


# --- operations on an earlier video ------------------------------------------------------------


def sdk(server):
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.api_key, max_retries=0)


def operations(fake):
    return getattr(fake, "OPERATIONS", {"remix": "chained", "extension": "chained", "edit": "unavailable"})


SOURCES = {}


def completed(server, kind, prompt, seconds=4, ratio="16:9"):
    """A completed video on the kind's engine. The operation tests only read their source, so
    one per kind and length serves them all (each render costs the suite seconds)."""
    key = (id(server), kind, seconds, ratio)
    if key not in SOURCES:
        job = create(server, {"model": model_id(kind), "prompt": prompt, "seconds": seconds, "aspect_ratio": ratio})
        done = wait_terminal(server, job["id"])
        assert done["status"] == "completed", done
        SOURCES[key] = done
    return SOURCES[key]


def billed_exactly(server, before, done):
    after = org_state(server)
    assert Decimal(before["balance"]) - Decimal(after["balance"]) == Decimal(done["cost"])
    assert Decimal(after["reserved"]) == Decimal(before["reserved"])


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_the_models_list_shows_each_operation_native_or_chained(hosted, kind):
    server, fakes = hosted
    r = httpx.get(f"{server.base_url}/v1/videos/models", headers=auth(server.api_key), timeout=30)
    assert r.status_code == 200, r.text
    model = next(m for m in r.json()["data"] if m["id"] == model_id(kind))
    assert model["operations"] == operations(fakes[kind]), model


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_native_extension_reaches_the_provider_and_completes(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    if operations(fake)["extension"] != "native":
        pytest.skip(f"{kind} extends by chaining")
    # A source the provider rendered at exactly its seconds (a provider continues its own
    # render from its end, so a trimmed one is chained instead).
    seconds = getattr(fake, "EXTENDABLE_SECONDS", 4)
    source = completed(server, kind, "a paper boat drifts", seconds=seconds)
    ops, frames, before = len(fake.native_ops), len(fake.first_frames), org_state(server)
    extension = sdk(server).videos.extend(prompt="the boat drifts under a bridge", seconds="4", video=openai.omit,
                                          extra_body={"video": {"id": source["id"]}})
    done = wait_terminal(server, extension.id)
    assert done["status"] == "completed", done
    assert [op["operation"] for op in fake.native_ops[ops:]] == ["extension"], fake.native_ops[ops:]
    assert len(fake.first_frames) == frames, "not chained onto a frame"
    assert_contract(server, tmp_path, done, seconds + 4, (1366, 768))
    billed_exactly(server, before, done)
    assert Decimal(done["cost"]) == Decimal("0.40"), "the segment's seconds are billed"


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_native_edit_and_remix_reach_the_provider_and_complete(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    native = [op for op in ("edit", "remix") if operations(fake)[op] == "native"]
    if not native:
        pytest.skip(f"{kind} has no video-to-video")
    source = completed(server, kind, "a quiet canal")
    client = sdk(server)
    for op in native:
        ops, before = len(fake.native_ops), org_state(server)
        if op == "edit":
            made = client.videos.edit(prompt="the canal in snow", video=openai.omit,
                                      extra_body={"video": {"id": source["id"]}})
        else:
            made = client.videos.remix(source["id"], prompt="the canal at night")
        done = wait_terminal(server, made.id)
        assert done["status"] == "completed", (op, done)
        seen = fake.native_ops[ops:]
        assert len(seen) == 1, seen
        if "content_type" in seen[0]:
            assert seen[0]["content_type"] == "video/mp4", "the source is served as what it is"
        assert_contract(server, tmp_path, done, 4, (1366, 768))
        billed_exactly(server, before, done)


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_what_the_provider_cannot_extend_natively_is_chained_onto_the_last_frame(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    client = sdk(server)
    source = completed(server, kind, "a tram at dawn")
    if operations(fake)["extension"] == "native" and not getattr(fake, "OWN_RENDERS_ONLY", False):
        pytest.skip(f"{kind} extends any video natively")
    ops, frames, before = len(fake.native_ops), len(fake.first_frames), org_state(server)
    if operations(fake)["extension"] == "native":
        # The provider extends only its own videos: a file it never made is chained.
        clip = content(server, source["id"])
        made = client.videos.extend(prompt="the tram turns", seconds="4", video=("tram.mp4", clip, "video/mp4"),
                                    extra_body={"model": model_id(kind)})
    else:
        made = client.videos.extend(prompt="the tram turns", seconds="4", video=openai.omit,
                                    extra_body={"video": {"id": source["id"]}})
    done = wait_terminal(server, made.id)
    assert done["status"] == "completed", done
    assert fake.native_ops[ops:] == [], "no native operation"
    assert len(fake.first_frames) == frames + 1, "the segment opened on the source's last frame"
    assert_contract(server, tmp_path, done, 8, (1366, 768))
    billed_exactly(server, before, done)


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_provider_refusal_of_an_operation_ends_moderation_blocked_unbilled(hosted, kind):
    server, fakes = hosted
    fake = fakes[kind]
    native = [op for op in ("extension", "edit") if operations(fake)[op] == "native"]
    if not native:
        pytest.skip(f"{kind} has no native operation")
    source = completed(server, kind, "a lighthouse", seconds=getattr(fake, "EXTENDABLE_SECONDS", 4))
    before = org_state(server)
    client = sdk(server)
    prompt = f"the {REFUSE_WORD} appears"
    if native[0] == "extension":
        made = client.videos.extend(prompt=prompt, seconds="4", video=openai.omit,
                                    extra_body={"video": {"id": source["id"]}})
    else:
        made = client.videos.edit(prompt=prompt, video=openai.omit, extra_body={"video": {"id": source["id"]}})
    done = wait_terminal(server, made.id)
    assert done["status"] == "failed" and done["error"]["code"] == "moderation_blocked", done
    after = org_state(server)
    assert (Decimal(after["balance"]), Decimal(after["reserved"])) == (Decimal(before["balance"]), Decimal(before["reserved"]))


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_a_character_is_drawn_as_reference_images_where_the_provider_takes_them(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    client = sdk(server)
    source = completed(server, kind, "a red kite")
    clip = content(server, source["id"])
    character = client.videos.create_character(name=f"Kite {kind}", video=("kite.mp4", clip, "video/mp4"))
    before = org_state(server)
    body = {"model": model_id(kind), "prompt": "the kite over a beach", "seconds": 4, "aspect_ratio": "16:9",
            "characters": [character.id]}
    if not getattr(fake, "REFERENCES", False):
        r = httpx.post(f"{server.base_url}/v1/videos", headers=auth(server.api_key), json=body, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "characters", r.text
        return
    counts = len(fake.reference_counts)
    done = wait_terminal(server, create(server, body)["id"])
    assert done["status"] == "completed", done
    assert fake.reference_counts[counts:] and fake.reference_counts[-1] >= 1, fake.reference_counts
    assert_contract(server, tmp_path, done, 4, (1366, 768))
    billed_exactly(server, before, done)


@pytest.mark.parametrize("kind", list(PROVIDERS))
def test_an_edit_longer_than_the_provider_takes_is_refused_at_create(hosted, kind, tmp_path):
    server, fakes = hosted
    fake = fakes[kind]
    if operations(fake)["edit"] != "native":
        pytest.skip(f"{kind} does not edit")
    from conftest import make_mp4

    # 12 s: past xAI's 8.7 s, Luma's and Runway's 10 s (and every model's 10 s renders).
    path = tmp_path / "long.mp4"
    make_mp4(str(path), 640, 360, 12)
    before, creates = org_state(server), fake.creates
    with pytest.raises(openai.BadRequestError) as e:
        sdk(server).videos.edit(prompt="in snow", video=("long.mp4", path.read_bytes(), "video/mp4"),
                                extra_body={"model": model_id(kind)})
    assert e.value.body["param"] == "video", e.value.body
    assert fake.creates == creates, "nothing reached the provider"
    after = org_state(server)
    assert (after["balance"], after["reserved"]) == (before["balance"], before["reserved"]), "nothing reserved"
