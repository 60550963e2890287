"""A fake of Luma's Dream Machine API, written from the API specification Luma's official `lumaai`
SDK carries (1.18.1) and Luma's documentation (*Modify Video*, *Errors*, *Video Generation*; read
2026-11-26 and 2026-11-28; see functions/reelgate/src/adapters/hosted/luma.rs for the files).

- Base `/dream-machine/v1`, `Authorization: Bearer <key>` (anything else: 401 `{"detail"}`).
- `POST /generations/video` (and the older `POST /generations`): `model` required (`ray-2`,
  `ray-flash-2`, `ray-1-6`), `prompt` (3 to 5000 characters), `aspect_ratio` (1:1, 16:9, 9:16,
  4:3, 3:4, 21:9, 9:21), `resolution` (540p, 720p, 1080p, 4k; not on ray-1-6), `duration` (5s,
  9s; not on ray-1-6), `keyframes` `frame0`/`frame1` each `{"type": "image", "url"}` (an http(s)
  URL the fake downloads; unreadable: 400) or `{"type": "generation", "id"}`, `loop`,
  `callback_url`, `generation_type` "video", `concepts`. Anything else, or another value: 400
  `{"detail"}`. Answers 201 with the generation (`id`, `state: "queued"`, `model`, `request`, …).
- Extend: `frame0` of type `generation` names a completed generation this fake made (any other
  id, or one not completed: 400, as Luma extends only generated videos). It is recorded in
  `native_ops` as `{"operation": "extension"}` and renders the asked duration: the new segment
  alone (Luma's documentation does not show whether the answer holds the source too).
- `POST /generations/video/modify`: `generation_type` "modify_video" (required), `media`
  `{"url"}` (required; the fake downloads it: a video not served as video/mp4, unreadable, over
  10 s or over 100 MB is a 400, ray-2's documented limits), `mode` (adhere_1..3, flex_1..3, reimagine_1..3;
  required), `model` (`ray-2` or `ray-flash-2`; required), `prompt`, `first_frame` `{"url"}`,
  `callback_url`; anything else: 400. Recorded in `native_ops` as `{"operation": "modify",
  "seconds", "content_type"}`; renders a clip at the input's length and frame size.
- `GET /generations/{id}`: `queued` for the first poll, `dreaming` for the next two, then
  `completed` with `assets.video` on the "CDN" (x264, no audio: Ray renders none) at the asked
  ratio and tier (720p 16:9 is 1280x720, 1080p 9:16 1080x1920, …), or `failed` with
  `failure_reason: "Advanced prompt moderation failed"` for a prompt with the refuse word (how
  the API reports its moderation, on both endpoints). Unknown id: 404.
- `DELETE /generations/{id}`: deletes it (204; recorded in `cancels`); Luma has no other cancel.
"""

import json
import time
import uuid
from datetime import datetime, timezone

from fakes.base import HostedFake

MODELS = {"ray-2", "ray-flash-2", "ray-1-6"}
FIELDS = {"model", "prompt", "aspect_ratio", "resolution", "duration", "keyframes", "loop", "callback_url",
          "generation_type", "concepts"}
RATIOS = {"1:1": (1, 1), "16:9": (16, 9), "9:16": (9, 16), "4:3": (4, 3), "3:4": (3, 4), "21:9": (21, 9),
          "9:21": (9, 21)}
RESOLUTIONS = {"540p": 540, "720p": 720, "1080p": 1080, "4k": 2160}
DURATIONS = {"5s": 5, "9s": 9}
MODIFY_FIELDS = {"generation_type", "media", "mode", "model", "prompt", "first_frame", "callback_url"}
MODIFY_MODELS = {"ray-2", "ray-flash-2"}
MODIFY_MODES = {f"{family}_{n}" for family in ("adhere", "flex", "reimagine") for n in (1, 2, 3)}
MODIFY_MAX_SECONDS = 10
MODIFY_MAX_BYTES = 100 * 1000 * 1000
MODERATION_FAILURE = "Advanced prompt moderation failed"


def refuse(status, detail):
    return status, {"detail": detail}, []


def frame_size(aspect, resolution):
    """The frame of a ratio at a tier: the tier is the short side."""
    a, b = RATIOS[aspect]
    short = RESOLUTIONS[resolution]
    if a >= b:
        return int(round(short * a / b / 2)) * 2, short
    return short, int(round(short * b / a / 2)) * 2


def video_size(data):
    """The frame size of an MP4 (for a modify, which keeps its input's)."""
    import subprocess

    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "csv=p=0", "-"], input=data, capture_output=True)
    try:
        width, height = (int(v) for v in probe.stdout.decode().strip().split(",")[:2])
    except ValueError:
        return None
    return width, height


