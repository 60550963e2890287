"""A fake of Veo in the Gemini API, written from Google's documentation (read 2026-11-26): *Generate
videos with Veo 3.1 in the Gemini API* (ai.google.dev/gemini-api/docs/video), the Veo API reference
of Vertex AI and the wire names of the google-genai SDK (see functions/reelgate/src/adapters/hosted/
veo.rs for the sources and what only third-party copies show).

- `POST /v1beta/models/{model}:predictLongRunning` with the key in `x-goog-api-key` (none: 403
  PERMISSION_DENIED; another: 400 API_KEY_INVALID), body `{"instances": [one instance],
  "parameters": {...}}`. Refused with Google's error shape (`{"error": {"code", "message",
  "status"}}`): an unknown model (404), unknown fields in the body, an instance or its
  parameters (400 "Invalid JSON payload received. Unknown name …"), more than one instance, an
  image that is not `{"bytesBase64Encoded", "mimeType"}` with a JPEG, PNG or WebP inside (the Gemini
  API takes no image URLs), `lastFrame` or `referenceImages` on a model without them, more than
  three reference images or a type other than `asset`, `aspectRatio` other than 16:9 / 9:16,
  `resolution` other than 720p / 1080p / 4k (no 4k on Veo 3), `durationSeconds` other than 4, 6,
  8, and 1080p, 4k or reference images at any duration but 8.
- The answer is `{"name": "models/{model}/operations/{id}"}`; `GET /v1beta/{name}` is `{"name"}`
  for the first polls, then `done` with `response.generateVideoResponse.generatedSamples[0]
  .video.uri` = `{base}/v1beta/files/{id}:download?alt=media`. That download needs the key and
  redirects (302) to `/download/v1beta/files/{id}:download?alt=media` on the same host, which
  needs the key too and serves the MP4 (x264 + AAC: Veo renders audio) at the size of the asked
  tier and orientation (720p: 1280x720 / 720x1280, 1080p: 1920x1080 / 1080x1920).
- A prompt with the refuse word: the operation ends `done` with `raiMediaFilteredCount: 1`,
  `raiMediaFilteredReasons` and no sample (how the API reports its safety filters).
- An extension (*Extending Veo videos*, same page; Veo 3.1 only): the instance's `video` is
  `{"uri"}` naming a file this fake generated (a video Veo did not make, or one given inline,
  is refused: "only supports video extensions for Veo-generated videos"), never with `image`,
  `lastFrame` or `referenceImages`; `durationSeconds` must be 8 and `resolution` 720p. The
  answer is one video: the source and 7 s more.
- No cancel: the Gemini API has none for these operations (`cancel_supported = False`).
"""

import base64
import binascii
import json
import uuid

from fakes.base import HostedFake

# model -> what it takes (Veo 3.1: last frame, reference images, 4k; Veo 3: neither)
MODELS = {
    "veo-3.1-generate-preview": {"last_frame": True, "references": True, "resolutions": ("720p", "1080p", "4k")},
    "veo-3.1-fast-generate-preview": {"last_frame": True, "references": True, "resolutions": ("720p", "1080p", "4k")},
    "veo-3.0-generate-001": {"last_frame": False, "references": False, "resolutions": ("720p", "1080p")},
    "veo-3.0-fast-generate-001": {"last_frame": False, "references": False, "resolutions": ("720p", "1080p")},
}
INSTANCE_FIELDS = {"prompt", "image", "lastFrame", "referenceImages", "video"}
PARAMETER_FIELDS = {"aspectRatio", "durationSeconds", "resolution", "negativePrompt", "personGeneration",
                    "sampleCount", "seed"}
SIZES = {("720p", "16:9"): (1280, 720), ("720p", "9:16"): (720, 1280), ("1080p", "16:9"): (1920, 1080),
         ("1080p", "9:16"): (1080, 1920), ("4k", "16:9"): (3840, 2160), ("4k", "9:16"): (2160, 3840)}
POLLS_BEFORE_DONE = 3


def error(code, status, message):
    return code, {"error": {"code": code, "message": message, "status": status}}, []


def invalid(message):
    return error(400, "INVALID_ARGUMENT", message)


