"""Every answer a Python suite receives from `reelgate serve` is checked against the OpenAPI
document (docs/openapi.json, which a Rust test keeps equal to what the code generates): the
operation exists, it declares the status, it declares the content type, and a JSON body
validates against the declared schema (JSON Schema 2020-12, as OpenAPI 3.1 uses), and every
answer carries `x-request-id`.

tests/harness.py installs the check on httpx (which the official `openai` SDK uses too), for the
servers `serving()` starts only. A violation raises at once in the request that saw it, and is
also recorded so `serving()` fails the suite at its end even if a test swallowed the exception.
"""

import json
import os
import re
import threading
import urllib.parse

import httpx
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "openapi.json")
_URI = "urn:reelgate:openapi"


class OpenApiViolation(AssertionError):
    pass


class ResponseChecker:
    def __init__(self, path: str = DOCUMENT_PATH):
        with open(path) as f:
            self.doc = json.load(f)
        self.registry = Registry().with_resource(_URI, Resource(contents=self.doc, specification=DRAFT202012))
        self.routes = []
        for template, item in self.doc["paths"].items():
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            # Literal segments win over templated ones (/v1/videos/models before /v1/videos/{id}).
            self.routes.append((template.count("{"), re.compile(pattern), template, item))
        self.routes.sort(key=lambda r: r[0])
        self._validators = {}
        self.checked = 0
        self.violations = []
        self._lock = threading.Lock()

    def operation(self, method: str, path: str):
        for _, pattern, template, item in self.routes:
            if pattern.match(path):
                return template, item.get(method.lower())
        return None, None

    def _validator(self, pointer: str) -> Draft202012Validator:
        if pointer not in self._validators:
            ref = _URI + "#" + urllib.parse.quote(pointer, safe="/~")
            self._validators[pointer] = Draft202012Validator({"$ref": ref}, registry=self.registry)
        return self._validators[pointer]

    def problems(self, method: str, path: str, status: int, headers, body: bytes | None) -> list:
        """What is wrong with one answer (an empty list when it conforms)."""
        if path.startswith("/blobs/"):
            # The local server's stand-in for the bucket's presigned URLs (reelgate-embedded's
            # PRESIGNED_ROUTE): on AWS these are S3 URLs, not operations of the API.
            return []
        template, op = self.operation(method, path)
        if template is None:
            # Unknown URLs answer 404 `unknown_url` and are not operations of the document.
            return [] if status in (404, 405) else [f"{method} {path}: not in the document, answered {status}"]
        if op is None:
            return [] if status == 405 else [f"{method} {path}: method not in the document, answered {status}"]
        if status == 403 and b'"origin_forbidden"' in (body or b""):
            # The front door's refusal of a request that bypassed it (api/origin.rs): any path,
            # before routing; described in the document's introduction, not per operation.
            return []
        found = []
        if not headers.get("x-request-id"):
            found.append(f"{method} {template} {status}: no x-request-id header")
        responses = op["responses"]
        key = str(status) if str(status) in responses else "default" if "default" in responses else None
        if key is None:
            return found + [f"{method} {template}: status {status} is not declared ({sorted(responses)})"]
        content = responses[key].get("content") or {}
        media = (headers.get("content-type") or "").split(";")[0].strip().lower()
        if not content:
            return found
        declared = {k.split(";")[0].strip().lower(): k for k in content}
        chosen = declared.get(media) or declared.get("*/*")
        if chosen is None:
            return found + [f"{method} {template} {status}: content type {media!r} is not declared ({sorted(declared)})"]
        if media == "application/json" and body is not None:
            try:
                value = json.loads(body)
            except ValueError as e:
                return found + [f"{method} {template} {status}: body is not JSON ({e})"]
            pointer = "/paths/" + template.replace("~", "~0").replace("/", "~1")
            pointer += f"/{method.lower()}/responses/{key}/content/" + chosen.replace("~", "~0").replace("/", "~1") + "/schema"
            for error in self._validator(pointer).iter_errors(value):
                where = "/".join(str(p) for p in error.absolute_path)
                found.append(f"{method} {template} {status}: body at '{where}': {error.message}")
                if len(found) > 5:
                    break
        return found

    def check(self, response: httpx.Response, body: bytes | None):
        req = response.request
        found = self.problems(req.method, req.url.path, response.status_code, response.headers, body)
        with self._lock:
            self.checked += 1
            self.violations.extend(found)
        if found:
            raise OpenApiViolation("answer does not match docs/openapi.json:\n  " + "\n  ".join(found))


CHECKER = None
_WATCHED = set()  # "host:port" of the servers started by serving()


def _key(url: httpx.URL) -> str:
    return f"{url.host}:{url.port}"


def _body_if_read(response: httpx.Response):
    try:
        return response.content
    except httpx.ResponseNotRead:
        return None


def install():
    """Wraps httpx's send (sync and async) once; later calls only return the checker."""
    global CHECKER
    if CHECKER is not None:
        return CHECKER
    CHECKER = ResponseChecker()
    sync_send = httpx.Client.send
    async_send = httpx.AsyncClient.send

    def send(self, request, *args, **kwargs):
        response = sync_send(self, request, *args, **kwargs)
        if _key(request.url) in _WATCHED:
            CHECKER.check(response, _body_if_read(response))
        return response

    async def asend(self, request, *args, **kwargs):
        response = await async_send(self, request, *args, **kwargs)
        if _key(request.url) in _WATCHED:
            CHECKER.check(response, _body_if_read(response))
        return response

    httpx.Client.send = send
    httpx.AsyncClient.send = asend
    return CHECKER


def watch(base_url: str):
    _WATCHED.add(_key(httpx.URL(base_url)))


def unwatch(base_url: str):
    _WATCHED.discard(_key(httpx.URL(base_url)))
