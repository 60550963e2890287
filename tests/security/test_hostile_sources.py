"""Hostile source videos against the real binary: a character, an edit or an extension made from
an HEVC or a 10-bit H.264 MP4, one declaring an hour or 8192x8192, a truncated one and one with no
decodable frame is refused at create with a 400 naming `video`, nothing stored or reserved, and
the server's peak RSS
(VmHWM, /proc/<pid>/status) stays within the 256 MiB docs/security.md states. The clips are
made by ffmpeg (installed by scripts/test-tools.sh) as an attacker would make them."""

import os
import subprocess
import tempfile

import httpx
import pytest

from conftest import auth, start_server
from harness import peak_rss_kib

RSS_BOUND_MIB = 256


def ffmpeg(*args) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", *args, out], check=True)
        with open(out, "rb") as f:
            return f.read()


def valid_clip() -> bytes:
    return ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x240:rate=24", "-t", "2", "-c:v", "libx264",
                  "-pix_fmt", "yuv420p", "-movflags", "+faststart")


def without_decodable_frames(mp4: bytes) -> bytes:
    """The clip with every byte of its media data zeroed: the container reads, no picture does."""
    at = mp4.index(b"mdat") + 4
    return mp4[:at] + bytes(len(mp4) - at)


HOSTILE = {
    "hevc": lambda: ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x240:rate=24", "-t", "1",
                           "-c:v", "libx265", "-tag:v", "hvc1", "-x265-params", "log-level=error"),
    "ten_bit": lambda: ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x240:rate=24", "-t", "1",
                              "-c:v", "libx264", "-pix_fmt", "yuv420p10le"),
    "an_hour": lambda: ffmpeg("-f", "lavfi", "-i", "color=size=64x64:rate=1", "-t", "3600",
                              "-c:v", "libx264", "-preset", "ultrafast"),
    "8192x8192": lambda: ffmpeg("-f", "lavfi", "-i", "color=c=red:size=8192x8192:rate=1", "-t", "1",
                                "-c:v", "libx264", "-preset", "ultrafast"),
    "truncated": lambda: valid_clip()[: len(valid_clip()) // 2],
    "no_decodable_frame": lambda: without_decodable_frames(valid_clip()),
}


@pytest.fixture(scope="module")
def fresh():
    """One server for these attacks alone, so its high-water mark measures them."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, env={"REELGATE_LOG": "warn"})
        try:
            yield srv
        finally:
            srv.stop()


@pytest.fixture(scope="module")
def key(fresh):
    org = fresh.admin("org", "create", "--name", "Hostile", "--credits", "5.00")
    user = fresh.admin("user", "create", "--org", org["id"], "--email", "hostile@example.test")
    return fresh.admin("key", "create", "--user", user["id"])["secret"]


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_character_video_is_refused_at_create_naming_video(fresh, key, kind):
    clip = HOSTILE[kind]()
    r = httpx.post(
        f"{fresh.base_url}/v1/videos/characters",
        headers=auth(key),
        data={"name": f"hostile {kind}"},
        files={"video": ("clip.mp4", clip, "video/mp4")},
        timeout=120,
    )
    assert r.status_code == 400, (kind, r.status_code, r.text)
    assert r.json()["error"]["param"] == "video", r.text
    listed = httpx.get(f"{fresh.base_url}/v1/videos/characters", headers=auth(key)).json()
    assert listed["data"] == [], "a refused character stores nothing"
    peak = peak_rss_kib(fresh.proc.pid) / 1024
    print(f"{kind}: {len(clip)} bytes refused; server peak RSS {peak:.0f} MiB")
    assert peak < RSS_BOUND_MIB, f"{kind}: peak RSS {peak:.0f} MiB"


@pytest.mark.parametrize("route", ["edits", "extensions"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_source_file_is_refused_at_create_naming_video(fresh, key, kind, route):
    clip = HOSTILE[kind]()
    form = {"prompt": "in snow", "model": "reel-1"}
    if route == "extensions":
        form["seconds"] = "4"
    r = httpx.post(
        f"{fresh.base_url}/v1/videos/{route}",
        headers=auth(key),
        data=form,
        files={"video": ("clip.mp4", clip, "video/mp4")},
        timeout=120,
    )
    assert r.status_code == 400, (kind, route, r.status_code, r.text)
    assert r.json()["error"]["param"] == "video", r.text
    listed = httpx.get(f"{fresh.base_url}/v1/videos", headers=auth(key)).json()
    assert listed["data"] == [], "a refused source makes no job"
    blobs = os.path.join(fresh.data_dir, "blobs")
    stored = [f for d, _, files in os.walk(blobs) for f in files if "/videos/" in d + "/"]
    assert stored == [], stored
    peak = peak_rss_kib(fresh.proc.pid) / 1024
    print(f"{route} {kind}: {len(clip)} bytes refused; server peak RSS {peak:.0f} MiB")
    assert peak < RSS_BOUND_MIB, f"{route} {kind}: peak RSS {peak:.0f} MiB"


def test_a_valid_clip_makes_a_character_of_four_frames_and_its_delete_removes_them(fresh, key):
    r = httpx.post(
        f"{fresh.base_url}/v1/videos/characters",
        headers=auth(key),
        data={"name": "Test card"},
        files={"video": ("clip.mp4", valid_clip(), "video/mp4")},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    character = r.json()
    assert (character["object"], character["name"], character["frames"]) == ("video.character", "Test card", 4)
    got = httpx.get(f"{fresh.base_url}/v1/videos/characters/{character['id']}", headers=auth(key))
    assert got.json() == character
    other_org = fresh.admin("org", "create", "--name", "Other", "--credits", "1.00")
    other_user = fresh.admin("user", "create", "--org", other_org["id"], "--email", "o@example.test")
    other_key = fresh.admin("key", "create", "--user", other_user["id"])["secret"]
    foreign = httpx.get(f"{fresh.base_url}/v1/videos/characters/{character['id']}", headers=auth(other_key))
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "character_not_found"
    assert httpx.delete(f"{fresh.base_url}/v1/videos/characters/{character['id']}",
                        headers=auth(other_key)).status_code == 404
    deleted = httpx.delete(f"{fresh.base_url}/v1/videos/characters/{character['id']}", headers=auth(key))
    assert deleted.json() == {"id": character["id"], "object": "video.character", "deleted": True}
    assert httpx.get(f"{fresh.base_url}/v1/videos/characters/{character['id']}",
                     headers=auth(key)).status_code == 404
    blobs = os.path.join(fresh.data_dir, "blobs")
    left = [os.path.join(d, f) for d, _, files in os.walk(blobs) for f in files if "characters" in d]
    assert left == [], left
