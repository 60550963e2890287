"""Per-model input capabilities, a reference engine that shows what the caller sent (first frame,
dialogue captions), and the `openai_videos` engine kind against a fake OpenAI-shaped server and
against a second reelgate."""

import json
import os
import struct
import subprocess
import zlib

import httpx
import pytest
from conftest import auth, content, create, org_state, start_server, upload, wait_terminal

W, H = 1366, 768


def png(width: int, height: int, pixel) -> bytes:
    """A PNG whose pixel (x, y) is pixel(x, y) -> (r, g, b)."""
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def first_frame_picture(x, y):
    """Large shapes a video codec keeps: quadrants of colour, a diagonal band, a soft gradient."""
    r = 200 if x < W // 2 else 40
    g = 180 if y < H // 2 else 60
    b = (x * 255) // W
    if abs(x - y * W // H) < 80:
        r, g, b = 250, 250, 250
    return (r, g, b)


def frames(mp4: bytes, tmp_path, times, name="clip"):
    """Decoded frames (raw RGB24 bytes) at the given frame indices, by ffmpeg."""
    path = tmp_path / f"{name}.mp4"
    path.write_bytes(mp4)
    out = []
    for index in times:
        raw = subprocess.run(
            [
                "ffmpeg", "-v", "error", "-i", str(path), "-vf", f"select=eq(n\\,{index})", "-vframes", "1",
                "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
            ],
            check=True,
            capture_output=True,
        ).stdout
        assert len(raw) == W * H * 3, len(raw)
        out.append(raw)
    return out


def mean_abs_diff(a: bytes, b: bytes, rows=range(H)) -> float:
    """Mean absolute difference per channel over the given rows (every 3rd pixel)."""
    total = n = 0
    for y in rows:
        start = y * W * 3
        ra, rb = a[start:start + W * 3], b[start:start + W * 3]
        for i in range(0, W * 3, 9):
            total += abs(ra[i] - rb[i]) + abs(ra[i + 1] - rb[i + 1]) + abs(ra[i + 2] - rb[i + 2])
            n += 3
    return total / n


def save_png(raw: bytes, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png(W, H, lambda x, y: raw[(y * W + x) * 3:(y * W + x) * 3 + 3]))


def probe(mp4: bytes, tmp_path) -> dict:
    path = tmp_path / "probe.mp4"
    path.write_bytes(mp4)
    return json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", "-show_format", str(path)],
            check=True, capture_output=True, text=True,
        ).stdout
    )


def assert_768p_with_audio(mp4: bytes, tmp_path, seconds: int, size=(W, H)):
    p = probe(mp4, tmp_path)
    streams = {s["codec_type"]: s for s in p["streams"]}
    assert (streams["video"]["width"], streams["video"]["height"]) == size
    assert streams["audio"]["codec_name"] == "aac"
    assert abs(float(p["format"]["duration"]) - seconds) < 0.5


# --- capabilities -------------------------------------------------------------------------------


def test_the_models_list_says_what_each_model_honours(server):
    r = httpx.get(f"{server.base_url}/v1/videos/models", headers=auth(server.api_key))
    models = {m["id"]: m for m in r.json()["data"]}
    assert models["reel-text"]["inputs"] == []
    assert models["reel-text"]["aspect_ratios"] == ["16:9", "9:16"]
    assert models["far-openai"]["inputs"] == ["first_frame"]
    # The seconds a create may ask for stop at the engine's longest native clip (12 s for sora-2);
    # Nova Reel's 6 s steps reach past the API's 15 s.
    assert models["far-openai"]["seconds"] == {"min": 4, "max": 12}
    assert models["far-nova"]["seconds"] == {"min": 4, "max": 15}
    assert models["far-nova"]["native_audio"] is False
    assert models["reel-1"]["seconds"] == {"min": 4, "max": 15}
    assert set(models["reel-1"]["inputs"]) == {
        "first_frame", "last_frame", "reference_images", "reference_videos", "reference_audio"
    }
    assert "Auto" in models["reel-1"]["aspect_ratios"]


