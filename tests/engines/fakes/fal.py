"""A fake of fal's queue (`queue.fal.run`) serving three video models, written from fal's
documentation (checked 2026-11-26): *Asynchronous Inference* and the *Inference API* reference
(submit `POST /{model_id}`; `GET /{owner}/{app}/requests/{id}/status`, 202 while queued or in
progress, 200 once completed; `GET /{owner}/{app}/requests/{id}` for the result; `PUT
…/cancel` answering CANCELLATION_REQUESTED, ALREADY_COMPLETED or NOT_FOUND; the status, result
and cancel URLs name only the owner and the app), *Model Errors* (a 422 whose `detail` lists
typed errors, `content_policy_violation` for a refused input) and the model pages of Kling 2.5
Turbo Pro (text-to-video, image-to-video), Veo 3.1 (text, image-to-video,
first-last-frame-to-video, reference-to-video, and extend-video: fal.ai/models/fal-ai/veo3.1/
extend-video/api, read 2026-11-28) and MiniMax Hailuo 02 Standard.

It refuses a missing or wrong `Authorization: Key` (401), an endpoint it does not serve (404),
and, with a 422 in fal's `detail` shape, a missing required field, a value outside the model's
enum (`duration` "5"/"10" for Kling, "4s"/"6s"/"8s" for Veo, …), a wrong type, an image that is
not an http(s) URL or data URI, and any field the model does not document (fal's models
ignore unknown fields; the fake refuses them, so a mapping mistake shows). extend-video takes
`prompt` and `video_url` (required), `duration` "7s" (the only value documented), `aspect_ratio`
auto/16:9/9:16, `resolution` "720p" (its default), `generate_audio`, `negative_prompt`, `seed`,
`auto_fix`, `safety_tolerance`; it downloads the video and refuses one not served as video/mp4,
longer than 8 s, or not 16:9 or 9:16 (the page: "Input videos up to 8 seconds", "16:9 or 9:16";
its 720p/1080p rule is not checked, since reelgate's sources are 768p: unconfirmed), and answers
the source and 7 s more as one video at 720p with audio (as Veo's own extension does; not
confirmed for fal). Requests go IN_QUEUE
→ IN_PROGRESS → COMPLETED over polls; the result is `{"video": {"url": …}}` on the fake's CDN
at the model's native size (Kling 2.5 Turbo Pro 1080p in the asked ratio, or its image's for an
image job; Veo at the asked resolution, with audio unless `generate_audio` is false; Hailuo
768P), and for a refused prompt a 422 `content_policy_violation` (the status still reads
COMPLETED, as fal's does)."""

import json
import math
import urllib.parse
import uuid

from conftest import image_size
from fakes.base import HostedFake

KLING = "fal-ai/kling-video/v2.5-turbo/pro"
HAILUO = "fal-ai/minimax/hailuo-02/standard"


def enum(*values):
    return ("enum", values)


