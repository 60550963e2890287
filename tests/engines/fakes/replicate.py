"""A fake of Replicate's predictions API, written from its HTTP API reference (predictions.create,
models.predictions.create, predictions.get, predictions.cancel), its *Prediction lifecycle* page
and the input schemas of `minimax/hailuo-02` (replicate.com/minimax/hailuo-02/api), read
2026-11-26, and `luma/modify-video` (replicate.com/luma/modify-video/api), read 2026-11-28.

Routes: `POST /v1/models/{owner}/{name}/predictions` with `{"input": {...}}` (an official model),
`POST /v1/predictions` with `{"version": ..., "input": {...}}` (a version id, `owner/name:version`
or, since 2025-08, an official `owner/name`), `GET /v1/predictions/{id}`,
`POST /v1/predictions/{id}/cancel`. Every call needs `Authorization: Bearer <key>` (401 with a
problem-details body otherwise). Errors are RFC 7807 problem details (`title`, `detail`,
`status`), as Replicate's clients read them.

What it refuses as the API does: an unknown model or version (404); a body that is not JSON or
has fields besides `input`/`version`/`webhook`/`webhook_events_filter`/`stream` (422); a
hailuo-02 input with a `duration` that is not the integer 6 or 10, a `resolution` other than
512p/768p/1080p, a `prompt` that is not a non-empty string, a frame that is not an http(s) or
data URL, `prompt_optimizer` that is not a boolean (422, "Input validation failed"). Stricter
than the API, to catch misnamed fields: an input field the model does not have is refused too
(Replicate would drop it). At run time, as the model does: 10 s at 1080p fails the prediction;
a first frame that cannot be downloaded fails it; a prompt holding the refusal word fails it
with Replicate's E005 ("The input or output was flagged as sensitive…").

A prediction is `starting` on create and on the first poll, `processing` for the next polls
(its logs print a rising percentage), then `succeeded` with `output` the URL of a real MP4 on
the fake's CDN at hailuo-02's size for the asked resolution (16:9, 1366x768 at 768p; with a
first frame, the frame's aspect ratio at that resolution, as the schema says), without audio
(hailuo-02 renders none). Cancel moves a running prediction to `canceled` and answers it (a
finished one is answered unchanged).

`luma/modify-video` takes `video` (required: "Maximum video size is 100mb. Maximum video duration
is 30 seconds"), `prompt`, `first_frame`, `mode` (adhere_1..3, flex_1..3, reimagine_1..3, per
Luma's *Modify Video* page; default adhere_1) and the deprecated `video_url`/`first_frame_url`;
anything else is refused (422). The video is downloaded at create: one that cannot be
downloaded, is not served as video/mp4, is over 100 MB or over 30 s fails the prediction (the
model's run-time check). It records `{"operation": "modify", "seconds", "content_type"}` in
`native_ops` and succeeds with a clip of the source's size and length, without audio.

Test checks, not part of the API: a `Prefer: wait` header (which would hold the create up to
60 s) is answered 400, since reelgate must always create asynchronously."""

import json
import threading
import time
import uuid

from fakes.base import HostedFake

HAILUO = {
    "fields": {"prompt", "first_frame_image", "last_frame_image", "duration", "resolution", "prompt_optimizer"},
    "durations": (6, 10),
    "resolutions": {"512p": 512, "768p": 768, "1080p": 1080},
    "default_resolution": "1080p",
    "version": "c43b610efe40d08a28d2c07cb3515dab1cd3324dfc7418f3304a092571071d22",
}
MODIFY = {
    "fields": {"video", "first_frame", "prompt", "mode", "video_url", "first_frame_url"},
    "modes": tuple(f"{m}_{i}" for m in ("adhere", "flex", "reimagine") for i in (1, 2, 3)),
    "max_seconds": 30.0,
    "max_bytes": 100 * 1024 * 1024,
    "version": "f52f17143e022cadb2dbf20467cfe4510f04cf940dcb846f1581472082a295d2",
}
MODELS = {"minimax/hailuo-02": HAILUO, "luma/modify-video": MODIFY}
E005 = "The input or output was flagged as sensitive. Please try again with different inputs. (E005)"
POLLS_STARTING = 1
POLLS_TO_FINISH = 5


def video_size(data):
    """(width, height) of an MP4's video stream, by ffprobe."""
    import subprocess

    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "csv=p=0", "-"], input=data, capture_output=True)
    try:
        w, h = probe.stdout.decode().strip().split(",")[:2]
        return int(w), int(h)
    except ValueError:
        return None


def problem(status, title, detail):
    return status, {"title": title, "detail": detail, "status": status}, []


def is_url(value):
    return isinstance(value, str) and value.startswith(("https://", "http://", "data:"))


