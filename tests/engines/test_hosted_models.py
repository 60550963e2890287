"""A named model behind a hosted kind offers what that model offers (the model table,
functions/reelgate/src/domain/catalog/hosted_models.rs), through the real `reelgate serve` binary
against the Replicate fake (tests/engines/fakes/replicate.py). `luma/modify-video` on Replicate
is video-to-video only: its engine's catalog entry names the model and nothing else, and the
table makes its remix and edit native (the source video sent in the model's `video` field),
its extension unavailable (it takes no first frame to chain onto) and its sources at most 30 s
long (the API's own edits stop at 15 s first)."""

import os
import subprocess
import tempfile
from decimal import Decimal

import httpx
import openai
import pytest
from conftest import DEFAULT_CATALOG, auth, content, org_state, wait_terminal
from fakes import replicate
from harness import LocalServer
from test_engines import ffprobe_streams

MODIFY = "modify-on-replicate"


@pytest.fixture(scope="module")
def hosted():
    fake = replicate.Fake()
    extra = f"""
[[video_models]]
id = "{MODIFY}"
name = "Luma Modify Video on Replicate"
description = "Restyles a source video (a fake of Replicate's API)."
engine = "modify-fake"
plans = ["starter", "pro", "enterprise"]
pricing = [{{ resolution = "768p", per_second = "0.10", currency = "usd" }}]

{fake.engine_toml("modify-fake", model_id="luma/modify-video")}
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
            # The fake's CDN is on this machine: let the guarded fetcher reach it.
            "REELGATE_FETCH_ALLOW": "127.0.0.1",
            fake.key_env: fake.key,
        }
        srv = LocalServer(data_dir, env=env).start()
        try:
            srv.agree(srv.user, srv.org)
            srv.admin("credits", "add", "--org", srv.org, "--amount", "100")
            srv.admin("plan", "set", "--org", srv.org, "--plan", "pro")
            yield srv, fake
        finally:
            srv.stop()
            fake.stop()


def sdk(server):
    return openai.OpenAI(base_url=f"{server.base_url}/v1", api_key=server.api_key, max_retries=0)


def reference_clip(server):
    """A completed 4 s 16:9 video of the reference engine (`reel-1`), as bytes."""
    r = httpx.post(f"{server.base_url}/v1/videos", headers=auth(server.api_key), timeout=60,
                   json={"model": "reel-1", "prompt": "a quiet canal", "seconds": 4, "aspect_ratio": "16:9"})
    assert r.status_code == 200, r.text
    done = wait_terminal(server, r.json()["id"])
    assert done["status"] == "completed", done
    return content(server, done["id"])


def test_the_models_list_shows_its_remix_and_edit_native(hosted):
    server, _ = hosted
    r = httpx.get(f"{server.base_url}/v1/videos/models", headers=auth(server.api_key), timeout=30)
    assert r.status_code == 200, r.text
    model = next(m for m in r.json()["data"] if m["id"] == MODIFY)
    assert model["operations"] == {"remix": "native", "extension": "unavailable", "edit": "native"}, model
    assert model["inputs"] == [], "it takes no frame or reference"


def test_an_edit_reaches_modify_video_with_the_source_and_completes(hosted, tmp_path):
    server, fake = hosted
    clip = reference_clip(server)
    ops, creates, before = len(fake.native_ops), fake.creates, org_state(server)
    made = sdk(server).videos.edit(prompt="the canal in snow", video=("canal.mp4", clip, "video/mp4"),
                                   extra_body={"model": MODIFY})
    assert made.model == MODIFY and str(made.seconds) == "4", made
    done = wait_terminal(server, made.id)
    assert done["status"] == "completed", done
    assert fake.creates == creates + 1
    seen = fake.native_ops[ops:]
    assert len(seen) == 1, seen
    assert seen[0]["content_type"] == "video/mp4", "the source is served as what it is"
    assert abs(seen[0]["seconds"] - 4) <= 0.5, seen
    # The prediction carried the source in modify-video's own field and nothing it lacks.
    prediction = list(fake.predictions.values())[-1]
    assert prediction["model"] == "luma/modify-video"
    assert set(prediction["input"]) == {"prompt", "video"}, prediction["input"]
    # The contract: H.264 at 768p, AAC (added: the model renders none), the source's seconds.
    video, audio, duration = ffprobe_streams(content(server, done["id"]), tmp_path)
    assert video["codec_name"] == "h264" and (video["width"], video["height"]) == (1366, 768), video
    assert audio is not None and audio["codec_name"] == "aac", audio
    assert abs(duration - 4) <= 0.5, duration
    after = org_state(server)
    assert Decimal(before["balance"]) - Decimal(after["balance"]) == Decimal(done["cost"]) == Decimal("0.40")
    assert Decimal(after["reserved"]) == Decimal(before["reserved"])


def test_a_source_longer_than_the_model_takes_is_refused_at_create(hosted, tmp_path):
    server, fake = hosted
    path = tmp_path / "long.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=12", "-t", "31",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", "-profile:v", "high", "-movflags", "+faststart", str(path)],
        check=True,
    )
    creates, before = fake.creates, org_state(server)
    with pytest.raises(openai.BadRequestError) as e:
        sdk(server).videos.edit(prompt="the canal in snow", video=("long.mp4", path.read_bytes(), "video/mp4"),
                                extra_body={"model": MODIFY})
    assert e.value.status_code == 400
    assert e.value.body["param"] == "video", e.value.body
    after = org_state(server)
    assert (after["balance"], after["reserved"]) == (before["balance"], before["reserved"]), "nothing reserved"
    assert fake.creates == creates, "nothing reached the provider"


def test_a_create_without_a_source_is_refused_at_create(hosted):
    server, fake = hosted
    creates, before = fake.creates, org_state(server)
    r = httpx.post(f"{server.base_url}/v1/videos", headers=auth(server.api_key), timeout=60,
                   json={"model": MODIFY, "prompt": "a canal", "seconds": 4, "aspect_ratio": "16:9"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "model" and "source video" in r.json()["error"]["message"], r.text
    assert fake.creates == creates, "modify-video renders only from a source: nothing was sent"
    after = org_state(server)
    assert (after["balance"], after["reserved"]) == (before["balance"], before["reserved"]), "nothing reserved"
