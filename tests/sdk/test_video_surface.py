"""The rest of OpenAI's video surface through the official `openai` Python SDK (3.57, whose
methods still send although OpenAI's own service closed): `videos.remix`,
`download_content(variant="spritesheet")`, `videos.create_character` and `get_character` (and a
create naming the character), against the real binary and the reference engine.
Each job is billed exactly its quote (the balance before minus after), a remix of a running job
or of another organization's job is refused with nothing reserved, and the answers are checked
against docs/openapi.json by tests/harness.py."""

import json
import subprocess
from decimal import Decimal

import httpx
import openai
import pytest

from test_python_sdk import TERMINAL, wait_for


@pytest.fixture(scope="module")
def client(tenant):
    return openai.OpenAI(base_url=tenant.base_url, api_key=tenant.key, max_retries=0)


def org_state(tenant):
    return tenant.server.admin("org", "show", "--org", tenant.org)


def balance(tenant):
    return Decimal(org_state(tenant)["balance"])


def probe(mp4: bytes) -> dict:
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", "-"],
        input=mp4, capture_output=True, check=True,
    )
    return json.loads(out.stdout)


def completed_source(client, prompt="a paper boat on a rainy street", ratio="9:16", size="768x1366"):
    video = client.videos.create(
        model="reel-1", prompt=prompt, seconds="4", size=size, extra_body={"aspect_ratio": ratio}
    )
    video = wait_for(client, video.id)
    assert video.status == "completed", video
    return video


def test_a_remix_is_a_new_job_on_the_source_settings_billed_its_quote(client, tenant):
    source = completed_source(client)
    before = balance(tenant)

    remix = client.videos.remix(source.id, prompt="the same boat, now at night under neon signs")
    assert remix.id != source.id
    assert remix.remixed_from_video_id == source.id
    assert remix.status not in TERMINAL
    assert remix.model == source.model and remix.seconds == source.seconds

    # Deleting the source does not break the remix: it rendered from its own copy.
    client.videos.delete(source.id)
    done = wait_for(client, remix.id)
    assert done.status == "completed", done
    assert done.remixed_from_video_id == source.id
    assert done.expires_at is not None and done.expires_at > done.completed_at
    cost = Decimal(done.model_extra["cost"])
    assert cost == Decimal(source.model_extra["cost"]), "quoted as a create of the source's seconds"
    assert before - balance(tenant) == cost

    mp4 = client.videos.download_content(done.id).read()
    streams = {s["codec_type"]: s for s in probe(mp4)["streams"]}
    assert (streams["video"]["width"], streams["video"]["height"]) == (768, 1366), "the source's orientation"
    assert streams["audio"]["codec_name"] == "aac"
    assert abs(float(probe(mp4)["format"]["duration"]) - 4.0) <= 0.5


def test_a_spritesheet_is_one_jpeg_grid_of_frames(client):
    source = completed_source(client, prompt="a lighthouse at dusk", ratio="16:9", size="1366x768")
    sheet = client.videos.download_content(source.id, variant="spritesheet").read()
    assert sheet[:3] == b"\xff\xd8\xff"
    image = probe(sheet)["streams"][0]
    # 16 frames 160 px wide in 4 columns: 640 x (4 x 90).
    assert (image["width"], image["height"]) == (640, 360), image