STR, BOOL, URL, URLS, NUM, VIDEO = ("str",), ("bool",), ("url",), ("urls",), ("num",), ("video",)
VEO_EXTEND = "fal-ai/veo3.1/extend-video"
#: extend-video: the longest source, and the seconds it adds
EXTEND_MAX_SOURCE, EXTEND_SECONDS = 8.0, 7
VEO_COMMON = {
    "prompt": STR, "duration": enum("4s", "6s", "8s"), "aspect_ratio": enum("16:9", "9:16"),
    "resolution": enum("720p", "1080p", "4k"), "generate_audio": BOOL, "negative_prompt": STR,
    "auto_fix": BOOL, "seed": NUM, "safety_tolerance": enum("1", "2", "3", "4", "5", "6"),
}
# endpoint -> (fields, required, family)
ENDPOINTS = {
    f"{KLING}/text-to-video": (
        {"prompt": STR, "duration": enum("5", "10"), "aspect_ratio": enum("16:9", "9:16", "1:1"),
         "negative_prompt": STR, "cfg_scale": NUM},
        {"prompt"}, "kling"),
    f"{KLING}/image-to-video": (
        {"prompt": STR, "image_url": URL, "tail_image_url": URL, "duration": enum("5", "10"),
         "negative_prompt": STR, "cfg_scale": NUM},
        {"prompt", "image_url"}, "kling"),
    "fal-ai/veo3.1": (VEO_COMMON, {"prompt"}, "veo"),
    "fal-ai/veo3.1/image-to-video": (
        {**VEO_COMMON, "aspect_ratio": enum("auto", "16:9", "9:16"), "image_url": URL},
        {"prompt", "image_url"}, "veo"),
    "fal-ai/veo3.1/first-last-frame-to-video": (
        {**VEO_COMMON, "aspect_ratio": enum("auto", "16:9", "9:16"), "first_frame_url": URL,
         "last_frame_url": URL},
        {"prompt", "first_frame_url", "last_frame_url"}, "veo"),
    "fal-ai/veo3.1/reference-to-video": (
        {**VEO_COMMON, "image_urls": URLS}, {"prompt", "image_urls"}, "veo"),
    VEO_EXTEND: (
        {"prompt": STR, "video_url": VIDEO, "duration": enum("7s"), "aspect_ratio": enum("auto", "16:9", "9:16"),
         "resolution": enum("720p"), "generate_audio": BOOL, "negative_prompt": STR, "seed": NUM, "auto_fix": BOOL,
         "safety_tolerance": enum("1", "2", "3", "4", "5", "6")},
        {"prompt", "video_url"}, "veo_extend"),
    f"{HAILUO}/text-to-video": (
        {"prompt": STR, "duration": enum("6", "10"), "prompt_optimizer": BOOL},
        {"prompt"}, "hailuo"),
    f"{HAILUO}/image-to-video": (
        {"prompt": STR, "image_url": URL, "end_image_url": URL, "duration": enum("6", "10"),
         "resolution": enum("512P", "768P"), "prompt_optimizer": BOOL},
        {"prompt", "image_url"}, "hailuo"),
}
DEFAULTS = {"kling": {"duration": "5", "aspect_ratio": "16:9"},
            "veo": {"duration": "8s", "aspect_ratio": "16:9", "resolution": "720p", "generate_audio": True},
            "hailuo": {"duration": "6", "resolution": "768P"},
            "veo_extend": {"duration": "7s", "aspect_ratio": "auto", "resolution": "720p", "generate_audio": True}}


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


def shaped(sizes, reference):
    """The size in `sizes` whose shape is nearest `reference` (width, height)."""
    want = math.log(reference[0] / reference[1])
    return min(sizes, key=lambda s: abs(math.log(s[0] / s[1]) - want))


class Invalid(Exception):
    def __init__(self, field, msg, kind):
        super().__init__(msg)
        self.detail = {"loc": ["body", field], "msg": msg, "type": kind}


