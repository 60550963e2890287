"""A fake of xAI's Grok Imagine video API, written from xAI's documentation (read 2026-11-28):
docs.x.ai's video generation guide and its model-capabilities pages on generation, editing,
extension and reference-to-video, with the wire names of the official xai-sdk-python
(`types/video.py`); see functions/reelgate/src/adapters/hosted/xai.rs.

- `Authorization: Bearer <key>` (none or another: 401). `POST /v1/videos/generations`
  `{model, prompt, duration?, aspect_ratio?, resolution?, image?: {url}, reference_images?:
  [{url}]}`: `duration` 1 to 15, `aspect_ratio` one of 16:9 9:16 1:1 4:3 3:4 3:2 2:3,
  `resolution` 480p or 720p, at most seven reference images, never with `image`, and then
  `duration` at most 10. `POST /v1/videos/edits` `{model, prompt, video: {url}}`: the source at
  most 8.7 s, the output its length. `POST /v1/videos/extensions` `{model, prompt, video: {url},
  duration?}`: the source 2 to 15 s, `duration` 2 to 10 (default 6), the output the source and
  its continuation. Unknown fields are refused (400), as are a model other than
  grok-imagine-video, a video not served as an MP4, and an image URL that does not download.
- Every create answers `{"request_id"}`; `GET /v1/videos/{request_id}` is `{"status":
  "pending"}` for the first polls, then `{"status": "done", "video": {"url", "duration",
  "respect_moderation": true}, "model"}`. A prompt with the refuse word ends `done` with
  `respect_moderation: false` (how the API reports its moderation).
- No cancel (`cancel_supported = False`).
"""

import json
import uuid

from fakes.base import HostedFake

MODEL = "grok-imagine-video"
RATIOS = {"16:9": (16, 9), "9:16": (9, 16), "1:1": (1, 1), "4:3": (4, 3), "3:4": (3, 4), "3:2": (3, 2), "2:3": (2, 3)}
SHORT = {"480p": 480, "720p": 720}
POLLS_BEFORE_DONE = 2
FIELDS = {
    "/v1/videos/generations": {"model", "prompt", "duration", "aspect_ratio", "resolution", "image", "reference_images"},
    "/v1/videos/edits": {"model", "prompt", "video"},
    "/v1/videos/extensions": {"model", "prompt", "video", "duration"},
}


def bad(message):
    return 400, {"code": "invalid_argument", "error": message}, []


def size_of(ratio, resolution):
    w, h = RATIOS[ratio]
    short = SHORT[resolution]
    # Even sides, the short one at the tier.
    if w >= h:
        return (round(short * w / h / 2) * 2, short)
    return (short, round(short * h / w / 2) * 2)