class Fake(HostedFake):
    kind = "replicate"
    key_env = "FAKE_REPLICATE_KEY"
    cancel_supported = True
    # hailuo-02 (its engine here) takes no source video and no reference images.
    OPERATIONS = {"remix": "chained", "extension": "chained", "edit": "unavailable"}
    REFERENCES = False

    def __init__(self):
        super().__init__()
        self.predictions = {}
        self.plock = threading.Lock()

    # --- the API --------------------------------------------------------------------------

    def api(self, method, path, headers, body):
        if headers.get("authorization") != f"Bearer {self.key}":
            return problem(401, "Unauthenticated", "You did not pass a valid authentication token")
        if "wait" in headers.get("prefer", "").lower():
            return problem(400, "Test fake", "reelgate must not block on Prefer: wait")
        parts = path.split("?", 1)[0].strip("/").split("/")
        if parts[:1] != ["v1"]:
            return problem(404, "Not found", "The requested resource could not be found.")
        parts = parts[1:]
        if method == "POST" and len(parts) == 4 and parts[0] == "models" and parts[3] == "predictions":
            return self.create(f"{parts[1]}/{parts[2]}", body, headers, by_version=False)
        if method == "POST" and parts == ["predictions"]:
            return self.create(None, body, headers, by_version=True)
        if len(parts) >= 2 and parts[0] == "predictions":
            with self.plock:
                p = self.predictions.get(parts[1])
            if p is None:
                return problem(404, "Not found", "The requested resource could not be found.")
            if method == "GET" and len(parts) == 2:
                return 200, self.poll(p), []
            if method == "POST" and parts[2:] == ["cancel"]:
                with self.plock:
                    if p["status"] in ("starting", "processing"):
                        p["status"] = "canceled"
                        p["completed_at"] = self.now()
                    self.cancels.append(p["id"])
                return 200, self.public(p), []
        return problem(404, "Not found", "The requested resource could not be found.")

    def create(self, model, body, headers, by_version):
        if "application/json" not in headers.get("content-type", ""):
            return problem(415, "Unsupported media type", "Send the body as application/json")
        try:
            req = json.loads(body or b"null")
        except ValueError:
            return problem(400, "Bad request", "The body is not valid JSON")
        if not isinstance(req, dict):
            return problem(422, "Input validation failed", "the body must be an object")
        allowed = {"input", "webhook", "webhook_events_filter", "stream"} | ({"version"} if by_version else set())
        unknown = sorted(set(req) - allowed)
        if unknown:
            return problem(422, "Invalid request", f"unknown field: {unknown[0]}")
        if by_version:
            ref = req.get("version")
            if not isinstance(ref, str):
                return problem(422, "Invalid request", "version is required")
            model = self.model_for(ref)
            if model is None:
                return problem(404, "Not found", "The requested version could not be found.")
        spec = MODELS.get(model)
        if spec is None:
            return problem(404, "Not found", "The requested model could not be found.")
        inp = req.get("input")
        if not isinstance(inp, dict):
            return problem(422, "Input validation failed", "- input: input is required")
        errors = self.validate_modify(inp) if spec is MODIFY else self.validate(spec, inp)
        if errors:
            return problem(422, "Input validation failed", "".join(f"- input.{e}\n" for e in errors))
        if spec is MODIFY:
            return self.modify(model, spec, inp, by_version)
        self.started()
        tier = inp.get("resolution", spec["default_resolution"])
        seconds = inp.get("duration", 6)
        run_error = None
        first_frame = None
        if "first_frame_image" in inp:
            try:
                first_frame = self.read_image(inp["first_frame_image"])
            except Exception:  # noqa: BLE001 (the model fails the prediction)
                run_error = "Failed to download first_frame_image"
            else:
                self.first_frames.append(first_frame)
        if seconds == 10 and tier == "1080p":
            run_error = "10 seconds is only available for 768p resolution"
        if self.refused(inp.get("prompt")):
            run_error = E005
        return self.prediction(model, spec, inp, by_version, size=self.size(spec["resolutions"][tier], first_frame),
                               seconds=seconds, first_frame=first_frame, error=run_error)

    def prediction(self, model, spec, inp, by_version, size, seconds, first_frame=None, error=None, audio=False):
        pid = uuid.uuid4().hex[:26]
        p = {
            "id": pid,
            "model": model,
            "version": spec["version"] if by_version else "hidden",
            "input": inp,
            "logs": "",
            "output": None,
            "data_removed": False,
            "error": None,
            "status": "starting",
            "created_at": self.now(),
            "urls": {
                "cancel": f"{self.base_url}/v1/predictions/{pid}/cancel",
                "get": f"{self.base_url}/v1/predictions/{pid}",
                "stream": f"{self.base_url}/v1/stream/{pid}",
                "web": f"https://replicate.com/p/{pid}",
            },
            "_polls": 0,
            "_size": size,
            "_seconds": seconds,
            "_audio": audio,
            "_first_frame": first_frame,
            "_error": error,
        }
        with self.plock:
            self.predictions[pid] = p
        return 201, self.public(p), []

    def modify(self, model, spec, inp, by_version):
        """luma/modify-video: the source is read at create; the output keeps its size and length."""
        self.started()
        url = inp.get("video", inp.get("video_url"))
        data, seconds, ctype = self.read_video(url)
        error, size = None, (1280, 720)
        if data is None:
            error, seconds = f"Failed to load video: {ctype}", 0
        elif len(data) > spec["max_bytes"]:
            error = "Maximum video size is 100mb"
        elif seconds > spec["max_seconds"]:
            error = "Maximum video duration is 30 seconds"
        else:
            size = video_size(data) or size
            self.native_ops.append({"operation": "modify", "seconds": seconds, "content_type": ctype})
        if self.refused(inp.get("prompt")):
            error = E005
        return self.prediction(model, spec, inp, by_version, size=size, seconds=round(seconds or 1, 3), error=error)

    def validate_modify(self, inp):
        errors = []
        for field in sorted(set(inp) - MODIFY["fields"]):
            errors.append(f"{field}: Additional property {field} is not allowed")
        if "video" not in inp and "video_url" not in inp:
            errors.append("video: video is required")
        for field in ("video", "video_url", "first_frame", "first_frame_url"):
            if field in inp and not is_url(inp[field]):
                errors.append(f"{field}: Does not match format 'uri'")
        if "prompt" in inp and not isinstance(inp["prompt"], str):
            errors.append("prompt: Invalid type. Expected: string")
        if "mode" in inp and inp["mode"] not in MODIFY["modes"]:
            errors.append(f"mode: mode must be one of the following: {', '.join(MODIFY['modes'])}")
        return errors

    def validate(self, spec, inp):
        errors = []
        for field in sorted(set(inp) - spec["fields"]):
            errors.append(f"{field}: Additional property {field} is not allowed")
        prompt = inp.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            errors.append("prompt: prompt is required")
        duration = inp.get("duration", 6)
        if isinstance(duration, bool) or duration not in spec["durations"]:
            errors.append(f"duration: duration must be one of the following: {', '.join(map(str, spec['durations']))}")
        if inp.get("resolution", spec["default_resolution"]) not in spec["resolutions"]:
            errors.append(f"resolution: resolution must be one of the following: {', '.join(spec['resolutions'])}")
        for frame in ("first_frame_image", "last_frame_image"):
            if frame in inp and not is_url(inp[frame]):
                errors.append(f"{frame}: Does not match format 'uri'")
        if "prompt_optimizer" in inp and not isinstance(inp["prompt_optimizer"], bool):
            errors.append("prompt_optimizer: Invalid type. Expected: boolean")
        return errors

    def model_for(self, ref):
        name, _, version = ref.partition(":")
        if not version and "/" not in name:
            name, version = None, name
        for model, spec in MODELS.items():
            if (name is None or name == model) and (not version or version == spec["version"]):
                return model
        return None

    @staticmethod
    def size(short, first_frame):
        """hailuo-02's frame at a resolution tier: 16:9 unless a first frame gives the ratio."""
        from conftest import image_size

        w, h = 16, 9
        if first_frame:
            w, h = image_size(first_frame) or (16, 9)
        if w >= h:
            return 2 * round(short * w / h / 2), short
        return short, 2 * round(short * h / w / 2)

    def poll(self, p):
        with self.plock:
            if p["status"] in ("starting", "processing"):
                p["_polls"] += 1
                n = p["_polls"]
                if n <= POLLS_STARTING:
                    pass
                elif n < POLLS_TO_FINISH:
                    if p["status"] == "starting":
                        p["started_at"] = self.now()
                    p["status"] = "processing"
                    p["logs"] += f"Generating video... {100 * n // POLLS_TO_FINISH}%\n"
                elif p["_error"]:
                    p["status"], p["error"], p["completed_at"] = "failed", p["_error"], self.now()
                else:
                    w, h = p["_size"]
                    p["output"] = self.cdn_url(w, h, p["_seconds"], p["_audio"], p["_first_frame"])
                    # Rendered now, before any download: the base CDN makes a clip on its first
                    # GET, and a second GET meanwhile (a redelivered poll) would read half a file.
                    self.clip_path(p["output"].rsplit("/", 1)[1])
                    p["status"], p["completed_at"] = "succeeded", self.now()
                    p["metrics"] = {"predict_time": 1.0}
            return self.public(p)

    @staticmethod
    def public(p):
        return {k: v for k, v in p.items() if not k.startswith("_")}

    @staticmethod
    def now():
        t = time.time()
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"

    def engine_toml(self, engine_id, model_id="minimax/hailuo-02"):
        # The API is called as `localhost` while the CDN's URLs name 127.0.0.1: two origins, as
        # api.replicate.com and replicate.delivery are, so the key is never sent to the CDN.
        api = self.base_url.replace("127.0.0.1", "localhost")
        return (
            f'[[engines]]\nid = "{engine_id}"\nkind = "replicate"\nbase_url = "{api}/v1"\n'
            f'api_key_env = "{self.key_env}"\nmodel_id = "{model_id}"\noutput_hosts = ["127.0.0.1"]\n'
        )
