"""Traces: the real `reelgate serve` exports OpenTelemetry spans over OTLP/HTTP to a fake
collector (tests/fake_otlp.py) when OTEL_EXPORTER_OTLP_ENDPOINT is set, and sends nothing when it
is not. A video job is one trace from `POST /v1/videos` through every workflow step, the render and
finalize; a chat request's span carries route, organization, model and status, with the upstream
call as its child; the request's JSON log line names the trace id."""

import json
import time

import httpx
import pytest

from fake_otlp import FakeOtlpCollector
from harness import FakeUpstream, serving

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def fake():
    upstream = FakeUpstream(gap_ms=0)
    yield upstream
    upstream.stop()


@pytest.fixture()
def collector():
    c = FakeOtlpCollector()
    yield c
    c.stop()


def log_line(server, request_id):
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(server.log_path) as f:
            lines = [json.loads(l) for l in f if l.startswith("{")]
        found = [
            l["fields"] for l in lines
            if l.get("target") == "reelgate::request" and l["fields"].get("request_id") == request_id
        ]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no request line for {request_id}")


def wait_for(collector, predicate, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        spans = collector.received()
        if predicate(spans):
            return spans
        time.sleep(0.2)
    names = sorted({s["name"] for s in collector.received()})
    raise AssertionError(f"the collector never received {what}; it has: {names}")


def traced_env(collector, fake=None):
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "reelgate-under-test",
        "REELGATE_LOG_FORMAT": "json",
    }
    if fake:
        env["REELGATE_UPSTREAM_BASE_URL"] = fake.url
    return env