def test_a_remix_of_a_running_or_foreign_video_is_refused_with_nothing_reserved(client, tenant):
    running = client.videos.create(
        model="reel-1", prompt="a slow pan over hills", seconds="8", size="1366x768",
        extra_body={"aspect_ratio": "16:9"},
    )
    state = org_state(tenant)
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.remix(running.id, prompt="faster")
    assert e.value.body["param"] == "video_id"
    after = org_state(tenant)
    assert (after["reserved"], after["balance"]) == (state["reserved"], state["balance"])

    server = tenant.server
    other_org = server.admin("org", "create", "--name", "Other", "--plan", "enterprise", "--credits", "5.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "other@example.test")
    other_key = server.admin("key", "create", "--user", other_user["id"])["secret"]
    server.agree(other_user["id"], other_org["id"])
    other = openai.OpenAI(base_url=tenant.base_url, api_key=other_key, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        other.videos.remix(running.id, prompt="mine now")
    assert [v.id for v in other.videos.list()] == [], "no job was made for the other organization"
    wait_for(client, running.id)


def test_remix_bodies_the_sdk_would_not_send_are_refused_by_name(client, tenant):
    source = completed_source(client, prompt="a kite", ratio="1:1", size="768x768")
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.remix(source.id, prompt="a kite", extra_body={"seconds": "8"})
    assert e.value.body["param"] == "seconds"
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.remix(source.id, prompt="")
    assert e.value.body["param"] == "prompt"
    models = httpx.get(f"{tenant.base_url}/videos/models", headers={"Authorization": f"Bearer {tenant.key}"}).json()
    reel = next(m for m in models["data"] if m["id"] == "reel-1")
    # The reference engine takes the source video itself for every operation.
    assert reel["operations"] == {"remix": "native", "extension": "native", "edit": "native"}


def test_a_character_from_an_mp4_is_drawn_into_a_create_billed_its_quote(client, tenant):
    source = completed_source(client, prompt="a red kite", ratio="1:1", size="768x768")
    clip = client.videos.download_content(source.id).read()
    made = client.videos.create_character(name="Kite", video=("kite.mp4", clip, "video/mp4"))
    assert made.id.startswith("char_") and made.name == "Kite" and made.created_at > 0
    got = client.videos.get_character(made.id)
    assert (got.id, got.name, got.created_at) == (made.id, made.name, made.created_at)

    before = balance(tenant)
    video = client.videos.create(
        model="reel-1", prompt="the kite over the sea", seconds="4", size="1366x768",
        extra_body={"aspect_ratio": "16:9", "characters": [made.id]},
    )
    # Deleting the character does not break the job: it copied the frames at admission.
    assert httpx.delete(f"{tenant.base_url}/videos/characters/{made.id}",
                        headers={"Authorization": f"Bearer {tenant.key}"}).status_code == 200
    done = wait_for(client, video.id)
    assert done.status == "completed", done
    assert before - balance(tenant) == Decimal(done.model_extra["cost"])

    with pytest.raises(openai.BadRequestError) as e:
        client.videos.create(
            model="reel-1", prompt="x", seconds="4", size="1366x768",
            extra_body={"aspect_ratio": "16:9", "characters": [made.id]},
        )
    assert e.value.body["param"] == "characters[0]", "a deleted character is named"


def seam_volume(mp4: bytes, at: float) -> float:
    """The mean loudness (dB) of the audio 0.2 s either side of `at`, by ffmpeg's volumedetect."""
    out = subprocess.run(
        ["ffmpeg", "-hide_banner", "-nostats", "-i", "-", "-map", "0:a", "-af",
         f"atrim={at - 0.2}:{at + 0.2},volumedetect", "-f", "null", "-"],
        input=mp4, capture_output=True,
    )
    line = next(l for l in out.stderr.decode().splitlines() if "mean_volume:" in l)
    return float(line.split("mean_volume:")[1].strip().removesuffix("dB").strip())


def test_an_extension_is_the_source_then_a_new_segment_billed_for_the_segment(client, tenant):
    source = completed_source(client, prompt="a paper boat on a rainy street", ratio="9:16", size="768x1366")
    before = balance(tenant)
    # The SDK refuses video={"id": …} before sending; extra_body sends the form field video[id].
    extension = client.videos.extend(
        prompt="the boat drifts under a stone bridge", seconds="4", video=openai.omit,
        extra_body={"video": {"id": source.id}},
    )
    assert extension.model_extra["extended_from_video_id"] == source.id
    assert extension.seconds == "8" or extension.seconds == 8, "the stitched total"
    assert Decimal(extension.model_extra["cost"]) == Decimal(source.model_extra["cost"]), "the segment's 4 s"
    done = wait_for(client, extension.id)
    assert done.status == "completed", done
    assert before - balance(tenant) == Decimal(done.model_extra["cost"])

    mp4 = client.videos.download_content(done.id).read()
    info = probe(mp4)
    streams = {s["codec_type"]: s for s in info["streams"]}
    assert (streams["video"]["width"], streams["video"]["height"]) == (768, 1366), "the source's orientation"
    assert streams["audio"]["codec_name"] == "aac"
    assert abs(float(info["format"]["duration"]) - 8.0) <= 0.5
    assert seam_volume(mp4, 4.0) > -60.0, "no silence at the seam"

    with pytest.raises(openai.BadRequestError) as e:
        client.videos.extend(prompt="on", seconds="20", video=openai.omit, extra_body={"video": {"id": source.id}})
    assert e.value.body["param"] == "seconds"
    running = client.videos.create(
        model="reel-1", prompt="a slow pan", seconds="8", size="1366x768", extra_body={"aspect_ratio": "16:9"}
    )
    state = org_state(tenant)
    with pytest.raises(openai.BadRequestError) as e:
        client.videos.extend(prompt="on", seconds="4", video=openai.omit, extra_body={"video": {"id": running.id}})
    assert e.value.body["param"] == "video"
    assert org_state(tenant)["reserved"] == state["reserved"], "nothing reserved"
    wait_for(client, running.id)


def test_an_extension_of_an_uploaded_mp4_keeps_its_orientation_and_length(client, tenant):
    source = completed_source(client, prompt="a tram at dawn", ratio="9:16", size="768x1366")
    clip = client.videos.download_content(source.id).read()
    client.videos.delete(source.id)
    before = balance(tenant)
    extension = client.videos.extend(
        prompt="the tram turns a corner", seconds="4", video=("tram.mp4", clip, "video/mp4"),
        extra_body={"model": "reel-1"},
    )
    assert extension.model_extra["extended_from_video_id"] is None, "made from a file, not a video"
    assert extension.model_extra["aspect_ratio"] == "9:16", "the file's shape"
    done = wait_for(client, extension.id)
    assert done.status == "completed", done
    assert before - balance(tenant) == Decimal(done.model_extra["cost"]) == Decimal("0.40")
    info = probe(client.videos.download_content(done.id).read())
    streams = {s["codec_type"]: s for s in info["streams"]}
    assert (streams["video"]["width"], streams["video"]["height"]) == (768, 1366)
    assert abs(float(info["format"]["duration"]) - 8.0) <= 0.5


def test_a_source_file_that_is_not_a_usable_mp4_is_refused_naming_video(client, tenant):
    state = org_state(tenant)
    for call in (
        lambda video, body: client.videos.extend(prompt="on", seconds="4", video=video, extra_body=body),
        lambda video, body: client.videos.edit(prompt="in snow", video=video, extra_body=body),
    ):
        with pytest.raises(openai.BadRequestError) as e:
            call(("clip.mp4", b"\x00\x00\x00\x18ftypisom" + b"\x00" * 64, "video/mp4"), {"model": "reel-1"})
        assert e.value.body["param"] == "video", e.value.body
        with pytest.raises(openai.BadRequestError) as e:
            call(("clip.mp4", b"\x00\x00\x00\x18ftypisom", "video/mp4"), None)
        assert e.value.body["param"] == "model", "a file needs the model to render with"
    after = org_state(tenant)
    assert (after["reserved"], after["balance"]) == (state["reserved"], state["balance"])


def test_an_edit_rerenders_the_source_at_its_seconds_and_ratio_billed_its_quote(client, tenant):
    source = completed_source(client, prompt="a quiet canal", ratio="16:9", size="1366x768")
    before = balance(tenant)
    # The SDK refuses video={"id": …} before sending, as for extend.
    edit = client.videos.edit(prompt="the canal in snow", video=openai.omit, extra_body={"video": {"id": source.id}})
    assert edit.model_extra["edited_from_video_id"] == source.id
    assert (edit.model, edit.seconds) == (source.model, source.seconds)
    client.videos.delete(source.id)
    done = wait_for(client, edit.id)
    assert done.status == "completed", done
    assert before - balance(tenant) == Decimal(done.model_extra["cost"]) == Decimal(source.model_extra["cost"])
    info = probe(client.videos.download_content(done.id).read())
    streams = {s["codec_type"]: s for s in info["streams"]}
    assert (streams["video"]["width"], streams["video"]["height"]) == (1366, 768)
    assert streams["audio"]["codec_name"] == "aac"
    assert abs(float(info["format"]["duration"]) - 4.0) <= 0.5

    # An edit of a file the caller sends: the same, at the file's length and shape.
    clip = client.videos.download_content(done.id).read()
    again = client.videos.edit(prompt="the canal at night", video=("canal.mp4", clip, "video/mp4"),
                               extra_body={"model": "reel-1"})
    assert again.model_extra["edited_from_video_id"] is None
    assert again.model_extra["aspect_ratio"] == "16:9" and str(again.seconds) == "4"
    assert wait_for(client, again.id).status == "completed"