@pytest.mark.parametrize(
    "model,extra,param",
    [
        ("reel-text", "frame", "image_reference"),
        ("reel-text", "refs", "references.images"),
        # A character is reference images: refused naming characters, before it is looked up.
        ("reel-text", "characters", "characters"),
        ("reel-text", "ratio", "aspect_ratio"),
        ("far-openai", "last", "image_reference"),
        ("far-openai", "long", "seconds"),
    ],
)
def test_an_input_the_model_does_not_honour_is_refused_before_anything_is_reserved(server, model, extra, param):
    image = upload(server, png(8, 8, lambda x, y: (x * 30, y * 30, 90)), "vision", "f.png")
    body = {"model": model, "prompt": "a quiet pier", "seconds": 4, "aspect_ratio": "16:9"}
    if extra == "frame":
        body["image_reference"] = [{"file_id": image, "role": "first_frame"}]
    elif extra == "last":
        body["image_reference"] = [{"file_id": image, "role": "last_frame"}]
    elif extra == "long":
        # 13 s maps onto no native duration of an engine whose longest clip is 12 s.
        body["seconds"] = 13
    elif extra == "refs":
        body["references"] = {"images": [{"file_id": image}]}
    elif extra == "characters":
        body["characters"] = ["char_01h00000000000000000000000"]
    else:
        body["aspect_ratio"] = "1:1"
    before = org_state(server)
    listed = httpx.get(f"{server.base_url}/v1/videos", headers=auth(server.api_key)).json()["data"]
    r = create(server, body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param, err
    assert model in err["message"]
    after = org_state(server)
    assert (after["balance"], after["reserved"]) == (before["balance"], before["reserved"])
    assert httpx.get(f"{server.base_url}/v1/videos", headers=auth(server.api_key)).json()["data"] == listed


# --- the reference engine shows its inputs ------------------------------------------------------

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "engine")