def test_a_video_job_is_one_trace_from_create_to_finalize(collector):
    with serving(env=traced_env(collector)) as server:
        h = {"Authorization": f"Bearer {server.api_key}"}
        server.agree(server.user, server.org)
        r = httpx.post(
            f"{server.base_url}/v1/videos",
            headers=h,
            json={"model": "reel-1", "prompt": "a paper boat on a pond", "seconds": 4, "aspect_ratio": "16:9"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        video = r.json()
        deadline = time.time() + 120
        while video["status"] not in ("completed", "failed"):
            assert time.time() < deadline, video
            time.sleep(0.5)
            video = httpx.get(f"{server.base_url}/v1/videos/{video['id']}", headers=h, timeout=10).json()
        assert video["status"] == "completed", video
        line = log_line(server, r.headers["x-request-id"])

        spans = wait_for(
            collector,
            lambda spans: any(s["name"] == "step finalize" for s in spans),
            "the finalize step's span",
        )
        # The spans of this job: the create request's, and every span naming the video.
        create = [s for s in spans if s["name"] == "POST /v1/videos"]
        assert len(create) == 1, create
        create = create[0]
        trace = create["trace_id"]
        assert line["trace_id"] == trace, "the request's log line names its trace"
        assert create["parent_span_id"] == "", "no caller traceparent: the create request is the root"
        assert create["attributes"]["http.route"] == "/v1/videos"
        assert create["attributes"]["http.response.status_code"] == 200
        assert create["attributes"]["organization"] == server.org
        assert create["attributes"]["model"] == "reel-1"
        assert create["resource"]["service.name"] == "reelgate-under-test"

        of_job = [s for s in spans if s["attributes"].get("video_id") == video["id"]]
        assert {s["trace_id"] for s in of_job} == {trace}, "every span of the job is in one trace"
        names = {s["name"] for s in of_job}
        for expected in ("step moderate", "step translate", "render submit", "step finalize"):
            assert expected in names, f"{expected} missing from {sorted(names)}"
        # Steps and render messages hang off the create request (the traceparent the workflow
        # input and the render message carried).
        for s in of_job:
            assert s["parent_span_id"] == create["span_id"], (s["name"], s["parent_span_id"])
        # Store, blob and queue calls are spans too, children of the request or of a step.
        in_trace = [s for s in spans if s["trace_id"] == trace]
        ids = {s["span_id"] for s in in_trace}
        for s in in_trace:
            assert s is create or s["parent_span_id"] in ids, f"{s['name']} has a parent outside the trace"
        step_ids = {s["span_id"]: s["name"] for s in of_job}
        ports_under = lambda name: [  # noqa: E731
            s["name"] for s in in_trace
            if step_ids.get(s["parent_span_id"]) == name
        ]
        assert any(n.startswith("store ") for n in ports_under("step finalize")), ports_under("step finalize")
        assert any(n.startswith("blobs ") for n in ports_under("step finalize")), ports_under("step finalize")
        assert any(n.startswith("store ") for n in
                   (s["name"] for s in in_trace if s["parent_span_id"] == create["span_id"]))
        # The render spans come before finalize, which ends last of the job's spans.
        finalize = next(s for s in of_job if s["name"] == "step finalize")
        submit = next(s for s in of_job if s["name"] == "render submit")
        assert submit["end"] <= finalize["start"]
        assert all(s["start"] >= create["start"] for s in in_trace)


def test_a_chat_request_span_has_its_facts_and_an_upstream_child(collector, fake):
    with serving(env=traced_env(collector, fake)) as server:
        h = {"Authorization": f"Bearer {server.api_key}"}
        chat = {"model": "fake-model-v1", "messages": [{"role": "user", "content": "one two three"}]}
        r = httpx.post(f"{server.base_url}/v1/chat/completions", headers=h, json=chat, timeout=30)
        assert r.status_code == 200, r.text
        usage = r.json()["usage"]
        line = log_line(server, r.headers["x-request-id"])
        spans = wait_for(
            collector,
            lambda spans: any(s["attributes"].get("request_id") == r.headers["x-request-id"] for s in spans),
            "the chat request's span",
        )
        request = next(s for s in spans if s["attributes"].get("request_id") == r.headers["x-request-id"])
        assert request["name"] == "POST /v1/chat/completions"
        attrs = request["attributes"]
        assert attrs["http.route"] == "/v1/chat/completions"
        assert attrs["http.response.status_code"] == 200
        assert attrs["organization"] == server.org
        assert attrs["model"] == "fake-model-v1"
        assert line["trace_id"] == request["trace_id"]
        upstream = [s for s in spans if s["parent_span_id"] == request["span_id"] and s["name"] == "chat upstream"]
        assert len(upstream) == 1, [s["name"] for s in spans if s["trace_id"] == request["trace_id"]]
        u = upstream[0]["attributes"]
        assert u["model"] == "fake-model-v1" and u["stream"] is False
        assert u["provider"] and u["deployment"].startswith(u["provider"] + "/")
        assert u["ttfb_ms"] > 0
        assert u["input_tokens"] == usage["prompt_tokens"] and u["output_tokens"] == usage["completion_tokens"]

        # Streamed: the first chunk's time, and the tokens of the usage chunk at the end.
        with httpx.stream(
            "POST", f"{server.base_url}/v1/chat/completions", headers=h, timeout=30,
            json={**chat, "stream": True, "stream_options": {"include_usage": True}},
        ) as s:
            assert s.status_code == 200
            s.read()
            stream_id = s.headers["x-request-id"]
        spans = wait_for(
            collector,
            lambda spans: any(
                x["name"] == "chat upstream" and x["attributes"].get("stream") is True for x in spans
            ),
            "the streamed call's upstream span",
        )
        streamed = next(x for x in spans if x["name"] == "chat upstream" and x["attributes"]["stream"] is True)
        request = next(x for x in spans if x["attributes"].get("request_id") == stream_id)
        assert streamed["parent_span_id"] == request["span_id"]
        assert streamed["attributes"]["ttfb_ms"] > 0
        assert streamed["attributes"]["output_tokens"] == usage["completion_tokens"]


def test_a_callers_traceparent_names_the_trace_and_a_malformed_one_is_ignored(collector, fake):
    with serving(env=traced_env(collector, fake)) as server:
        h = {"Authorization": f"Bearer {server.api_key}"}
        r = httpx.get(
            f"{server.base_url}/v1/models",
            headers={**h, "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-00"},
            timeout=10,
        )
        assert r.status_code == 200
        bad = httpx.get(
            f"{server.base_url}/v1/models",
            headers={**h, "traceparent": f"00-{'0' * 32}-{CALLER_SPAN}-01"},
            timeout=10,
        )
        assert bad.status_code == 200, "a malformed traceparent is not an error"
        spans = wait_for(
            collector,
            lambda spans: {r.headers["x-request-id"], bad.headers["x-request-id"]}
            <= {s["attributes"].get("request_id") for s in spans},
            "both requests' spans",
        )
        adopted = next(s for s in spans if s["attributes"].get("request_id") == r.headers["x-request-id"])
        assert adopted["trace_id"] == CALLER_TRACE and adopted["parent_span_id"] == CALLER_SPAN
        # Unsampled flags do not switch tracing off: the span was exported all the same.
        ignored = next(s for s in spans if s["attributes"].get("request_id") == bad.headers["x-request-id"])
        assert ignored["parent_span_id"] == "" and ignored["trace_id"] not in (CALLER_TRACE, "0" * 32)
        assert log_line(server, bad.headers["x-request-id"])["trace_id"] == ignored["trace_id"]


def test_without_an_endpoint_nothing_is_sent_and_no_trace_id_is_logged(fake):
    # A collector on the OTLP default port: an exporter installed without an endpoint would
    # send here. Other OTEL_* names are set, the endpoint is not.
    try:
        collector = FakeOtlpCollector(port=4318)
    except OSError:
        pytest.fail("port 4318 (the OTLP/HTTP default) is taken on this machine")
    try:
        env = {
            "REELGATE_UPSTREAM_BASE_URL": fake.url,
            "REELGATE_LOG_FORMAT": "json",
            "OTEL_SERVICE_NAME": "should-not-export",
        }
        with serving(env=env) as server:
            h = {"Authorization": f"Bearer {server.api_key}"}
            chat = {"model": "fake-model-v1", "messages": [{"role": "user", "content": "hi"}]}
            r = httpx.post(
                f"{server.base_url}/v1/chat/completions",
                headers={**h, "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
                json=chat,
                timeout=30,
            )
            assert r.status_code == 200
            line = log_line(server, r.headers["x-request-id"])
            assert "trace_id" not in line, line
            # The batch processor would send within its 1 s delay; wait well past it.
            time.sleep(3)
        assert collector.requests == [] and collector.received() == []
    finally:
        collector.stop()