class Fake(HostedFake):
    kind = "veo"
    key_env = "FAKE_VEO_KEY"
    cancel_supported = False
    OPERATIONS = {"remix": "chained", "extension": "native", "edit": "unavailable"}
    OWN_RENDERS_ONLY = True
    REFERENCES = True

    def __init__(self):
        super().__init__()
        self.operations = {}  # name -> {"polls", "spec" or None (refused)}
        self.files = {}  # file id -> CDN clip name

    def engine_toml(self, engine_id):
        return (f'[[engines]]\nid = "{engine_id}"\nkind = "veo"\nbase_url = "{self.base_url}/v1beta"\n'
                f'api_key_env = "{self.key_env}"\nmodel_id = "veo-3.1-generate-preview"\n'
                'output_hosts = ["127.0.0.1"]\n')

    # --- the API ---------------------------------------------------------------------------------

    def api(self, method, path, headers, body):
        key = headers.get("x-goog-api-key")
        if not key:
            return error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without "
                         "established identity). Please use API Key or other form of API consumer identity to call this API.")
        if key != self.key:
            return invalid("API key not valid. Please pass a valid API key.")
        route, _, query = path.partition("?")
        if method == "POST" and route.startswith("/v1beta/models/") and route.endswith(":predictLongRunning"):
            return self.create(route[len("/v1beta/models/"):-len(":predictLongRunning")], body)
        if method == "GET" and route.startswith("/v1beta/models/") and "/operations/" in route:
            return self.operation(route[len("/v1beta/"):])
        if method == "GET" and route.startswith("/v1beta/files/") and route.endswith(":download"):
            file_id = route[len("/v1beta/files/"):-len(":download")]
            if file_id not in self.files or query != "alt=media":
                return error(404, "NOT_FOUND", "File not found.")
            return 302, None, [("location", f"/download/v1beta/files/{file_id}:download?alt=media")]
        if method == "GET" and route.startswith("/download/v1beta/files/") and route.endswith(":download"):
            file_id = route[len("/download/v1beta/files/"):-len(":download")]
            clip = self.clip_path(self.files.get(file_id, ""))
            if clip is None or query != "alt=media":
                return error(404, "NOT_FOUND", "File not found.")
            with open(clip, "rb") as f:
                return 200, f.read(), []
        return error(404, "NOT_FOUND", f"The requested URL {route} was not found on this server.")

    def image(self, value, field):
        """The bytes of an inline image, or an error answer."""
        if not isinstance(value, dict) or set(value) - {"bytesBase64Encoded", "mimeType"}:
            unknown = sorted(set(value) - {"bytesBase64Encoded", "mimeType"}) if isinstance(value, dict) else ["?"]
            return None, invalid(f'Invalid JSON payload received. Unknown name "{unknown[0]}" at \'instances[0].{field}\'.')
        data, mime = value.get("bytesBase64Encoded"), value.get("mimeType")
        if not isinstance(data, str) or not data:
            return None, invalid(f"{field}: bytesBase64Encoded is required.")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None, invalid(f"{field}: Invalid value for bytesBase64Encoded: not base64.")
        kinds = {"image/png": raw.startswith(b"\x89PNG\r\n\x1a\n"), "image/jpeg": raw.startswith(b"\xff\xd8"),
                 "image/webp": raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"}
        if mime not in kinds:
            return None, invalid(f"{field}: Unsupported MIME type {mime!r}; use image/jpeg, image/png or image/webp.")
        if not kinds[mime]:
            return None, invalid(f"{field}: the image bytes are not {mime}.")
        return raw, None

    def create(self, model, body):
        if model not in MODELS:
            return error(404, "NOT_FOUND", f"models/{model} is not found for API version v1beta, or is not "
                         "supported for predictLongRunning.")
        features = MODELS[model]
        try:
            request = json.loads(body or b"null")
        except ValueError:
            return invalid("Invalid JSON payload received.")
        if not isinstance(request, dict):
            return invalid("Invalid JSON payload received.")
        for name in set(request) - {"instances", "parameters"}:
            return invalid(f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.')
        instances = request.get("instances")
        if not isinstance(instances, list) or len(instances) != 1 or not isinstance(instances[0], dict):
            return invalid("Exactly one instance is supported.")
        instance = instances[0]
        for name in set(instance) - INSTANCE_FIELDS:
            return invalid(f'Invalid JSON payload received. Unknown name "{name}" at \'instances[0]\': Cannot find field.')
        params = request.get("parameters", {})
        if not isinstance(params, dict):
            return invalid("Invalid JSON payload received. parameters must be an object.")
        for name in set(params) - PARAMETER_FIELDS:
            return invalid(f'Invalid JSON payload received. Unknown name "{name}" at \'parameters\': Cannot find field.')
        if "video" in instance:
            return self.extend(model, instance, params)
        prompt = instance.get("prompt")
        if prompt is not None and not isinstance(prompt, str):
            return invalid("prompt must be a string.")
        if not prompt and "image" not in instance:
            return invalid("A prompt is required.")

        first = last = None
        if "image" in instance:
            first, failure = self.image(instance["image"], "image")
            if failure:
                return failure
        if "lastFrame" in instance:
            if not features["last_frame"]:
                return invalid(f"lastFrame isn't supported by {model}.")
            last, failure = self.image(instance["lastFrame"], "lastFrame")
            if failure:
                return failure
        references = instance.get("referenceImages")
        if references is not None:
            if not features["references"]:
                return invalid(f"referenceImages isn't supported by {model}.")
            if not isinstance(references, list) or not 1 <= len(references) <= 3:
                return invalid("referenceImages takes 1 to 3 images.")
            for i, ref in enumerate(references):
                if not isinstance(ref, dict) or set(ref) - {"image", "referenceType"}:
                    return invalid(f"referenceImages[{i}]: unknown field.")
                if ref.get("referenceType") != "asset":
                    return invalid(f"referenceImages[{i}].referenceType must be asset.")
                _, failure = self.image(ref.get("image"), f"referenceImages[{i}].image")
                if failure:
                    return failure

        aspect = params.get("aspectRatio", "16:9")
        if aspect not in ("16:9", "9:16"):
            return invalid(f"Unsupported aspect ratio: {aspect}. Supported: 16:9, 9:16.")
        resolution = params.get("resolution", "720p")
        if resolution not in features["resolutions"]:
            return invalid(f"Unsupported resolution: {resolution} for {model}.")
        duration = params.get("durationSeconds", 8)
        if isinstance(duration, str) and duration.isdigit():
            duration = int(duration)
        if isinstance(duration, bool) or duration not in (4, 6, 8):
            return invalid(f"Unsupported durationSeconds: {duration!r}. Supported: 4, 6, 8.")
        if resolution != "720p" and duration != 8:
            return invalid(f"durationSeconds must be 8 for {resolution}.")
        if references is not None and duration != 8:
            return invalid("durationSeconds must be 8 when using reference images.")
        person = params.get("personGeneration")
        if person is not None and person not in (("allow_adult",) if first or last else ("allow_all",)):
            return invalid(f"personGeneration {person!r} is not allowed for this request.")

        self.started()
        if first is not None:
            self.first_frames.append(first)
        self.reference_counts.append(len(references or []))
        name = f"models/{model}/operations/{uuid.uuid4().hex[:12]}"
        width, height = SIZES[(resolution, aspect)]
        spec = None if self.refused(prompt) else (width, height, duration, first)
        with self.lock:
            self.operations[name] = {"polls": 0, "spec": spec}
        return 200, {"name": name}, []

    def extend(self, model, instance, params):
        if not MODELS[model]["references"]:
            return invalid(f"Video extension isn't supported by {model}.")
        video = instance["video"]
        if not isinstance(video, dict) or set(video) != {"uri"} or not isinstance(video["uri"], str):
            return invalid("Gemini API only supports video extensions for Veo-generated videos (video.uri).")
        prefix = f"{self.base_url}/v1beta/files/"
        uri = video["uri"]
        file_id = uri[len(prefix):-len(":download?alt=media")] if uri.startswith(prefix) else None
        if file_id not in self.files or not uri.endswith(":download?alt=media"):
            return invalid("Gemini API only supports video extensions for Veo-generated videos.")
        for field in ("image", "lastFrame", "referenceImages"):
            if field in instance:
                return invalid(f"{field} cannot be combined with video.")
        if params.get("durationSeconds") not in (8, "8") or params.get("resolution", "720p") != "720p":
            return invalid("Video extension needs durationSeconds 8 and resolution 720p.")
        width, height, seconds, _ = self.clips[self.files[file_id]][:3] + (None,)
        if params.get("aspectRatio", "16:9") != ("9:16" if height > width else "16:9"):
            return invalid("aspectRatio must match the input video.")
        self.started()
        self.native_ops.append({"operation": "extension"})
        name = f"models/{model}/operations/{uuid.uuid4().hex[:12]}"
        spec = None if self.refused(instance.get("prompt")) else (width, height, seconds + 7, None)
        with self.lock:
            self.operations[name] = {"polls": 0, "spec": spec}
        return 200, {"name": name}, []

    def operation(self, name):
        with self.lock:
            op = self.operations.get(name)
            if op is None:
                return error(404, "NOT_FOUND", "Operation not found.")
            op["polls"] += 1
            if op["polls"] < POLLS_BEFORE_DONE:
                return 200, {"name": name}, []
            if "file" not in op and op["spec"] is not None:
                width, height, seconds, first = op["spec"]
                clip = self.cdn_url(width, height, seconds, True, first).rsplit("/", 1)[1]
                # Rendered now, under the lock: a download never sees a clip half written.
                self.clip_path(clip)
                op["file"] = uuid.uuid4().hex[:12]
                self.files[op["file"]] = clip
        kind = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse"
        if op["spec"] is None:
            video = {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": [
                "Veo could not generate 1 videos based on the prompt provided. You will not be charged for this "
                "request. Try rephrasing the prompt."]}
        else:
            uri = f"{self.base_url}/v1beta/files/{op['file']}:download?alt=media"
            video = {"generatedSamples": [{"video": {"uri": uri}}]}
        return 200, {"name": name, "done": True, "response": {"@type": kind, "generateVideoResponse": video}}, []