class Fake(HostedFake):
    kind = "xai"
    key_env = "FAKE_XAI_KEY"
    cancel_supported = False
    OPERATIONS = {"remix": "native", "extension": "native", "edit": "native"}
    REFERENCES = True

    def __init__(self):
        super().__init__()
        self.requests = {}  # request id -> {"polls", "spec" or None (withheld)}

    def engine_toml(self, engine_id):
        return (f'[[engines]]\nid = "{engine_id}"\nkind = "xai"\nbase_url = "{self.base_url}/v1"\n'
                f'api_key_env = "{self.key_env}"\noutput_hosts = ["127.0.0.1"]\n')

    def api(self, method, path, headers, body):
        if headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"code": "unauthenticated", "error": "Incorrect API key provided."}, []
        if method == "POST" and path in FIELDS:
            try:
                request = json.loads(body or b"null")
            except ValueError:
                return bad("Failed to deserialize the JSON body.")
            if not isinstance(request, dict):
                return bad("Failed to deserialize the JSON body.")
            unknown = sorted(set(request) - FIELDS[path])
            if unknown:
                return bad(f"Unknown field: {unknown[0]}")
            if request.get("model") != MODEL:
                return 404, {"code": "not_found", "error": f"The model {request.get('model')} does not exist."}, []
            prompt = request.get("prompt")
            if not isinstance(prompt, str) or not prompt:
                return bad("prompt is required.")
            return {"/v1/videos/generations": self.generate, "/v1/videos/edits": self.edit,
                    "/v1/videos/extensions": self.extend}[path](request, prompt)
        if method == "GET" and path.startswith("/v1/videos/"):
            return self.status(path[len("/v1/videos/"):])
        return 404, {"code": "not_found", "error": f"No route {method} {path}"}, []

    def url_of(self, value, field):
        if not isinstance(value, dict) or set(value) != {"url"} or not isinstance(value["url"], str):
            return None, bad(f"{field} must be an object holding url.")
        return value["url"], None

    def generate(self, request, prompt):
        duration = request.get("duration", 8)
        if isinstance(duration, bool) or not isinstance(duration, int) or not 1 <= duration <= 15:
            return bad("duration must be an integer from 1 to 15.")
        ratio = request.get("aspect_ratio", "16:9")
        if ratio not in RATIOS:
            return bad(f"Unsupported aspect_ratio {ratio!r}.")
        resolution = request.get("resolution", "480p")
        if resolution not in SHORT:
            return bad(f"Unsupported resolution {resolution!r}; use 480p or 720p.")
        first = None
        if "image" in request:
            url, failure = self.url_of(request["image"], "image")
            if failure:
                return failure
            try:
                first = self.read_image(url)
            except OSError:
                return bad("The image could not be downloaded.")
        references = request.get("reference_images")
        if references is not None:
            if first is not None:
                return bad("reference_images cannot be combined with image.")
            if not isinstance(references, list) or not 1 <= len(references) <= 7:
                return bad("reference_images takes 1 to 7 images.")
            if duration > 10:
                return bad("duration must be at most 10 with reference_images.")
            for i, ref in enumerate(references):
                url, failure = self.url_of(ref, f"reference_images[{i}]")
                if failure:
                    return failure
                try:
                    self.read_image(url)
                except OSError:
                    return bad(f"reference_images[{i}] could not be downloaded.")
        self.started()
        if first is not None:
            self.first_frames.append(first)
        self.reference_counts.append(len(references or []))
        width, height = size_of(ratio, resolution)
        return self.accepted(prompt, (width, height, duration, first))

    def source(self, request, low, high, operation):
        url, failure = self.url_of(request.get("video"), "video")
        if failure:
            return None, failure
        data, seconds, ctype = self.read_video(url)
        if data is None:
            return None, bad(f"video: {ctype}")
        if not low <= seconds <= high:
            return None, bad(f"The input video must be between {low} and {high} seconds long; it is {seconds:.1f} s.")
        self.native_ops.append({"operation": operation, "seconds": seconds, "content_type": ctype})
        return seconds, None

    def edit(self, request, prompt):
        seconds, failure = self.source(request, 0.1, 8.7, "edit")
        if failure:
            return failure
        self.started()
        return self.accepted(prompt, (1280, 720, round(seconds), None))

    def extend(self, request, prompt):
        duration = request.get("duration", 6)
        if isinstance(duration, bool) or not isinstance(duration, int) or not 2 <= duration <= 10:
            return bad("duration must be an integer from 2 to 10.")
        seconds, failure = self.source(request, 2, 15, "extension")
        if failure:
            return failure
        self.started()
        # The answer is the whole video: the source and its continuation.
        return self.accepted(prompt, (1280, 720, round(seconds) + duration, None))

    def accepted(self, prompt, spec):
        request_id = str(uuid.uuid4())
        with self.lock:
            self.requests[request_id] = {"polls": 0, "spec": spec, "withheld": self.refused(prompt)}
        return 200, {"request_id": request_id}, []

    def status(self, request_id):
        with self.lock:
            found = self.requests.get(request_id)
            if found is None:
                return 404, {"code": "not_found", "error": "No such request."}, []
            found["polls"] += 1
            if found["polls"] < POLLS_BEFORE_DONE:
                return 200, {"status": "pending"}, []
            if "url" not in found:
                width, height, seconds, first = found["spec"]
                found["url"] = self.cdn_url(width, height, seconds, True, first)
        width, height, seconds, _ = found["spec"]
        video = {"url": found["url"], "duration": seconds, "respect_moderation": not found["withheld"]}
        return 200, {"status": "done", "video": video, "model": MODEL}, []
