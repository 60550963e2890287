"""One JSON log line per request (REELGATE_LOG_FORMAT=json): request id, organization, route,
status, duration and upstream time; no prompt text and no secret unless REELGATE_LOG_PROMPTS asks
for prompts (a debugging aid)."""

import json
import time

import httpx
import pytest

from harness import FakeUpstream, serving

PROMPT = "PURPLE-OCTOPUS-7731 tell me about the lighthouse"
VIDEO_PROMPT = "a paper lantern drifting over a river, TANGERINE-HERON-5120"


@pytest.fixture(scope="module")
def fake():
    upstream = FakeUpstream(gap_ms=0)
    yield upstream
    upstream.stop()


def request_lines(server):
    with open(server.log_path) as f:
        lines = [json.loads(l) for l in f if l.startswith("{")]
    return [l for l in lines if l.get("target") == "reelgate::request"]


def line_of(server, request_id):
    deadline = time.time() + 10
    while time.time() < deadline:
        found = [l for l in request_lines(server) if l["fields"].get("request_id") == request_id]
        if found:
            assert len(found) == 1, found
            return found[0]["fields"]
        time.sleep(0.1)
    raise AssertionError(f"no request line for {request_id}")


def traffic(server):
    """A chat, a streamed chat, a video create and a refusal; their request ids."""
    h = {"Authorization": f"Bearer {server.api_key}"}
    chat = {"model": "fake-model-v1", "messages": [{"role": "user", "content": PROMPT}]}
    ids = {}
    r = httpx.post(f"{server.base_url}/v1/chat/completions", headers=h, json=chat, timeout=30)
    assert r.status_code == 200, r.text
    ids["chat"] = r.headers["x-request-id"]
    with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", headers=h, json={**chat, "stream": True}, timeout=30) as r:
        assert r.status_code == 200
        r.read()
        ids["stream"] = r.headers["x-request-id"]
    server.agree(server.user, server.org)
    r = httpx.post(
        f"{server.base_url}/v1/videos",
        headers=h,
        json={"model": "reel-1", "prompt": VIDEO_PROMPT, "seconds": 4, "aspect_ratio": "16:9"},
    )
    assert r.status_code == 200, r.text
    ids["video"] = r.headers["x-request-id"]
    r = httpx.get(f"{server.base_url}/v1/videos/video_nope", headers={"Authorization": "Bearer rgk_wrong"})
    assert r.status_code == 401
    ids["refused"] = r.headers["x-request-id"]
    return ids


def test_each_request_has_one_line_with_its_facts_and_no_prompt(fake):
    env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_LOG_FORMAT": "json"}
    with serving(env=env) as server:
        ids = traffic(server)
        chat = line_of(server, ids["chat"])
        assert chat["route"] == "/v1/chat/completions" and chat["method"] == "POST"
        assert chat["status"] == 200 and chat["org"] == server.org
        assert chat["key"].startswith("key_") and chat["model"] == "fake-model-v1"
        assert chat["duration_ms"] >= chat["upstream_ms"] > 0
        stream = line_of(server, ids["stream"])
        assert stream["status"] == 200 and stream["upstream_ms"] > 0
        video = line_of(server, ids["video"])
        assert video["route"] == "/v1/videos" and video["model"] == "reel-1" and "upstream_ms" not in video
        refused = line_of(server, ids["refused"])
        assert refused["status"] == 401 and refused["route"] == "/v1/videos/{video_id}"
        assert "org" not in refused
        with open(server.log_path) as f:
            log = f.read()
        assert "PURPLE-OCTOPUS" not in log and "TANGERINE-HERON" not in log, "prompt text in the log"
        # rgk_{26-char key id}_{secret}; the secret's own alphabet includes "_", so cut by position
        secret = server.api_key[len("rgk_") + 26 + 1 :]
        assert len(secret) >= 32
        assert server.api_key not in log and secret not in log, "a key secret in the log"


def test_the_debug_flag_puts_prompts_in_the_request_line(fake):
    env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_LOG_FORMAT": "json", "REELGATE_LOG_PROMPTS": "1"}
    with serving(env=env) as server:
        ids = traffic(server)
        assert "PURPLE-OCTOPUS-7731" in line_of(server, ids["chat"])["prompt"]
        assert line_of(server, ids["video"])["prompt"] == VIDEO_PROMPT
        with open(server.log_path) as f:
            assert server.api_key not in f.read()
