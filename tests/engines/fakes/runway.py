"""A fake of Runway's API, written from its documentation (checked 2026-11-26): the API reference
(docs.dev.runwayml.com/api/: `POST /v1/text_to_video`, `POST /v1/image_to_video`,
`POST /v1/video_to_video`, `GET /v1/tasks/{id}`, `DELETE /v1/tasks/{id}`; the per-model request
schemas as Runway's OpenAPI-generated SDK publishes them, runwayml/sdk-python 5.13.0, and for
`aleph2` that file's history, checked 2026-11-29), *API Input Parameters*
(docs.dev.runwayml.com/assets/inputs/), *Handle Task Failures* (.../errors/task-failures/) and
*HTTP Errors* (.../errors/errors).

It refuses what the API refuses: a missing or wrong `Authorization: Bearer` key (401), a missing or
unknown `X-Runway-Version` (400), an unknown model or one that does not serve the endpoint
(`gen4_turbo` renders only from an image), fields the model does not take, a `ratio` or `duration`
the model does not render, a missing or over-long `promptText` where it is required, a
`promptImage` that is not an HTTPS URL on a named host or a data URI of JPEG, PNG or WebP of at
most 5 MB, frame positions the model does not take (`last` on the gen4 models, `last` without
`first`). `POST /v1/video_to_video` takes `aleph2` only (`gen4_aleph` left the API 2026-06-10) with
its fields (`videoUri`, optional `promptText`, `keyframes`, `ratio`, `seed`, `targetAspectRatio`,
`contentModeration`, and `outputFormat`, `proresProfile` of a later SDK revision; no `references`),
and refuses a missing `videoUri`, one that is neither an HTTPS URL on a named host nor a
`data:video/mp4;base64,` URI, a data URI over 16 MB, an empty or over-long `promptText`, and an
unreadable video; it records the source (`native_ops`: "video_to_video", its seconds and content
type) and renders at the source's size and length (the output follows the input video, without
audio: whether aleph2 keeps the source's is undocumented). The source's length is not checked: no
Runway page states aleph2's bounds. Tasks go PENDING → RUNNING (progress 0.25, 0.75) → SUCCEEDED
over polls, with `output` on the fake's CDN at the ratio's size (with audio for the Veo models
unless `audio` is false); a refused prompt fails the task with `failureCode: "SAFETY.INPUT.TEXT"`.
`DELETE` cancels a pending or running task (recorded in `cancels`) and deletes a finished one."""

import base64
import ipaddress
import json
import os
import subprocess
import tempfile
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
# POST /v1/video_to_video: model -> the fields it takes besides `model`
VIDEO_TO_VIDEO = {
    "aleph2": {"videoUri", "promptText", "keyframes", "ratio", "seed", "targetAspectRatio",
               "contentModeration", "outputFormat", "proresProfile"},
}
VIDEO_DATA_URI_PREFIX = "data:video/mp4;base64,"
VIDEO_DATA_URI_LIMIT = 16 * 1000 * 1000


def probe(data, directory):
    """(width, height, seconds) of an MP4's video, or None when ffprobe cannot read it."""
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".mp4", delete=False) as f:
        f.write(data)
    try:
        out = subprocess.run(
            ["ffprobe", "-v", "error", "-select_streams", "v:0",
             "-show_entries", "stream=width,height:format=duration", "-of", "json", f.name],
            capture_output=True)
        info = json.loads(out.stdout or b"{}")
        stream = (info.get("streams") or [{}])[0]
        return int(stream["width"]), int(stream["height"]), float(info["format"]["duration"])
    except (ValueError, KeyError, TypeError):
        return None
    finally:
        os.unlink(f.name)


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class Fake(HostedFake):
    kind = "runway"
    key_env = "FAKE_RUNWAY_KEY"
    cancel_supported = True
    model = "gen4.5"
    # remix and edit are aleph2's video-to-video; Runway has no extension endpoint
    OPERATIONS = {"remix": "native", "extension": "chained", "edit": "native"}
    REFERENCES = False

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
            if method == "POST" and route == "/v1/video_to_video":
                return self.video_to_video(body)
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

    def video_to_video(self, raw):
        try:
            req = json.loads(raw or b"null")
        except ValueError:
            raise Refused(400, "The request body is not JSON") from None
        if not isinstance(req, dict):
            raise Refused(400, "The request body must be an object")
        model = req.get("model")
        if model not in VIDEO_TO_VIDEO:
            raise Refused(400, f"model: Invalid enum value. Expected one of {sorted(VIDEO_TO_VIDEO)}")
        unknown = sorted(set(req) - {"model", *VIDEO_TO_VIDEO[model]})
        if unknown:
            raise Refused(400, f"Unrecognized key(s) in object: {', '.join(unknown)}")
        prompt = req.get("promptText")
        if prompt is not None:
            if not isinstance(prompt, str) or not prompt.strip():
                raise Refused(400, "promptText: must be a non-empty string")
            if len(prompt.encode("utf-16-le")) // 2 > 1000:
                raise Refused(400, "promptText: must be at most 1000 characters")
        if "ratio" in req and not isinstance(req["ratio"], str):
            raise Refused(400, "ratio: Expected string")
        width, height, seconds, ctype = self.video(req.get("videoUri"))
        self.native_ops.append({"operation": "video_to_video", "seconds": seconds, "content_type": ctype})
        self.started()
        task_id = str(uuid.uuid4())
        with self.lock:
            self.tasks[task_id] = {
                "polls": 0,
                "status": "PENDING",
                "refused": self.refused(prompt),
                "spec": (width, height, seconds, False, None),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            }
        return 200, {"id": task_id}, []

    def video(self, uri):
        """(width, height, seconds, content type) of a videoUri, refused as Runway refuses it."""
        if not isinstance(uri, str) or not uri:
            raise Refused(400, "videoUri: Required")
        if uri.startswith("data:"):
            if len(uri) > VIDEO_DATA_URI_LIMIT:
                raise Refused(400, "videoUri: data URIs are limited to 16MB")
            if not uri.startswith(VIDEO_DATA_URI_PREFIX):
                raise Refused(400, f"videoUri: unsupported data URI type {uri.partition(',')[0]!r}")
            try:
                data = base64.b64decode(uri[len(VIDEO_DATA_URI_PREFIX):], validate=True)
            except ValueError:
                raise Refused(400, "videoUri: the data URI is not valid base64") from None
            ctype = "video/mp4"
        else:
            parts = urllib.parse.urlsplit(uri)
            if parts.scheme != "https":
                raise Refused(400, "videoUri: URLs must be HTTPS")
            try:
                ipaddress.ip_address(parts.hostname or "")
                raise Refused(400, "videoUri: URLs must name a domain, not an IP address")
            except ValueError:
                pass
            if len(uri) > 2048:
                raise Refused(400, "videoUri: URLs are limited to 2048 characters")
            data, _, ctype = self.read_video(uri)
            if data is None:
                raise Refused(400, f"videoUri: failed to fetch the asset ({ctype})")
        probed = probe(data, self.dir.name)
        if probed is None:
            raise Refused(400, "videoUri: the video could not be decoded")
        return (*probed, ctype)

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
