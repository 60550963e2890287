"""The local server as a newcomer meets it: the printed key works, files round-trip, admin
keys work until revoked, and a video renders to a real MP4 that ffprobe accepts."""

import json
import shutil
import struct
import subprocess
import time
import zlib

import httpx
import openai
import pytest


def png_bytes(w=8, h=8) -> bytes:
    rows = b"".join(b"\x00" + b"".join(bytes((x * 30 % 256, y * 30 % 256, 120)) for x in range(w)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_the_printed_key_uploads_a_png_and_gets_the_same_bytes_back(server):
    png = png_bytes()
    r = httpx.post(
        f"{server.base_url}/v1/files",
        headers=auth(server.api_key),
        files={"file": ("tiny.png", png, "image/png")},
        data={"purpose": "vision"},
    )
    assert r.status_code == 200, r.text
    f = r.json()
    assert f["file_id"] == f["id"] and f["purpose"] == "vision" and f["bytes"] == len(png)
    content = httpx.get(f"{server.base_url}/v1/files/{f['id']}/content", headers=auth(server.api_key))
    assert content.status_code == 200
    assert content.content == png

    text = httpx.post(
        f"{server.base_url}/v1/files",
        headers=auth(server.api_key),
        files={"file": ("notes.txt", b"hello there", "text/plain")},
        data={"purpose": "vision"},
    )
    assert text.status_code == 400
    assert text.json()["error"]["code"] == "invalid_request_error"

    other_org = server.admin("org", "create", "--name", "Other", "--credits", "1.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "o@example.test")
    other_key = server.admin("key", "create", "--user", other_user["id"])["secret"]
    r = httpx.get(f"{server.base_url}/v1/files/{f['id']}", headers=auth(other_key))
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "file_not_found"


def test_an_admin_key_works_until_revoked(server):
    org = server.admin("org", "create", "--name", "Acme", "--plan", "pro", "--credits", "10.00")
    assert org["plan"] == "pro" and org["balance"] == "10.00"
    user = server.admin("user", "create", "--org", org["id"], "--email", "ana@example.test")
    key = server.admin("key", "create", "--user", user["id"])
    assert httpx.get(f"{server.base_url}/v1/files", headers=auth(key["secret"])).status_code == 200
    assert server.admin("key", "revoke", "--key-id", key["id"]) == {"id": key["id"], "revoked": True}
    r = httpx.get(f"{server.base_url}/v1/files", headers=auth(key["secret"]))
    assert r.status_code == 401
    shown = server.admin("credits", "add", "--org", org["id"], "--amount", "5.00")
    assert shown["balance"] == "15.00"
    shown = server.admin("org", "show", "--org", org["id"])
    assert shown["reserved"] == "0.00" and shown["renders_in_flight"] == 0


def sdk(server, key=None):
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=key or server.api_key, max_retries=0)


def create_job(server, key, seconds=4, aspect="16:9", prompt="a paper lantern drifting over a river"):
    r = httpx.post(
        f"{server.base_url}/v1/videos",
        headers=auth(key),
        json={"model": "reel-1", "prompt": prompt, "seconds": seconds, "aspect_ratio": aspect},
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_the_sdk_pages_retrieves_and_deletes_videos(server):
    org = server.admin("org", "create", "--name", "Pager", "--plan", "enterprise", "--credits", "20.00")
    user = server.admin("user", "create", "--org", org["id"], "--email", "p@example.test")
    key = server.admin("key", "create", "--user", user["id"])["secret"]
    client = sdk(server, key)
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.post(
            "/videos",
            body={"model": "reel-1", "prompt": "x", "seconds": 4, "aspect_ratio": "16:9"},
            cast_to=object,
        )
    assert refused.value.code == "agreement_required"
    server.agree(user["id"], org["id"])
    ids = [create_job(server, key, prompt="a moth")["id"] for _ in range(5)]
    pages = client.videos.list(limit=2)
    seen = []
    page_count = 0
    for page in pages.iter_pages():
        page_count += 1
        seen.extend(v.id for v in page.data)
    assert page_count == 3
    assert seen == list(reversed(ids))
    v = client.videos.retrieve(ids[0])
    assert v.id == ids[0] and v.status in ("moderating", "translating", "queued", "in_progress", "completed")
    deadline = time.time() + 240
    while client.videos.retrieve(ids[0]).status not in ("completed", "failed"):
        assert time.time() < deadline, "render did not finish"
        time.sleep(1)
    deleted = client.videos.delete(ids[0])
    assert deleted.id == ids[0] and deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        client.videos.retrieve(ids[0])


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe is installed by scripts/test.sh")
def test_a_newcomer_renders_a_4_second_video_that_ffprobe_accepts(server, tmp_path):
    server.agree(server.user, server.org)
    job = create_job(server, server.api_key, seconds=4, aspect="16:9")
    assert job["status"] == "moderating" and job["cost"] == "0.40"
    deadline = time.time() + 180
    while True:
        r = httpx.get(f"{server.base_url}/v1/videos/{job['id']}", headers=auth(server.api_key))
        v = r.json()
        if v["status"] in ("completed", "failed", "canceled"):
            break
        assert "openai-poll-after-ms" in r.headers
        assert time.time() < deadline, v
        time.sleep(1)
    assert v["status"] == "completed", v
    mp4 = httpx.get(f"{server.base_url}/v1/videos/{job['id']}/content", headers=auth(server.api_key))
    assert mp4.headers["content-type"] == "video/mp4"
    path = tmp_path / "out.mp4"
    path.write_bytes(mp4.content)
    probe = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", "-show_format", str(path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    streams = {s["codec_type"]: s for s in probe["streams"]}
    assert streams["video"]["codec_name"] == "h264"
    assert (streams["video"]["width"], streams["video"]["height"]) == (1366, 768)
    assert streams["audio"]["codec_name"] == "aac"
    assert abs(float(probe["format"]["duration"]) - 4.0) < 0.1
    decode = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "null", "-"], capture_output=True, text=True)
    assert decode.returncode == 0 and decode.stderr.strip() == "", decode.stderr
    thumb = httpx.get(f"{server.base_url}/v1/videos/{job['id']}/thumbnail", headers=auth(server.api_key))
    assert thumb.headers["content-type"] == "image/jpeg"
    tpath = tmp_path / "thumb.jpg"
    tpath.write_bytes(thumb.content)
    tprobe = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", str(tpath)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    assert tprobe["streams"][0]["width"] == 480
    # The range request a browser's video element makes.
    part = httpx.get(
        f"{server.base_url}/v1/videos/{job['id']}/content",
        headers={**auth(server.api_key), "Range": "bytes=0-99"},
    )
    assert part.status_code == 206 and len(part.content) == 100
    org = server.admin("org", "show", "--org", server.org)
    assert org["reserved"] == "0.00"