class Fake(HostedFake):
    kind = "luma"
    key_env = "FAKE_LUMA_KEY"
    cancel_supported = True
    OPERATIONS = {"remix": "native", "extension": "native", "edit": "native"}
    # Luma extends only its own generations (by id); any other source is chained.
    OWN_RENDERS_ONLY = True
    # Ray 2 renders 5 s or 9 s: a 5 s video is one it rendered untrimmed, so it extends natively.
    EXTENDABLE_SECONDS = 5
    REFERENCES = False

    def __init__(self):
        super().__init__()
        self.generations = {}  # id -> {"polls", "generation", "spec" or None (refused)}

    def engine_toml(self, engine_id):
        # The API is named `localhost` and the CDN `127.0.0.1`: one server, two origins, as Luma's
        # API and its CDN are (the key goes to the API's origin only).
        api = self.base_url.replace("127.0.0.1", "localhost")
        return (f'[[engines]]\nid = "{engine_id}"\nkind = "luma"\nbase_url = "{api}/dream-machine/v1"\n'
                f'api_key_env = "{self.key_env}"\nmodel_id = "ray-2"\noutput_hosts = ["127.0.0.1"]\n')

    # --- the API ---------------------------------------------------------------------------------

    def api(self, method, path, headers, body):
        if headers.get("authorization") != f"Bearer {self.key}":
            return refuse(401, "Invalid API key provided")
        prefix = "/dream-machine/v1"
        if not path.startswith(prefix + "/"):
            return refuse(404, "Not Found")
        route = path[len(prefix):].partition("?")[0]
        if method == "POST" and route in ("/generations", "/generations/video"):
            return self.create(body)
        if method == "POST" and route == "/generations/video/modify":
            return self.modify(body)
        if route.startswith("/generations/") and route.count("/") == 2:
            gen_id = route[len("/generations/"):]
            if method == "GET":
                return self.get(gen_id)
            if method == "DELETE":
                with self.lock:
                    if self.generations.pop(gen_id, None) is None:
                        return refuse(404, "Generation not found")
                    self.cancels.append(gen_id)
                return 204, None, []
        return refuse(404, "Not Found")

    def keyframe(self, name, frame):
        """The image bytes of a keyframe (None for a generation reference), or an error answer."""
        if not isinstance(frame, dict):
            return None, refuse(400, f"keyframes.{name} must be an object")
        if frame.get("type") == "image":
            if set(frame) != {"type", "url"} or not isinstance(frame["url"], str):
                return None, refuse(400, f"keyframes.{name}: an image keyframe takes type and url")
            if not frame["url"].startswith(("http://", "https://")):
                return None, refuse(400, f"keyframes.{name}.url must be an http(s) URL")
            try:
                data = self.read_image(frame["url"])
            except Exception:  # noqa: BLE001 (any failure to download is the caller's bad URL)
                return None, refuse(400, f"keyframes.{name}: could not download the image")
            if not (data.startswith(b"\x89PNG\r\n\x1a\n") or data.startswith(b"\xff\xd8")
                    or data[8:12] == b"WEBP"):
                return None, refuse(400, f"keyframes.{name}: the URL is not an image")
            return data, None
        if frame.get("type") == "generation":
            if set(frame) != {"type", "id"} or not isinstance(frame["id"], str):
                return None, refuse(400, f"keyframes.{name}: a generation keyframe takes type and id")
            with self.lock:
                entry = self.generations.get(frame["id"])
                completed = entry is not None and "video" in entry
            if not completed:
                return None, refuse(400, f"keyframes.{name}: Extend is currently supported only for generated videos "
                                         f"(no completed generation {frame['id']})")
            return None, None
        return None, refuse(400, f"keyframes.{name}.type must be image or generation")

    def create(self, body):
        try:
            request = json.loads(body or b"null")
        except ValueError:
            return refuse(400, "Invalid JSON")
        if not isinstance(request, dict):
            return refuse(400, "Invalid JSON")
        for name in sorted(set(request) - FIELDS):
            return refuse(400, f"Unknown field: {name}")
        model = request.get("model")
        if model not in MODELS:
            return refuse(400, f"Invalid model: {model!r}")
        if request.get("generation_type", "video") != "video":
            return refuse(400, "generation_type must be video")
        prompt = request.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return refuse(400, "Prompt is required")
        failure = self.prompt_length(prompt)
        if failure:
            return failure
        aspect = request.get("aspect_ratio", "16:9")
        if aspect not in RATIOS:
            return refuse(400, f"Invalid aspect_ratio: {aspect!r}")
        if model == "ray-1-6" and ("resolution" in request or "duration" in request):
            return refuse(400, "ray-1-6 takes no resolution or duration")
        resolution = request.get("resolution", "720p")
        if resolution not in RESOLUTIONS:
            return refuse(400, f"Invalid resolution: {resolution!r}")
        duration = request.get("duration", "5s")
        if duration not in DURATIONS:
            return refuse(400, f"Invalid duration: {duration!r}")
        for flag in ("loop",):
            if flag in request and not isinstance(request[flag], bool):
                return refuse(400, f"{flag} must be a boolean")
        keyframes = request.get("keyframes")
        first = None
        extends = False
        if keyframes is not None:
            if not isinstance(keyframes, dict) or not keyframes or set(keyframes) - {"frame0", "frame1"}:
                return refuse(400, "keyframes takes frame0 and/or frame1")
            for name in ("frame0", "frame1"):
                if name in keyframes:
                    data, failure = self.keyframe(name, keyframes[name])
                    if failure:
                        return failure
                    if name == "frame0":
                        first = data
                        extends = keyframes[name].get("type") == "generation"

        if extends:
            self.native_ops.append({"operation": "extension"})
        self.started()
        if first is not None:
            self.first_frames.append(first)
        gen_id = str(uuid.uuid4())
        width, height = frame_size(aspect, resolution)
        generation = {
            "id": gen_id,
            "generation_type": "video",
            "state": "queued",
            "failure_reason": None,
            "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "assets": None,
            "model": model,
            "request": request,
        }
        # An extension renders the new segment alone, at the asked duration.
        spec = None if self.refused(prompt) else (width, height, DURATIONS[duration], first)
        return self.accepted(generation, spec)

    @staticmethod
    def prompt_length(prompt):
        if len(prompt) < 3:
            return refuse(400, "Prompt is too short, minimum length is 3 characters")
        if len(prompt) > 5000:
            return refuse(400, "Prompt is too long, maximum length is 5000 characters")
        return None

    def accepted(self, generation, spec):
        with self.lock:
            self.generations[generation["id"]] = {"polls": 0, "generation": generation, "spec": spec,
                                                  "at": time.time()}
        return 201, generation, []

    def modify(self, body):
        try:
            request = json.loads(body or b"null")
        except ValueError:
            return refuse(400, "Invalid JSON")
        if not isinstance(request, dict):
            return refuse(400, "Invalid JSON")
        for name in sorted(set(request) - MODIFY_FIELDS):
            return refuse(400, f"Unknown field: {name}")
        if request.get("generation_type") != "modify_video":
            return refuse(400, "generation_type must be modify_video")
        model = request.get("model")
        if model not in MODIFY_MODELS:
            return refuse(400, f"Invalid model: {model!r}")
        mode = request.get("mode")
        if mode not in MODIFY_MODES:
            return refuse(400, f"Invalid mode: {mode!r}")
        prompt = request.get("prompt", "")
        if not isinstance(prompt, str):
            return refuse(400, "prompt must be a string")
        if prompt:
            failure = self.prompt_length(prompt)
            if failure:
                return failure
        for field in ("media", "first_frame"):
            value = request.get(field, {"url": ""})
            if not isinstance(value, dict) or set(value) != {"url"} or not isinstance(value["url"], str):
                return refuse(400, f"{field} takes url")
        if "callback_url" in request and not isinstance(request["callback_url"], str):
            return refuse(400, "callback_url must be a string")
        media = request.get("media")
        if media is None:
            return refuse(400, "media is required")
        if not media["url"].startswith(("http://", "https://")):
            return refuse(400, "media.url must be an http(s) URL")
        data, seconds, ctype = self.read_video(media["url"])
        if data is None:
            return refuse(400, f"media: {ctype}")
        if len(data) > MODIFY_MAX_BYTES:
            return refuse(400, "media: the video is over 100 MB")
        if seconds > MODIFY_MAX_SECONDS:
            return refuse(400, f"media: the video is {seconds:.1f} s; {model} modifies at most {MODIFY_MAX_SECONDS} s")
        size = video_size(data)
        if size is None:
            return refuse(400, "media: the video is not a readable MP4")
        first = None
        if "first_frame" in request:
            try:
                first = self.read_image(request["first_frame"]["url"])
            except Exception:  # noqa: BLE001 (any failure to download is the caller's bad URL)
                return refuse(400, "first_frame: could not download the image")
        self.native_ops.append({"operation": "modify", "seconds": seconds, "content_type": ctype})
        self.started()
        generation = {
            "id": str(uuid.uuid4()),
            "generation_type": "modify_video",
            "state": "queued",
            "failure_reason": None,
            "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "assets": None,
            "model": model,
            "request": request,
        }
        # The output keeps the input's length and frame size (not documented; assumed).
        spec = None if self.refused(prompt) else (size[0], size[1], max(1, round(seconds)), first)
        return self.accepted(generation, spec)

    def get(self, gen_id):
        with self.lock:
            entry = self.generations.get(gen_id)
            if entry is None:
                return refuse(404, "Generation not found")
            entry["polls"] += 1
            generation = dict(entry["generation"])
            polls = entry["polls"]
            if polls >= 2:
                generation["state"] = "dreaming"
            if polls >= 4:
                if entry["spec"] is None:
                    generation["state"] = "failed"
                    generation["failure_reason"] = MODERATION_FAILURE
                else:
                    if "video" not in entry:
                        width, height, seconds, first = entry["spec"]
                        entry["video"] = self.cdn_url(width, height, seconds, False, first)
                        # Rendered now, under the lock: a download never sees a clip half written.
                        self.clip_path(entry["video"].rsplit("/", 1)[1])
                    generation["state"] = "completed"
                    generation["assets"] = {"video": entry["video"]}
        return 200, generation, []