def test_a_first_frame_starts_the_clip_and_dialogue_is_captioned(server, tmp_path):
    from pathlib import Path

    picture = png(W, H, first_frame_picture)
    expected = b"".join(bytes(first_frame_picture(x, y)) for y in range(H) for x in range(W))
    image = upload(server, picture, "vision", "first.png")
    base = {"model": "reel-1", "seconds": 4, "aspect_ratio": "16:9",
            "image_reference": [{"file_id": image, "role": "first_frame"}]}
    plain = create(server, {**base, "prompt": "a harbour at dusk, slow camera"}).json()
    talk = create(
        server, {**base, "prompt": "a harbour at dusk, slow camera <d>We sail at dawn.</d> <d>明日の朝、出航する。</d>"}
    ).json()
    plain, talk = wait_terminal(server, plain["id"]), wait_terminal(server, talk["id"])
    assert plain["status"] == "completed" and talk["status"] == "completed", (plain, talk)
    plain_mp4, talk_mp4 = content(server, plain["id"]), content(server, talk["id"])
    assert_768p_with_audio(plain_mp4, tmp_path, 4)

    # The first decoded frame is the first-frame image (H.264 loses a little).
    first, late = frames(plain_mp4, tmp_path, [0, 90], "plain")
    start_diff = mean_abs_diff(first, expected, range(0, H - 8))
    assert start_diff < 6.0, start_diff
    # It moves: later frames are zoomed and panned away from it.
    assert mean_abs_diff(late, expected, range(0, H - 8)) > 2 * start_diff + 3

    # Captions: the lower band differs between the two renders while a line is on screen,
    # the upper part of the picture does not.
    cap_frames = [12, 72]  # 0.5 s (first line) and 3 s (the Japanese line)
    plain_f = frames(plain_mp4, tmp_path, cap_frames, "plain")
    talk_f = frames(talk_mp4, tmp_path, cap_frames, "talk")
    if os.environ.get("SAVE_ENGINE_FRAMES"):
        docs = Path(DOCS)
        save_png(first, docs / "first-frame-t0.png")
        save_png(late, docs / "first-frame-t3.75.png")
        save_png(talk_f[0], docs / "caption-en.png")
        save_png(talk_f[1], docs / "caption-ja.png")
    # The caption band: above the bottom twelfth, up to two lines of 48 px text.
    band = range(H - H // 12 - 110, H - H // 12)
    for a, b in zip(plain_f, talk_f):
        in_band, above = mean_abs_diff(a, b, band), mean_abs_diff(a, b, range(0, H // 2))
        assert in_band > 8 and in_band > 5 * above, (in_band, above)


def test_reference_images_appear_and_a_last_frame_ends_the_clip(server, tmp_path):
    red = upload(server, png(64, 64, lambda x, y: (230, 20, 20)), "vision", "red.png")
    first = upload(server, png(W, H, first_frame_picture), "vision", "first.png")
    last_picture = lambda x, y: (20, 40 + (y * 150) // H, 200)  # noqa: E731
    last = upload(server, png(W, H, last_picture), "vision", "last.png")
    refs = create(server, {"model": "reel-1", "prompt": "a red kite", "seconds": 4, "aspect_ratio": "16:9",
                           "references": {"images": [{"file_id": red}]}}).json()
    fade = create(server, {"model": "reel-1", "prompt": "a long day", "seconds": 4, "aspect_ratio": "16:9",
                           "image_reference": [{"file_id": first, "role": "first_frame"},
                                               {"file_id": last, "role": "last_frame"}]}).json()
    refs, fade = wait_terminal(server, refs["id"]), wait_terminal(server, fade["id"])
    assert refs["status"] == "completed" and fade["status"] == "completed", (refs, fade)
    (card,) = frames(content(server, refs["id"]), tmp_path, [24], "refs")
    # The card sits in the top-left corner: its centre is the reference's red.
    cx, cy = 32 + 100, 32 + 120
    r, g, b = card[(cy * W + cx) * 3:(cy * W + cx) * 3 + 3]
    assert r > 180 and g < 80 and b < 80, (r, g, b)
    (end,) = frames(content(server, fade["id"]), tmp_path, [95], "fade")
    expected_end = b"".join(bytes(last_picture(x, y)) for y in range(H) for x in range(W))
    assert mean_abs_diff(end, expected_end, range(0, H - 8)) < 6.0
    if os.environ.get("SAVE_ENGINE_FRAMES"):
        from pathlib import Path

        save_png(card, Path(DOCS) / "reference-image-card.png")


# --- openai_videos ------------------------------------------------------------------------------


def ffprobe_streams(mp4: bytes, tmp_path) -> tuple[dict, dict, float]:
    p = probe(mp4, tmp_path)
    streams = {s["codec_type"]: s for s in p["streams"]}
    return streams["video"], streams.get("audio"), float(p["format"]["duration"])


def portrait_picture(x, y):
    """A 600x900 portrait frame: warm top half, cool bottom half."""
    return (230, 120, 40) if y < 450 else (30, 90, 220)


@pytest.mark.parametrize(
    "model,ratio,seconds,frame,sent,size",
    [
        # sora-2's documented values only: 6 s renders as "8" and is trimmed; every ratio is
        # cropped from the nearest of its two sizes.
        ("far-openai", "16:9", 4, False, ("4", "1280x720"), (1366, 768)),
        ("far-openai", "9:16", 6, False, ("8", "720x1280"), (768, 1366)),
        ("far-openai", "1:1", 4, False, ("4", "1280x720"), (768, 768)),
        # Auto follows the first frame's shape: a portrait image asks for 720x1280.
        ("far-openai", "Auto", 4, True, ("4", "720x1280"), (768, 1366)),
        # Nova Reel through a gateway: 13 s renders as one 18 s clip, without audio.
        ("far-nova", "16:9", 13, False, ("18", "1280x720"), (1366, 768)),
        ("far-nova", "4:3", 6, True, ("6", "1280x720"), (1024, 768)),
    ],
)
def test_jobs_complete_to_the_contract_whatever_the_engine_renders(
    server, fake_videos, tmp_path, model, ratio, seconds, frame, sent, size
):
    from decimal import Decimal

    body = {"model": model, "prompt": "a paper boat on a pond", "seconds": seconds, "aspect_ratio": ratio}
    if frame:
        image = upload(server, png(600, 900, portrait_picture), "vision", "portrait.png")
        body["image_reference"] = [{"file_id": image, "role": "first_frame"}]
    before = org_state(server)
    job = create(server, body)
    assert job.status_code == 200, job.text
    job = job.json()
    v = wait_terminal(server, job["id"])
    assert v["status"] == "completed", v
    # The engine was asked for its own values only, with the catalog's model name and the job id
    # as the idempotency key.
    post = [s for s in fake_videos.seen if s[0] == "POST"][-1]
    request = json.loads(post[3])
    assert (request["seconds"], request["size"]) == sent, request
    assert request["model"] == {"far-openai": "sora-2", "far-nova": "amazon.nova-reel-v1:1"}[model]
    assert ("input_reference" in request) == frame
    assert post[2].get("Idempotency-Key", post[2].get("idempotency-key")) == job["id"]
    # What the caller gets: H.264 at 768p in the job's orientation, AAC, the seconds asked.
    mp4 = content(server, job["id"])
    video, audio, duration = ffprobe_streams(mp4, tmp_path)
    assert video["codec_name"] == "h264"
    assert (video["width"], video["height"]) == size
    assert audio is not None and audio["codec_name"] == "aac", audio
    assert abs(duration - seconds) <= 0.5, duration
    if frame:
        # The picture starts on the caller's frame, centre-cropped (warm above, cool below).
        path = tmp_path / "framed.mp4"
        path.write_bytes(mp4)
        raw = subprocess.run(
            ["ffmpeg", "-v", "error", "-i", str(path), "-vframes", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
            check=True, capture_output=True,
        ).stdout
        w, h = size
        top = raw[((h // 6) * w + w // 2) * 3:((h // 6) * w + w // 2) * 3 + 3]
        bottom = raw[((5 * h // 6) * w + w // 2) * 3:((5 * h // 6) * w + w // 2) * 3 + 3]
        assert top[0] > 150 and top[2] < 120, top
        assert bottom[2] > 150 and bottom[0] < 120, bottom
    # The balance falls by exactly the quote, charged once.
    after = org_state(server)
    assert Decimal(after["balance"]) == Decimal(before["balance"]) - Decimal(v["cost"])
    assert Decimal(after["reserved"]) == Decimal(before["reserved"])


def test_a_clip_the_conform_stage_cannot_decode_fails_unbilled(server, fake_videos):
    from decimal import Decimal

    before = org_state(server)
    fake_videos.next_profile = "high10"
    try:
        job = create(server, {"model": "far-openai", "prompt": "a ten-bit sunset", "seconds": 4,
                              "aspect_ratio": "16:9"}).json()
        v = wait_terminal(server, job["id"])
    finally:
        fake_videos.next_profile = "high"
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "engine_unavailable", v
    after = org_state(server)
    assert Decimal(after["balance"]) == Decimal(before["balance"])
    assert Decimal(after["reserved"]) == Decimal(before["reserved"])


def test_large_engine_answers_are_streamed_to_the_store_and_conformed_in_windows(fake_videos, upstream):
    """A hostile engine answers each job with a valid 4 s clip followed by 160 MiB of padding
    (a top-level `free` box; under the 256 MiB cap). Four such jobs at once on a server that
    conforms two at a time: every answer goes to the blob store as it arrives and each conform
    reads its file in bounded windows, so the server's peak RSS grows by less than one answer
    (before: each download held its answer whole and its conform read the stored copy whole
    again, two answers a job: +640 MiB for a pair). The padded clip is too large to pass through,
    so it is re-encoded: the caller gets a small clip to the contract, billed once."""
    import tempfile
    import threading
    from decimal import Decimal

    from harness import peak_rss_kib

    jobs = 4
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, fake_videos, upstream, env={"REELGATE_CONFORM_CONCURRENCY": "2",
                                                                  "REELGATE_LOG": "warn"},
                           renders_at_once=jobs)
        fake_videos.padding_mib = 160
        try:
            before_state = org_state(srv)
            before = peak_rss_kib(srv.proc.pid) / 1024
            ids = []
            for i in range(jobs):
                r = create(srv, {"model": "far-openai", "prompt": f"a padded tide {i}", "seconds": 4,
                                 "aspect_ratio": "16:9"})
                assert r.status_code == 200, r.text
                ids.append(r.json()["id"])
            results = {}
            threads = [threading.Thread(target=lambda v=v: results.update({v: wait_terminal(srv, v, timeout=400)}))
                       for v in ids]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            peak = peak_rss_kib(srv.proc.pid) / 1024
            sizes = [len(content(srv, v)) for v in ids]
            after_state = org_state(srv)
        finally:
            fake_videos.padding_mib = 0
            srv.stop()
    print(f"\n{jobs} engine answers of 160 MiB, two conforms at once: peak RSS {before:.0f} -> {peak:.0f} MiB "
          f"(+{peak - before:.0f}); outputs {[round(s / 2**20, 1) for s in sizes]} MiB")
    assert all(v["status"] == "completed" for v in results.values()), results
    assert all(s < 20 << 20 for s in sizes), "a padded clip was passed through instead of re-encoded"
    charged = sum(Decimal(v["cost"]) for v in results.values())
    assert Decimal(after_state["balance"]) == Decimal(before_state["balance"]) - charged
    assert peak - before < 160, f"+{peak - before:.0f} MiB: an answer was held whole"


def test_the_conform_stage_serves_organizations_in_turn(fake_videos, upstream):
    """One conform at a time, two organizations: the first sends four jobs, the second one job
    just after. Each freed slot goes to the organization holding fewest, taking turns among
    equals, so the second organization's clip is conformed before the first's third and fourth
    (first-come would make it last)."""
    import tempfile
    import time as clock

    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, fake_videos, upstream, env={"REELGATE_CONFORM_CONCURRENCY": "1",
                                                                  "REELGATE_LOG": "warn"},
                           renders_at_once=4)
        try:
            org = srv.admin("org", "create", "--name", "Neighbour", "--credits", "20.00")
            person = srv.admin("user", "create", "--org", org["id"], "--email", "neighbour@example.test")
            other_key = srv.admin("key", "create", "--user", person["id"])["secret"]
            srv.agree(person["id"], org["id"])
            # The first organization's clips are long, so that the second's short one has
            # rendered and is waiting while they are conformed.
            body = {"model": "far-openai", "prompt": "a tide in turn", "seconds": 4, "aspect_ratio": "16:9"}
            jobs = {}
            for i in range(4):
                r = create(srv, {**body, "seconds": 12})
                assert r.status_code == 200, r.text
                jobs[r.json()["id"]] = f"first {i + 1}"
            r = httpx.post(f"{srv.base_url}/v1/videos", headers=auth(other_key), json=body, timeout=30)
            assert r.status_code == 200, r.text
            neighbour = r.json()["id"]
            jobs[neighbour] = "neighbour"
            done = {}
            deadline = clock.time() + 400
            while len(done) < len(jobs) and clock.time() < deadline:
                for vid in jobs:
                    if vid in done:
                        continue
                    key = other_key if vid == neighbour else srv.api_key
                    v = httpx.get(f"{srv.base_url}/v1/videos/{vid}", headers=auth(key), timeout=30).json()
                    if v["status"] in ("completed", "failed", "canceled"):
                        done[vid] = (clock.time(), v["status"])
                clock.sleep(0.2)
        finally:
            srv.stop()
    order = [jobs[vid] for vid, _ in sorted(done.items(), key=lambda kv: kv[1][0])]
    print(f"\nconform order, one slot: {order}")
    assert all(status == "completed" for _, status in done.values()), done
    assert len(order) == 5 and order.index("neighbour") <= 2, order


def test_a_job_renders_through_a_second_reelgate(server, upstream, tmp_path):
    job = create(server, {"model": "far-reelgate", "prompt": "a tram in the rain", "seconds": 4, "aspect_ratio": "16:9"}).json()
    v = wait_terminal(server, job["id"])
    assert v["status"] == "completed", v
    assert_768p_with_audio(content(server, job["id"]), tmp_path, 4)
    # The upstream rendered it as one of its own jobs, on its own model.
    theirs = httpx.get(f"{upstream.base_url}/v1/videos", headers=auth(upstream.api_key)).json()["data"]
    assert any(x["prompt"] == "a tram in the rain" and x["model"] == "reel-1" and x["status"] == "completed" for x in theirs)


def test_remix_and_extension_chain_onto_an_openai_shaped_engine(server, fake_videos, tmp_path):
    """On an engine without video-to-video (the OpenAI-shaped fake of sora-2), a remix sends the
    source's first frame and an extension its last frame as `input_reference`, each within the
    model's documented values; the extension's output is the source then the segment."""
    from decimal import Decimal

    source = create(server, {"model": "far-openai", "prompt": "a paper boat on a pond", "seconds": 4,
                             "aspect_ratio": "16:9"})
    assert source.status_code == 200, source.text
    source = wait_terminal(server, source.json()["id"])
    assert source["status"] == "completed", source
    for path, body in [
        (f"/v1/videos/{source['id']}/remix", {"prompt": "the same boat at night"}),
        ("/v1/videos/extensions", {"prompt": "the boat drifts on", "seconds": 4, "video": {"id": source["id"]}}),
    ]:
        before = org_state(server)
        made = httpx.post(f"{server.base_url}{path}", headers=auth(server.api_key), json=body, timeout=30)
        assert made.status_code == 200, made.text
        done = wait_terminal(server, made.json()["id"])
        assert done["status"] == "completed", done
        post = [s for s in fake_videos.seen if s[0] == "POST"][-1]
        request = json.loads(post[3])
        assert (request["seconds"], request["size"]) == ("4", "1280x720"), request
        assert "input_reference" in request, "the source's frame opens the render"
        video, audio, duration = ffprobe_streams(content(server, done["id"]), tmp_path)
        assert (video["width"], video["height"]) == (1366, 768)
        assert audio is not None and audio["codec_name"] == "aac"
        expected = 8 if "extensions" in path else 4
        assert abs(duration - expected) <= 0.5, (path, duration)
        assert done["seconds"] == expected
        after = org_state(server)
        assert Decimal(after["balance"]) == Decimal(before["balance"]) - Decimal(done["cost"])

    # An edit keeps the source's picture, which no still frame stands in for: without
    # video-to-video it is refused naming video, before anything is reserved.
    models = httpx.get(f"{server.base_url}/v1/videos/models", headers=auth(server.api_key)).json()["data"]
    far = next(m for m in models if m["id"] == "far-openai")
    assert far["operations"] == {"remix": "chained", "extension": "chained", "edit": "unavailable"}
    before = org_state(server)
    refused = httpx.post(f"{server.base_url}/v1/videos/edits", headers=auth(server.api_key),
                         json={"prompt": "in snow", "video": {"id": source["id"]}}, timeout=30)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["param"] == "video" and "video-to-video" in error["message"], error
    after = org_state(server)
    assert (after["reserved"], after["balance"]) == (before["reserved"], before["balance"])
