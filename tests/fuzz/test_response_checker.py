"""The response checker every suite's answers go through (tests/openapi_check.py) catches what
it is there to catch: an undeclared status, an undeclared content type, a body that breaks its
schema, a missing x-request-id; and it passes a conforming answer."""

import json

from openapi_check import ResponseChecker

CHECKER = ResponseChecker()
JSON = {"content-type": "application/json", "x-request-id": "req_1"}
VIDEO = {
    "id": "video_1", "object": "video", "model": "reel-1", "prompt": "p", "seconds": 4, "aspect_ratio": "16:9",
    "status": "queued", "progress": 0, "error": None, "cost": "0.40", "currency": "usd", "created_at": 1,
    "completed_at": None, "expires_at": None, "thumbnail": False, "size": None,
}


def problems(method, path, status, headers, body):
    return CHECKER.problems(method, path, status, headers, json.dumps(body).encode())


def test_a_conforming_answer_passes():
    assert problems("GET", "/v1/videos/video_1", 200, JSON, VIDEO) == []
    assert problems("GET", "/v1/videos/models", 401, JSON, {"error": {"message": "m", "type": "t", "param": None, "code": "c"}}) == []


def test_each_breach_is_named():
    assert "not declared" in problems("GET", "/v1/videos/video_1", 409, JSON, {})[0]
    assert "content type" in problems("GET", "/v1/videos/video_1", 200, {**JSON, "content-type": "text/plain"}, VIDEO)[0]
    broken = {**VIDEO, "cost": 0.4}
    assert "cost" in problems("GET", "/v1/videos/video_1", 200, JSON, broken)[0]
    missing = dict(VIDEO)
    del missing["status"]
    assert "status" in problems("GET", "/v1/videos/video_1", 200, JSON, missing)[0]
    assert "x-request-id" in problems("GET", "/v1/videos/video_1", 200, {"content-type": "application/json"}, VIDEO)[0]
    error_without_code = {"error": {"message": "m", "type": "t", "param": None}}
    assert "code" in problems("GET", "/v1/files/file_1", 404, JSON, error_without_code)[0]
