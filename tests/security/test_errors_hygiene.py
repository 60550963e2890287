"""Item 7: error bodies and log lines carry no secret, internal URL, ARN or raw workflow cause,
and a failed job's error.message is always the documented sentence for its code."""

import re
import tempfile
import time

import httpx

from conftest import auth, start_server
from harness import FakeUpstream

# docs/security.md lists these sentences; the API must show exactly these.
JOB_SENTENCES = {
    "moderation_blocked": "The prompt or a reference was blocked by moderation. You were not charged.",
    "moderation_unavailable": "Moderation was unavailable, so the job was not rendered. You were not charged; resubmit later.",
    "translation_unavailable": "The Japanese prompt could not be translated. You were not charged; resubmit later.",
    "engine_unavailable": "The video engine was unavailable or failed during the render. You were not charged; resubmit later.",
}

LEAK_PATTERNS = [
    re.compile(r"arn:aws[a-z-]*:"),
    re.compile(r"taskToken|task_token", re.I),
    re.compile(r"sk-[A-Za-z0-9_]{20,}"),
]


# Twelve digits standing alone (as in an ARN's `:123456789012:`), not twelve digits inside a
# longer token: a request id is random hex (`req_…d059638208510d…`) and may hold such a run.
ACCOUNT_ID = re.compile(r"(?<![0-9A-Za-z_])[0-9]{12}(?![0-9A-Za-z_])")


def test_the_account_id_check_sees_an_arn_and_not_a_request_id():
    assert ACCOUNT_ID.search("arn:aws:states:us-east-1:123456789012:stateMachine:video")
    assert ACCOUNT_ID.search('{"account": 123456789012}')
    assert not ACCOUNT_ID.search('"request_id":"req_15e560dbcd059638208510d70d244137"')


def scan(text, secrets=(), body=False):
    if body:
        assert not ACCOUNT_ID.search(text), f"an AWS account id in {text[:500]}"
    for p in LEAK_PATTERNS:
        assert not p.search(text), f"{p.pattern} in {text[:500]}"
    for s in secrets:
        assert s not in text, f"a secret leaked: {s[:12]}…"


def test_an_unreachable_upstream_error_does_not_name_the_internal_url():
    fake = FakeUpstream()
    host_port = fake.url.split("//", 1)[1]
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(
            data_dir,
            env={
                "REELGATE_UPSTREAM_BASE_URL": fake.url,
                "REELGATE_UPSTREAM_API_KEY": "sk-upstream-secret-0123456789abcdefXYZ",
            },
        )
        try:
            fake.stop()  # the provider goes away after start-up
            bodies = []
            for stream in (False, True):
                r = httpx.post(
                    f"{srv.base_url}/v1/chat/completions",
                    headers=auth(srv.api_key),
                    json={"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}], "stream": stream},
                    timeout=30,
                )
                assert r.status_code in (502, 503, 504), r.text
                bodies.append(r.text)
            r = httpx.post(
                f"{srv.base_url}/v1/responses",
                headers=auth(srv.api_key),
                json={"model": "fake-model-v1", "input": "hi"},
                timeout=30,
            )
            assert r.status_code in (502, 503, 504), r.text
            bodies.append(r.text)
            for body in bodies:
                assert host_port not in body, body
                assert "/v1/chat/completions" not in body, body
                scan(body, secrets=[srv.api_key, "sk-upstream-secret-0123456789abcdefXYZ"], body=True)
        finally:
            srv.stop()
        log = open(srv.log_path, errors="replace").read()
        scan(log, secrets=[srv.api_key, "sk-upstream-secret-0123456789abcdefXYZ"])


def test_a_failed_job_shows_the_documented_sentence_and_the_log_no_cause(server, tenant):
    r = httpx.post(
        f"{server.base_url}/v1/videos",
        headers=auth(tenant["key"]),
        json={"model": "reel-1", "prompt": "how to build a bomb at home", "seconds": 4, "aspect_ratio": "16:9"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    vid = r.json()["id"]
    deadline = time.time() + 60
    job = None
    while time.time() < deadline:
        job = httpx.get(f"{server.base_url}/v1/videos/{vid}", headers=auth(tenant["key"]), timeout=10).json()
        if job["status"] in ("completed", "failed"):
            break
        time.sleep(0.3)
    assert job["status"] == "failed", job
    assert job["error"]["code"] == "moderation_blocked", job
    assert job["error"]["message"] == JOB_SENTENCES["moderation_blocked"], job
    log = open(server.log_path, errors="replace").read()
    scan(log, secrets=[tenant["key"], server.api_key])


def test_provoked_request_errors_carry_no_secret(server, tenant):
    key = tenant["key"]
    wrong = key[:-4] + "zzzz"
    probes = [
        ("GET", "/v1/videos/video_doesnotexist", key, None),
        ("GET", "/v1/files/file_nope", key, None),
        ("POST", "/v1/videos", key, {"model": "nope"}),
        ("POST", "/v1/chat/completions", key, {"model": "fake-model-v1"}),
        ("GET", "/v1/videos", wrong, None),
        ("GET", "/v1/models", "Bearer-less", None),
    ]
    for method, path, k, body in probes:
        r = httpx.request(method, f"{server.base_url}{path}", headers=auth(k), json=body, timeout=10)
        assert r.status_code >= 400, (path, r.text)
        scan(r.text, secrets=[key, wrong, server.api_key], body=True)
        assert "127.0.0.1" not in r.text and "/_engine" not in r.text and "blobs/" not in r.text, r.text
