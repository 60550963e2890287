"""A fake of Runway's API, written from its documentation (checked 2026-11-26): the API reference
(docs.dev.runwayml.com/api/: `POST /v1/text_to_video`, `POST /v1/image_to_video`,
`GET /v1/tasks/{id}`, `DELETE /v1/tasks/{id}`; the per-model request schemas as Runway's
OpenAPI-generated SDK publishes them, runwayml/sdk-python 5.13.0), *API Input Parameters*
(docs.dev.runwayml.com/assets/inputs/), *Handle Task Failures* (.../errors/task-failures/) and
*HTTP Errors* (.../errors/errors).

It refuses what the API refuses: a missing or wrong `Authorization: Bearer` key (401), a missing
or unknown `X-Runway-Version` (400), an unknown model or one that does not serve the endpoint
(`gen4_turbo` renders only from an image), fields the model does not take, a `ratio` or
`duration` the model does not render, a missing or over-long `promptText` where it is required,
a `promptImage` that is not an HTTPS URL on a named host or a data URI of JPEG, PNG or WebP of at
most 5 MB, frame positions the model does not take (`last` on the gen4 models, `last` without
`first`). Tasks go PENDING → RUNNING (progress 0.25, 0.75) → SUCCEEDED over polls, with `output`
on the fake's CDN at the ratio's size (with audio for the Veo models unless `audio` is false); a
refused prompt fails the task with `failureCode: "SAFETY.INPUT.TEXT"`. `DELETE` cancels a
pending or running task (recorded in `cancels`) and deletes a finished one."""

import base64
import ipaddress
import json
import time
import urllib.parse
import uuid

from fakes.base import HostedFake

