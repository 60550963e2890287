"""Moderation covers every input in the `moderating` step: the prompt as written (Japanese too),
frames of reference videos, and reference audio (decodable and within its limits)."""

import struct
import time

import httpx

from conftest import png_bytes

TERMINAL = ("completed", "failed", "canceled")


def upload(t, content, purpose, name):
    r = httpx.post(
        t.url("/v1/files"),
        headers=t.headers,
        files={"file": (name, content, "application/octet-stream")},
        data={"purpose": purpose},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r.json()["id"]


def run_job(t, body):
    r = httpx.post(t.url("/v1/videos"), headers=t.headers, json=body, timeout=60)
    assert r.status_code == 200, r.text
    job_id = r.json()["id"]
    deadline = time.time() + 120
    while True:
        v = httpx.get(t.url(f"/v1/videos/{job_id}"), headers=t.headers).json()
        # Every verdict is reached in moderation, before translation or rendering.
        if v["status"] in TERMINAL or v["status"] in ("queued", "in_progress"):
            return v
        assert time.time() < deadline, v
        time.sleep(0.3)


def wav(seconds: float, rate=8000) -> bytes:
    data = b"\x00\x00" * int(rate * seconds)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def video_body(prompt, references=None):
    b = {"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "16:9"}
    if references:
        b["references"] = references
    return b


def test_a_japanese_prompt_is_moderated_as_written(tenant):
    v = run_job(tenant, video_body("夜の路地で惨殺される男を映す"))
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "moderation_blocked", v
    org = tenant.state()
    assert org["reserved"] == "0.00" and org["balance"] == "500.00", org


def test_a_reference_video_whose_frames_cannot_be_decoded_fails_closed(tenant):
    # Sniffs as an MP4 (an ftyp box) but holds no decodable picture.
    fake_mp4 = struct.pack(">I", 24) + b"ftypisom" + b"\x00\x00\x02\x00isommp41" + b"\x17" * 4096
    video = upload(tenant, fake_mp4, "video", "clip.mp4")
    v = run_job(tenant, video_body("a calm lake at dawn", {"videos": [{"file_id": video}]}))
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "moderation_unavailable", v


def test_reference_audio_must_decode_and_fit_its_limits(tenant):
    image = upload(tenant, png_bytes(), "vision", "ref.png")
    short = upload(tenant, wav(1.0), "audio", "short.wav")
    v = run_job(
        tenant,
        video_body("a calm lake at dawn", {"images": [{"file_id": image}], "audio": [{"file_id": short}]}),
    )
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "moderation_blocked", v
    # The message is the documented sentence for the code (docs/errors.md), never the rule that
    # matched: the reason (audio out of limits) stays in the moderation record.
    assert v["error"]["message"] == "The prompt or a reference was blocked by moderation. You were not charged.", v

    truncated = wav(3.0)[:4000]
    broken = upload(tenant, truncated, "audio", "broken.wav")
    v = run_job(
        tenant,
        video_body("a calm lake at dawn", {"images": [{"file_id": image}], "audio": [{"file_id": broken}]}),
    )
    assert v["status"] == "failed", v
    assert v["error"]["code"] == "moderation_unavailable", v

    fine = upload(tenant, wav(3.0), "audio", "fine.wav")
    v = run_job(
        tenant,
        video_body("a calm lake at dawn", {"images": [{"file_id": image}], "audio": [{"file_id": fine}]}),
    )
    assert v["status"] not in ("failed",) or not v["error"]["code"].startswith("moderation"), v