class Fake(HostedFake):
    kind = "fal"
    key_env = "FAKE_FAL_KEY"
    cancel_supported = True
    # The engine is Veo 3.1 (the model table in functions/reelgate/src/domain/catalog/
    # hosted_models.rs): the generic tests then cover its native extension and references.
    model = "fal-ai/veo3.1"
    OPERATIONS = {"remix": "chained", "extension": "native", "edit": "unavailable"}
    REFERENCES = True

    def __init__(self):
        super().__init__()
        self.requests = {}  # request id -> dict(app, polls, state, refused, spec)
        self.submitted = []  # (endpoint, input) of every accepted submit

    def api(self, method, path, headers, body):
        if headers.get("authorization") != f"Key {self.key}":
            return 401, {"detail": "No user found for Key ID and Secret"}, []
        route = urllib.parse.urlsplit(path).path.strip("/")
        parts = route.split("/")
        if len(parts) >= 4 and parts[2] == "requests":
            app, request_id, rest = "/".join(parts[:2]), parts[3], parts[4:]
            if method == "GET" and rest == ["status"]:
                return self.status(app, request_id)
            if method == "GET" and rest == []:
                return self.result(app, request_id)
            if method == "PUT" and rest == ["cancel"]:
                return self.cancel(app, request_id)
            return 405, {"detail": "Method Not Allowed"}, []
        if method == "POST" and route in ENDPOINTS:
            return self.submit(route, body)
        return 404, {"detail": f"Application '{route}' not found"}, []

    def urls(self, app, request_id):
        base = f"{self.base_url}/{app}/requests/{request_id}"
        return {"request_id": request_id, "response_url": base, "status_url": f"{base}/status",
                "cancel_url": f"{base}/cancel"}

    def submit(self, endpoint, raw):
        try:
            data = json.loads(raw or b"null")
        except ValueError:
            return 422, {"detail": [{"loc": ["body"], "msg": "Invalid JSON", "type": "json_invalid"}]}, []
        if not isinstance(data, dict):
            return 422, {"detail": [{"loc": ["body"], "msg": "Input should be an object", "type": "dict_type"}]}, []
        fields, required, family = ENDPOINTS[endpoint]
        try:
            images = self.validate(data, fields, required)
            source = self.source(images["video_url"]) if "video_url" in images else None
        except Invalid as e:
            return 422, {"detail": [e.detail]}, []
        self.started()
        value = {**DEFAULTS[family], **data}
        first = images.get("image_url") or images.get("first_frame_url")
        if first is not None:
            self.first_frames.append(first)
        self.reference_counts.append(len(images.get("image_urls", [])))
        self.submitted.append((endpoint, data))
        if source is not None:
            # The source and its continuation as one video, at 720p in the source's shape.
            seconds, ctype, (sw, sh) = source
            self.native_ops.append({"operation": "extension", "seconds": seconds, "content_type": ctype})
            width, height = (1280, 720) if sw >= sh else (720, 1280)
            if value["aspect_ratio"] != "auto":
                width, height = (1280, 720) if value["aspect_ratio"] == "16:9" else (720, 1280)
            audio, seconds = value["generate_audio"], round(seconds + EXTEND_SECONDS, 3)
        else:
            width, height, audio = self.native(family, value, first)
            seconds = int(str(value["duration"]).rstrip("s"))
        request_id = str(uuid.uuid4())
        app = "/".join(endpoint.split("/")[:2])
        with self.lock:
            self.requests[request_id] = {
                "app": app, "polls": 0, "state": "IN_QUEUE", "refused": self.refused(data.get("prompt")),
                "spec": (width, height, seconds, audio, first),
            }
        return 200, {**self.urls(app, request_id), "status": "IN_QUEUE", "queue_position": 0}, []

    def validate(self, data, fields, required):
        """Checks the input against the model's schema; the image fields' bytes, by field."""
        for field in sorted(required - set(data)):
            raise Invalid(field, "Field required", "missing")
        images = {}
        for field, value in data.items():
            rule = fields.get(field)
            if rule is None:
                raise Invalid(field, "Extra inputs are not permitted", "extra_forbidden")
            if rule[0] == "enum" and value not in rule[1]:
                options = ", ".join(repr(v) for v in rule[1])
                raise Invalid(field, f"Input should be {options}", "literal_error")
            if rule is STR and not isinstance(value, str):
                raise Invalid(field, "Input should be a valid string", "string_type")
            if rule is BOOL and not isinstance(value, bool):
                raise Invalid(field, "Input should be a valid boolean", "bool_type")
            if rule is NUM and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise Invalid(field, "Input should be a valid number", "float_type")
            if rule is URL:
                images[field] = self.image(field, value)
            if rule is URLS:
                if not isinstance(value, list) or not value:
                    raise Invalid(field, "Input should be a non-empty list", "list_type")
                images[field] = [self.image(field, v) for v in value]
            if rule is VIDEO:
                if not isinstance(value, str) or not value.startswith(("http://", "https://")):
                    raise Invalid(field, "Input should be a valid URL", "url_parsing")
                images[field] = value
        if "prompt" in data and not data["prompt"].strip():
            raise Invalid("prompt", "String should have at least 1 character", "string_too_short")
        return images

    def source(self, url):
        """Downloads extend-video's source: (seconds, content type, (width, height)), or Invalid."""
        data, seconds, ctype = self.read_video(url)
        if data is None:
            raise Invalid("video_url", f"Failed to download the file: {ctype}", "file_download_error")
        size = video_size(data)
        if size is None:
            raise Invalid("video_url", "The video could not be read", "video_invalid")
        if seconds > EXTEND_MAX_SOURCE + 0.1:
            raise Invalid("video_url", f"The video lasts {seconds:.2f} s; at most 8 s is supported",
                          "video_duration_too_long")
        ratio = size[0] / size[1]
        if min(abs(ratio - 16 / 9), abs(ratio - 9 / 16)) > 0.02:
            raise Invalid("video_url", "The video should be 16:9 or 9:16", "video_aspect_ratio")
        return seconds, ctype, size

    def image(self, field, value):
        if not isinstance(value, str) or not (value.startswith(("http://", "https://", "data:"))):
            raise Invalid(field, "Input should be a valid URL", "url_parsing")
        try:
            return self.read_image(value)
        except Exception:  # noqa: BLE001 (fal reports any download failure the same way)
            raise Invalid(field, "Failed to download the file", "file_download_error") from None

    @staticmethod
    def native(family, value, first):
        """(width, height, audio) the model renders for this input."""
        source = image_size(first) if first else None
        if family == "kling":
            sizes = [(1920, 1080), (1080, 1920), (1080, 1080)]
            if source:
                return (*shaped(sizes, source), False)
            return (*dict(zip(("16:9", "9:16", "1:1"), sizes))[value["aspect_ratio"]], False)
        if family == "veo":
            short = {"720p": 720, "1080p": 1080, "4k": 2160}[value["resolution"]]
            long = short * 16 // 9
            ratio = value.get("aspect_ratio", "16:9")
            if ratio == "auto":
                ratio = "9:16" if source and source[1] > source[0] else "16:9"
            size = (long, short) if ratio == "16:9" else (short, long)
            return (*size, value.get("generate_audio", True))
        sizes = [(1366, 768), (768, 1366), (768, 768)] if value.get("resolution", "768P") == "768P" else [
            (912, 512), (512, 912), (512, 512)]
        return (*(shaped(sizes, source) if source else sizes[0]), False)

    def status(self, app, request_id):
        with self.lock:
            req = self.requests.get(request_id)
            if req is None or req["app"] != app:
                return 404, {"detail": "Request not found"}, []
            if req["state"] in ("IN_QUEUE", "IN_PROGRESS"):
                req["polls"] += 1
                if req["polls"] >= 4:
                    req["state"] = "COMPLETED"
                elif req["polls"] >= 2:
                    req["state"] = "IN_PROGRESS"
            answer = {**self.urls(app, request_id), "status": req["state"]}
            if req["state"] == "IN_QUEUE":
                answer["queue_position"] = 0
            else:
                answer["logs"] = None
            if req["state"] == "COMPLETED":
                answer["metrics"] = {"inference_time": 1.5}
                return 200, answer, []
            return 202, answer, []

    def result(self, app, request_id):
        with self.lock:
            req = self.requests.get(request_id)
            if req is None or req["app"] != app:
                return 404, {"detail": "Request not found"}, []
            if req["state"] != "COMPLETED":
                return 400, {"detail": "Request is still in progress"}, []
            if req.get("canceled"):
                return 499, {"detail": "Request was cancelled", "error_type": "client_cancelled"}, []
            if req["refused"]:
                return 422, {"detail": [{
                    "loc": ["body", "prompt"], "msg": "The content was flagged by a content checker.",
                    "type": "content_policy_violation", "url": "https://docs.fal.ai/errors#content_policy_violation",
                }]}, []
            if "url" not in req:
                req["url"] = self.cdn_url(*req["spec"])
            return 200, {"video": {"url": req["url"], "content_type": "video/mp4", "file_name": "output.mp4"}}, []

    def cancel(self, app, request_id):
        with self.lock:
            req = self.requests.get(request_id)
            if req is None or req["app"] != app:
                return 404, {"status": "NOT_FOUND"}, []
            if req["state"] == "COMPLETED":
                return 400, {"status": "ALREADY_COMPLETED"}, []
            req["state"], req["canceled"] = "COMPLETED", True
            self.cancels.append(request_id)
        return 202, {"status": "CANCELLATION_REQUESTED"}, []

    def engine_toml(self, engine_id):
        return (
            f'[[engines]]\nid = "{engine_id}"\nkind = "fal"\nbase_url = "{self.base_url}"\n'
            f'api_key_env = "{self.key_env}"\nmodel_id = "{self.model}"\noutput_hosts = ["127.0.0.1"]\n'
        )