API_VERSION = "2024-11-06"
GEN4_IMAGE = ["1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672"]
VEO = ["1280:720", "720:1280", "1080:1920", "1920:1080"]
# model -> endpoint -> (ratios, durations, frame positions, fields beyond model/promptText/ratio/duration/promptImage)
MODELS = {
    "gen4.5": {
        "text_to_video": (["1280:720", "720:1280"], range(2, 11), (), {"seed", "contentModeration"}),
        "image_to_video": (GEN4_IMAGE, range(2, 11), ("first",), {"seed", "contentModeration"}),
    },
    "gen4_turbo": {
        "image_to_video": (GEN4_IMAGE, range(2, 11), ("first",), {"seed", "contentModeration"}),
    },
    "veo3.1": {
        "text_to_video": (VEO, (4, 6, 8), (), {"audio", "negativePrompt"}),
        "image_to_video": (VEO, (4, 6, 8), ("first", "last"), {"audio", "negativePrompt"}),
    },
    "veo3.1_fast": {
        "text_to_video": (VEO, (4, 6, 8), (), {"audio", "negativePrompt"}),
        "image_to_video": (VEO, (4, 6, 8), ("first", "last"), {"audio", "negativePrompt"}),
    },
    "veo3": {
        "text_to_video": (VEO, (8,), (), {"negativePrompt"}),
        "image_to_video": (VEO, (8,), ("first",), {"negativePrompt"}),
    },
}
IMAGE_TYPES = ("image/jpeg", "image/png", "image/webp")
DATA_URI_LIMIT = 5 * 1000 * 1000


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class Fake(HostedFake):
    kind = "runway"
    key_env = "FAKE_RUNWAY_KEY"
    cancel_supported = True
    model = "gen4.5"

    def __init__(self):
        super().__init__()
        self.tasks = {}  # id -> dict(polls, status, refused, spec, created)

    # --- the API ------------------------------------------------------------------------

    def api(self, method, path, headers, body):
        if headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"error": "Invalid API key"}, []
        if headers.get("x-runway-version") != API_VERSION:
            return 400, {"error": f"X-Runway-Version must be one of: {API_VERSION}"}, []
        route = urllib.parse.urlsplit(path).path
        try:
            if method == "POST" and route in ("/v1/text_to_video", "/v1/image_to_video"):
                return self.create(route.rsplit("/", 1)[1], body)
            if route.startswith("/v1/tasks/") and route.count("/") == 3:
                task_id = route.rsplit("/", 1)[1]
                if method == "GET":
                    return self.get(task_id)
                if method == "DELETE":
                    return self.delete(task_id)
                return 405, {"error": "Method not allowed"}, []
        except Refused as e:
            return e.status, {"error": e.message}, []
        return 404, {"error": "Not found"}, []

    def create(self, endpoint, raw):
        try:
            req = json.loads(raw or b"null")
        except ValueError:
            raise Refused(400, "The request body is not JSON") from None
        if not isinstance(req, dict):
            raise Refused(400, "The request body must be an object")
        model = req.get("model")
        if model not in MODELS:
            raise Refused(400, f"model: Invalid enum value. Expected one of {sorted(MODELS)}")
        if endpoint not in MODELS[model]:
            raise Refused(400, f"model: {model} is not available on /v1/{endpoint}")
        ratios, durations, positions, extra = MODELS[model][endpoint]
        allowed = {"model", "promptText", "ratio", "duration", *extra}
        if endpoint == "image_to_video":
            allowed.add("promptImage")
        unknown = sorted(set(req) - allowed)
        if unknown:
            raise Refused(400, f"Unrecognized key(s) in object: {', '.join(unknown)}")
        prompt = req.get("promptText")
        if prompt is not None or model == "gen4.5" or endpoint == "text_to_video":
            if not isinstance(prompt, str) or not prompt.strip():
                raise Refused(400, "promptText: must be a non-empty string")
            if len(prompt.encode("utf-16-le")) // 2 > 1000:
                raise Refused(400, "promptText: must be at most 1000 characters")
        ratio = req.get("ratio")
        if ratio not in ratios:
            raise Refused(400, f"ratio: Invalid enum value. Expected one of {ratios}, received {ratio!r}")
        duration = req.get("duration", 10 if model.startswith("gen4") else 8)
        if model == "gen4.5" and "duration" not in req:
            raise Refused(400, "duration: Required")
        if isinstance(duration, bool) or not isinstance(duration, int) or duration not in durations:
            raise Refused(400, f"duration: must be one of {list(durations)}, received {duration!r}")
        if "audio" in req and not isinstance(req["audio"], bool):
            raise Refused(400, "audio: Expected boolean")
        first = None
        if endpoint == "image_to_video":
            images = req.get("promptImage")
            if isinstance(images, str):
                images = [{"uri": images, "position": "first"}]
            if not isinstance(images, list) or not images:
                raise Refused(400, "promptImage: Required")
            seen = {}
            for image in images:
                if not isinstance(image, dict) or set(image) != {"uri", "position"}:
                    raise Refused(400, "promptImage: each item is {uri, position}")
                if image["position"] not in positions:
                    raise Refused(400, f"promptImage.position: {model} takes {list(positions)}")
                if image["position"] in seen:
                    raise Refused(400, "promptImage: each position at most once")
                seen[image["position"]] = self.asset(image["uri"])
            if "first" not in seen:
                raise Refused(400, f"promptImage: {model} needs a first frame")
            first = seen["first"]
        self.started()
        if first is not None:
            self.first_frames.append(first)
        width, height = (int(v) for v in ratio.split(":"))
        audio = model.startswith("veo") and req.get("audio", True)
        task_id = str(uuid.uuid4())
        with self.lock:
            self.tasks[task_id] = {
                "polls": 0,
                "status": "PENDING",
                "refused": self.refused(prompt),
                "spec": (width, height, duration, audio, first),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            }
        return 200, {"id": task_id}, []

    def asset(self, uri):
        """The bytes of a promptImage, refused as Runway refuses it."""
        if not isinstance(uri, str) or not uri:
            raise Refused(400, "promptImage.uri: Required")
        if uri.startswith("data:"):
            head, _, data = uri.partition(",")
            if len(uri) > DATA_URI_LIMIT:
                raise Refused(400, "promptImage: data URIs are limited to 5MB")
            mime = head[len("data:"):].split(";")[0]
            if mime not in IMAGE_TYPES or not head.endswith(";base64"):
                raise Refused(400, f"promptImage: unsupported data URI type {mime!r}")
            try:
                return base64.b64decode(data, validate=True)
            except ValueError:
                raise Refused(400, "promptImage: the data URI is not valid base64") from None
        parts = urllib.parse.urlsplit(uri)
        if parts.scheme == "runway":
            raise Refused(400, "promptImage: unknown upload URI")
        if parts.scheme != "https":
            raise Refused(400, "promptImage: URLs must be HTTPS")
        try:
            ipaddress.ip_address(parts.hostname or "")
            raise Refused(400, "promptImage: URLs must name a domain, not an IP address")
        except ValueError:
            pass
        if len(uri) > 2048:
            raise Refused(400, "promptImage: URLs are limited to 2048 characters")
        try:
            return self.read_image(uri)
        except Exception:  # noqa: BLE001 (the fake reports any fetch failure as Runway does)
            raise Refused(400, "promptImage: failed to fetch the asset") from None

    def get(self, task_id):
        with self.lock:
            task = self.tasks.get(task_id)
            if task is None or task["status"] == "DELETED":
                return 404, {"error": "Task not found"}, []
            answer = {"id": task_id, "createdAt": task["created"]}
            if task["status"] in ("PENDING", "RUNNING"):
                task["polls"] += 1
                polls = task["polls"]
                if task["refused"] and polls >= 2:
                    task["status"] = "FAILED"
                elif polls >= 4:
                    task["status"] = "SUCCEEDED"
                    task["output"] = [self.cdn_url(*task["spec"])]
                elif polls >= 2:
                    task["status"] = "RUNNING"
                    task["progress"] = 0.25 if polls == 2 else 0.75
            answer["status"] = task["status"]
            if task["status"] == "RUNNING":
                answer["progress"] = task["progress"]
            elif task["status"] == "SUCCEEDED":
                answer["output"] = task["output"]
            elif task["status"] == "FAILED":
                answer["failure"] = "The prompt was flagged by content moderation."
                answer["failureCode"] = "SAFETY.INPUT.TEXT"
        return 200, answer, []

    def delete(self, task_id):
        with self.lock:
            task = self.tasks.get(task_id)
            if task is None or task["status"] == "DELETED":
                return 404, {"error": "Task not found"}, []
            if task["status"] in ("PENDING", "THROTTLED", "RUNNING"):
                task["status"] = "CANCELLED"
                self.cancels.append(task_id)
            else:
                task["status"] = "DELETED"
        return 204, None, []

    def engine_toml(self, engine_id):
        return (
            f'[[engines]]\nid = "{engine_id}"\nkind = "runway"\nbase_url = "{self.base_url}"\n'
            f'api_key_env = "{self.key_env}"\nmodel_id = "{self.model}"\noutput_hosts = ["127.0.0.1"]\n'
        )
