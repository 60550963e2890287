#!/usr/bin/env python3
"""Benchmark: cold and warm starts of every Lambda bootstrap, run locally (docs/cost.md).

    scripts/bench-cold-start.sh [--functions api-models,render-worker] [--cold-runs 3] [--warm 50]

(the .sh wrapper builds the release bootstraps and the CLI, installs boto3 into a bench venv and
starts the AWS emulator; this file is the benchmark itself).

Each release bootstrap (`target/release/<binary>`) is started as Lambda starts it, with
`AWS_LAMBDA_RUNTIME_API` pointing at a Lambda runtime API served by this script
(`/2018-06-01/runtime/invocation/next`, `/response`, `/error`, `/init/error`). The functions
talk to the local AWS emulator (ministack: DynamoDB, S3, SQS) through a counting proxy in this
script, so every DynamoDB, S3 and SQS call an invocation makes is counted; chat completions go
to a fake OpenAI-compatible upstream in this script (a fake, named so: it answers at once).

Per function it reports: process start -> first `next` poll (init), the first invocation's
duration, warm invocation p50/p99 (sequential invocations of one representative event:
API Gateway HTTP API 2.0 events for the HTTP functions, Step Functions task input for the
steps, SQS batches for the workers, an EventBridge event for the reconciler), peak RSS (VmHWM
from /proc) and the AWS calls per warm invocation. Results go to a JSON file that
scripts/cost-model.py reads.

This is a benchmark, not a test: the numbers depend on the machine and its load; the load
average is recorded with them. Everything runs on 127.0.0.1, so network latency to DynamoDB is
the emulator's (a Python process), not AWS's; the durations are an upper bound for the
function's own CPU time and a lower bound for nothing.

Round trips: the proxy notes when each AWS call starts and ends, so for each warm invocation the
report also gives its sequential round trips (the longest chain of calls each starting after the
previous one ended: calls made concurrently count once). With `--aws-delay-ms D` the proxy then
holds every call D ms before forwarding it and the warm invocations run again: the difference of
the two p50s is the modelled latency that AWS's per-call latency adds (about D x the sequential
round trips). `--fn-env VAR=VALUE` (repeatable) sets a variable for the functions, e.g.
`REELGATE_ACCOUNT_CACHE_SECS=0` for the round trips without the account cache; `--plan` the
bench organization's plan (`starter` has rate limits, `enterprise` none).
"""

import argparse
import json
import os
import queue
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
import http.client
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import lambda_manifest  # scripts/lambda_manifest.py, beside this script

REPO = Path(__file__).resolve().parent.parent
RUNTIME_PREFIX = "/2018-06-01/runtime"
FAKE_MODEL = "fake-chat-model"


def quiet_server(handler_cls, port=0):
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_cls)
    server.daemon_threads = True
    # A function process killed at the end of its run drops its keep-alive connections; that
    # is expected, not an error to print.
    server.handle_error = lambda request, client_address: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ----------------------------------------------------------------------------- fake upstream
class FakeUpstream(BaseHTTPRequestHandler):
    """A fake OpenAI-compatible upstream: one model, a fixed completion, at once."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("/v1/models"):
            return self._json(200, {"object": "list", "data": [
                {"id": FAKE_MODEL, "object": "model", "owned_by": "bench", "created": 0}]})
        self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        if self.path.startswith("/v1/chat/completions"):
            return self._json(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": FAKE_MODEL,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there, how can I help?"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}})
        self._json(404, {"error": {"message": "not found"}})


# ----------------------------------------------------------------------- counting AWS proxy
class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}

    def add(self, key, n=1):
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + n

    def snapshot(self):
        with self.lock:
            return dict(self.calls)


COUNTER = Counter()


class CallLog:
    """When each proxied AWS call started and ended (monotonic seconds), and the delay the proxy
    adds to each call (`--aws-delay-ms`)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []
        self.delay_s = 0.0

    def add(self, started, ended):
        with self.lock:
            self.calls.append((started, ended))

    def within(self, start, end):
        with self.lock:
            return [(a, b) for a, b in self.calls if a >= start and b <= end]


CALLS = CallLog()


def sequential_round_trips(calls):
    """The longest chain of calls in which each starts after the previous one ended: the most
    non-overlapping intervals, found greedily by end time."""
    depth, last_end = 0, float("-inf")
    for started, ended in sorted(calls, key=lambda c: c[1]):
        if started >= last_end:
            depth, last_end = depth + 1, ended
    return depth
UPSTREAM_AWS = ("127.0.0.1", 4566)


def classify(method, path, headers, body):
    """(service, operation, units) of one AWS request, from its signature scope and target."""
    auth = headers.get("authorization", "")
    m = re.search(r"Credential=[^/]+/[^/]+/[^/]+/([^/]+)/", auth)
    service = m.group(1) if m else "unknown"
    target = headers.get("x-amz-target", "")
    if service == "dynamodb":
        op = target.split(".")[-1] or "unknown"
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        # Request units: TransactWriteItems/TransactGetItems count per item (x2 in billing,
        # applied by the cost model); BatchGet/BatchWrite per item; Query counts one call.
        if op == "TransactWriteItems":
            return service, op, len(req.get("TransactItems", []))
        if op == "TransactGetItems":
            return service, op, len(req.get("TransactItems", []))
        if op == "BatchWriteItem":
            return service, op, sum(len(v) for v in req.get("RequestItems", {}).values())
        if op == "BatchGetItem":
            return service, op, sum(len(v.get("Keys", [])) for v in req.get("RequestItems", {}).values())
        if op in ("GetItem", "Query") and req.get("ConsistentRead"):
            return service, f"{op}(consistent)", 1
        return service, op, 1
    if service == "sqs":
        op = target.split(".")[-1] if target else "unknown"
        return service, op, 1
    if service == "s3":
        return service, method, 1
    if service == "states":
        return service, target.split(".")[-1] or "unknown", 1
    return service, target or method, 1


class AwsProxy(BaseHTTPRequestHandler):
    """Forwards to the emulator byte for byte (Host kept, so signatures stay valid) and counts."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _forward(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        service, op, units = classify(self.command, self.path, headers, body)
        COUNTER.add(f"{service}:{op}:calls")
        COUNTER.add(f"{service}:{op}:units", units)
        started = time.monotonic()
        if CALLS.delay_s:
            time.sleep(CALLS.delay_s)
        conn = http.client.HTTPConnection(*UPSTREAM_AWS, timeout=30)
        out_headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        conn.request(self.command, self.path, body=body, headers=out_headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() in ("transfer-encoding", "connection", "content-length"):
                continue
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()
        CALLS.add(started, time.monotonic())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _forward


# ------------------------------------------------------------------------ Lambda runtime API
class Runtime:
    """The Lambda runtime API for one function process: hands out queued events on `next` and
    records when each poll, response and error arrives."""

    def __init__(self):
        self.events = queue.Queue()
        self.first_poll = None
        self.delivered = {}
        self.done = {}
        self.init_error = None
        self.cond = threading.Condition()

    def invoke(self, payload, timeout=60.0):
        """Queues `payload`, waits for its response; returns (seconds, ok, body)."""
        rid = str(uuid.uuid4())
        self.events.put((rid, payload))
        deadline = time.monotonic() + timeout
        with self.cond:
            while rid not in self.done:
                left = deadline - time.monotonic()
                if left <= 0 or self.init_error is not None:
                    return None, False, self.init_error or "timed out"
                self.cond.wait(left)
            finished, ok, body = self.done.pop(rid)
            started = self.delivered.pop(rid)
        return finished - started, ok, body


def runtime_handler(runtime):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _reply(self, status, body=b"{}", headers=None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self):
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if size == 0:
                        # trailers until the blank line
                        while self.rfile.readline().strip():
                            pass
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                return b"".join(chunks)
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def do_GET(self):
            if self.path != f"{RUNTIME_PREFIX}/invocation/next":
                return self._reply(404)
            now = time.monotonic()
            if runtime.first_poll is None:
                runtime.first_poll = now
            rid, payload = runtime.events.get()
            data = json.dumps(payload).encode()
            with runtime.cond:
                runtime.delivered[rid] = time.monotonic()
            self._reply(200, data, {
                "Lambda-Runtime-Aws-Request-Id": rid,
                "Lambda-Runtime-Deadline-Ms": str(int(time.time() * 1000) + 30_000),
                "Lambda-Runtime-Invoked-Function-Arn":
                    "arn:aws:lambda:us-east-1:000000000000:function:bench",
                "Lambda-Runtime-Trace-Id": "Root=1-00000000-000000000000000000000000;Sampled=0",
            })

        def do_POST(self):
            body = self._body()
            now = time.monotonic()
            m = re.fullmatch(rf"{RUNTIME_PREFIX}/invocation/([^/]+)/(response|error)", self.path)
            if m:
                with runtime.cond:
                    runtime.done[m.group(1)] = (now, m.group(2) == "response", body)
                    runtime.cond.notify_all()
                return self._reply(202)
            if self.path == f"{RUNTIME_PREFIX}/init/error":
                with runtime.cond:
                    runtime.init_error = body.decode(errors="replace")
                    runtime.cond.notify_all()
                return self._reply(202)
            self._reply(404)

    return Handler


# ------------------------------------------------------------------------------------ events
def http_event(method, path, key, body=None, path_params=None, query=""):
    now = time.time()
    headers = {"host": "bench.execute-api.us-east-1.amazonaws.com", "user-agent": "bench",
               "authorization": f"Bearer {key}", "x-forwarded-proto": "https"}
    if body is not None:
        headers["content-type"] = "application/json"
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000", "apiId": "bench",
            "domainName": "bench.execute-api.us-east-1.amazonaws.com", "domainPrefix": "bench",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "bench"},
            "requestId": str(uuid.uuid4()), "routeKey": f"{method} {path}", "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "pathParameters": path_params or {},
        "queryStringParameters": dict(p.split("=", 1) for p in query.split("&") if "=" in p) or None,
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


def sqs_event(body):
    return {"Records": [{
        "messageId": str(uuid.uuid4()), "receiptHandle": "bench-receipt", "body": json.dumps(body),
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": str(int(time.time() * 1000))},
        "messageAttributes": {}, "md5OfBody": "", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:bench", "awsRegion": "us-east-1"}]}


def events_for(binary, key, org):
    """(description, event) of the representative request of each function."""
    missing_video = "video_0000000000000000000000bench"
    chat = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "Say hello"}]}
    table = {
        "api-chat-completions": ("POST /v1/chat/completions (fake upstream)",
                                 http_event("POST", "/v1/chat/completions", key, chat)),
        "api-messages": ("POST /v1/messages (fake upstream)",
                         http_event("POST", "/v1/messages", key,
                                    {"model": FAKE_MODEL, "max_tokens": 64,
                                     "messages": [{"role": "user", "content": "Say hello"}]})),
        "api-messages-count-tokens": ("POST /v1/messages/count_tokens (estimate)",
                                      http_event("POST", "/v1/messages/count_tokens", key,
                                                 {"model": FAKE_MODEL,
                                                  "messages": [{"role": "user", "content": "Say hello"}]})),
        "api-responses": ("POST /v1/responses (fake upstream)",
                          http_event("POST", "/v1/responses", key,
                                     {"model": FAKE_MODEL, "input": "Say hello", "store": False})),
        "api-models": ("GET /v1/models", http_event("GET", "/v1/models", key)),
        "api-model-item": ("GET /v1/models/{model}",
                           http_event("GET", f"/v1/models/{FAKE_MODEL}", key, None, {"model": FAKE_MODEL})),
        "api-openapi": ("GET /openapi.json", http_event("GET", "/openapi.json", key)),
        "api-usage": ("GET /v1/usage?start_time=0",
                      http_event("GET", "/v1/usage", key, None, None, "start_time=0")),
        "api-files": ("GET /v1/files", http_event("GET", "/v1/files", key)),
        "api-file-item": ("GET /v1/files/{id} (missing: 404)",
                          http_event("GET", "/v1/files/file-bench", key, None, {"file_id": "file-bench"})),
        "api-file-content": ("GET /v1/files/{id}/content (missing: 404)",
                             http_event("GET", "/v1/files/file-bench/content", key, None, {"file_id": "file-bench"})),
        "api-uploads": ("POST /v1/uploads",
                        http_event("POST", "/v1/uploads", key,
                                   {"filename": "a.txt", "purpose": "user_data", "bytes": 10,
                                    "mime_type": "text/plain"})),
        "api-upload-complete": ("POST /v1/uploads/{id}/complete (missing: 404)",
                                http_event("POST", "/v1/uploads/upload_bench/complete", key, {"part_ids": []},
                                           {"upload_id": "upload_bench"})),
        "api-videos": ("GET /v1/videos", http_event("GET", "/v1/videos", key)),
        "api-video-models": ("GET /v1/videos/models", http_event("GET", "/v1/videos/models", key)),
        "api-video-acceptance": ("GET /v1/videos/acceptance",
                                 http_event("GET", "/v1/videos/acceptance", key)),
        "api-video-item": ("GET /v1/videos/{id} (missing: 404)",
                           http_event("GET", f"/v1/videos/{missing_video}", key, None, {"video_id": missing_video})),
        "api-video-content": ("GET /v1/videos/{id}/content (missing: 404)",
                              http_event("GET", f"/v1/videos/{missing_video}/content", key, None,
                                         {"video_id": missing_video})),
        "api-video-thumbnail": ("GET /v1/videos/{id}/thumbnail (missing: 404)",
                                http_event("GET", f"/v1/videos/{missing_video}/thumbnail", key, None,
                                           {"video_id": missing_video})),
        "api-video-cancel": ("POST /v1/videos/{id}/cancel (missing: 404)",
                             http_event("POST", f"/v1/videos/{missing_video}/cancel", key, None,
                                        {"video_id": missing_video})),
        "api-webhooks": ("GET /v1/webhooks", http_event("GET", "/v1/webhooks", key)),
        "api-webhook-item": ("GET /v1/webhooks/{id} (missing: 404)",
                             http_event("GET", "/v1/webhooks/wh_bench", key, None, {"webhook_id": "wh_bench"})),
        "api-webhook-rotate-secret": ("POST /v1/webhooks/{id}/rotate_secret (missing: 404)",
                                      http_event("POST", "/v1/webhooks/wh_bench/rotate_secret", key, None,
                                                 {"webhook_id": "wh_bench"})),
        "api-response-item": ("GET /v1/responses/{id} (missing: 404)",
                              http_event("GET", "/v1/responses/resp_bench", key, None,
                                         {"response_id": "resp_bench"})),
        "api-response-input-items": ("GET /v1/responses/{id}/input_items (missing: 404)",
                                     http_event("GET", "/v1/responses/resp_bench/input_items", key, None,
                                                {"response_id": "resp_bench"})),
        "console": ("GET /console (sign-in page)", http_event("GET", "/console", key)),
        "step-moderate": ("moderate task input, unknown job (one read, JobNotRunning)",
                          {"org": org, "video_id": missing_video}),
        "step-translate": ("translate task input, unknown job",
                           {"org": org, "video_id": missing_video}),
        "step-finalize": ("finalize task input, unknown job",
                          {"org": org, "video_id": missing_video, "render": {"render_id": "r", "output_key": "videos/bench.mp4"}}),
        "step-fail-job": ("fail_job task input, unknown job",
                          {"org": org, "video_id": missing_video,
                           "error": {"Error": "States.TaskFailed", "Cause": "bench"}}),
        "render-worker": ("SQS batch of 1 poll message, unknown job",
                          sqs_event({"kind": "poll", "task_token": "t", "org": org, "video_id": missing_video,
                                     "render_id": "r", "last_progress": 0})),
        "webhook-worker": ("SQS batch of 1 webhook delivery, unknown endpoint",
                           sqs_event({"org": org, "endpoint_id": "wh_bench", "event_id": "evt_bench",
                                      "event_type": "video.completed", "payload": "{}",
                                      "attempt": 1, "due_at": 0})),
        "execution-ended": ("EventBridge execution FAILED, job not running",
                            {"version": "0", "id": str(uuid.uuid4()),
                             "detail-type": "Step Functions Execution Status Change",
                             "source": "aws.states", "account": "000000000000",
                             "time": "2026-01-01T00:00:00Z", "region": "us-east-1", "resources": [],
                             "detail": {"status": "FAILED",
                                        "executionArn": "arn:aws:states:us-east-1:000000000000:execution:sm:x",
                                        "input": json.dumps({"org": org, "video_id": missing_video})}}),
    }
    return table[binary]


# ------------------------------------------------------------------------------------- runs
def vm_hwm_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    rank = round(p / 100 * (len(ordered) - 1))
    return ordered[min(rank, len(ordered) - 1)]


def status_of(ok, body):
    """The HTTP status of an API Gateway response, or ok/error for other functions."""
    if not ok:
        try:
            return "error:" + json.loads(body).get("errorType", "?")
        except ValueError:
            return "error"
    try:
        out = json.loads(body)
    except ValueError:
        return "ok"
    if isinstance(out, dict) and "statusCode" in out:
        return str(out["statusCode"])
    return "ok"


def run_function(binary, bootstrap, env, event, warm, cold_runs, aws_delay_ms=0):
    result = {"binary": binary, "cold": []}
    for run in range(cold_runs):
        runtime = Runtime()
        server = quiet_server(runtime_handler(runtime))
        port = server.server_address[1]
        proc_env = dict(env)
        proc_env.update({
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
            "AWS_LAMBDA_FUNCTION_NAME": f"bench-{binary}",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/bench-{binary}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
            "_HANDLER": "bootstrap",
        })
        stderr_path = Path(env["BENCH_LOG_DIR"]) / f"{binary}-{run}.log"
        with open(stderr_path, "wb") as log:
            started = time.monotonic()
            proc = subprocess.Popen([str(bootstrap)], env=proc_env, stdout=log, stderr=log)
            first, ok, body = runtime.invoke(event)
            record = {"init_ms": None, "first_ms": None, "status": None}
            if runtime.first_poll is not None:
                record["init_ms"] = round((runtime.first_poll - started) * 1000, 2)
            if first is None:
                proc.kill()
                proc.wait()
                server.shutdown()
                tail = stderr_path.read_text(errors="replace")[-800:]
                result["error"] = f"no response (exit {proc.returncode}): {body}\n{tail}"
                return result
            record["first_ms"] = round(first * 1000, 2)
            record["status"] = status_of(ok, body)
            result["cold"].append(record)
            if run == cold_runs - 1:
                before = COUNTER.snapshot()
                log_before = stderr_path.stat().st_size
                durations = []
                statuses = {}
                depths = []
                for _ in range(warm):
                    started_at = time.monotonic()
                    seconds, ok, body = runtime.invoke(event)
                    if seconds is None:
                        break
                    depths.append(sequential_round_trips(CALLS.within(started_at, time.monotonic())))
                    durations.append(seconds * 1000)
                    s = status_of(ok, body)
                    statuses[s] = statuses.get(s, 0) + 1
                after = COUNTER.snapshot()
                n = max(len(durations), 1)
                # What the function itself writes to CloudWatch Logs per invocation (Lambda adds
                # its START/END/REPORT lines on top; the cost model adds those).
                result["log_bytes_per_invocation"] = round((stderr_path.stat().st_size - log_before) / n)
                result["warm"] = {
                    "count": len(durations),
                    "p50_ms": round(percentile(durations, 50), 3) if durations else None,
                    "p99_ms": round(percentile(durations, 99), 3) if durations else None,
                    "mean_ms": round(statistics.mean(durations), 3) if durations else None,
                    "statuses": statuses,
                }
                result["aws_per_invocation"] = {
                    k: round((after.get(k, 0) - before.get(k, 0)) / n, 3)
                    for k in sorted(set(after) | set(before))
                    if after.get(k, 0) != before.get(k, 0)
                }
                result["peak_rss_kb"] = vm_hwm_kb(proc.pid)
                if depths:
                    result["sequential_round_trips"] = {"median": statistics.median(depths),
                                                        "max": max(depths)}
                if aws_delay_ms and durations:
                    CALLS.delay_s = aws_delay_ms / 1000
                    delayed = []
                    for _ in range(min(warm, 20)):
                        seconds, ok, body = runtime.invoke(event)
                        if seconds is None:
                            break
                        delayed.append(seconds * 1000)
                    CALLS.delay_s = 0.0
                    if delayed:
                        p50 = percentile(delayed, 50)
                        result["modelled_aws"] = {
                            "delay_ms_per_call": aws_delay_ms,
                            "p50_ms": round(p50, 3),
                            "added_p50_ms": round(p50 - percentile(durations, 50), 3),
                        }
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            server.shutdown()
    inits = [r["init_ms"] for r in result["cold"] if r["init_ms"] is not None]
    firsts = [r["first_ms"] for r in result["cold"] if r["first_ms"] is not None]
    result["init_ms_median"] = round(statistics.median(inits), 2) if inits else None
    result["first_ms_median"] = round(statistics.median(firsts), 2) if firsts else None
    return result


def admin(reelgate, env, *args):
    out = subprocess.run([str(reelgate), "admin", "--backend", "aws", *args], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release-dir", default=os.environ.get("CARGO_TARGET_DIR", str(REPO / "target")) + "/release")
    parser.add_argument("--profile", default="release",
                        help="the Cargo profile the bootstraps were built with (recorded)")
    parser.add_argument("--functions", default="", help="comma-separated binaries (default: all)")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--warm", type=int, default=50)
    parser.add_argument("--out", default=str(REPO / "docs/bench/cold-start.json"))
    parser.add_argument("--aws-delay-ms", type=float, default=0,
                        help="also run the warm invocations with this delay added to every AWS call")
    parser.add_argument("--fn-env", action="append", default=[], metavar="VAR=VALUE",
                        help="a variable for the functions (repeatable)")
    parser.add_argument("--plan", default="enterprise",
                        help="the bench organization's plan (enterprise has no rate limits)")
    args = parser.parse_args()

    import boto3  # installed by scripts/bench-cold-start.sh into the bench venv

    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        sys.exit("AWS_ENDPOINT_URL is unset: run through scripts/bench-cold-start.sh")
    host, port = endpoint.replace("http://", "").split(":")
    global UPSTREAM_AWS
    UPSTREAM_AWS = (host, int(port))
    release = Path(args.release_dir)
    # A member of a shared bootstrap runs it with REELGATE_FUNCTION naming it (lambda_manifest.py).
    shared = lambda_manifest.bootstrap_of(lambda_manifest.manifest_text(REPO))
    binaries = [b for b in args.functions.split(",") if b] or sorted(
        {p.stem for p in (REPO / "functions/reelgate-lambda/src/bin").glob("*.rs")}
        - set(shared.values()) | set(shared))

    run = format(int(time.time()), "x")
    table, bucket, queue_name = f"bench-{run}-table", f"bench-{run}-bucket", f"bench-{run}-render"
    region = "us-east-1"
    session = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test", region_name=region)
    ddb = session.client("dynamodb", endpoint_url=endpoint)
    # The table as reelgate_aws::provision::table shapes it (pk/sk, on demand).
    ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                {"AttributeName": "sk", "KeyType": "RANGE"}])
    session.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
    queue_url = session.client("sqs", endpoint_url=endpoint).create_queue(QueueName=queue_name)["QueueUrl"]

    upstream = quiet_server(FakeUpstream)
    proxy = quiet_server(AwsProxy)
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REELGATE_")}
    env.update({
        "AWS_REGION": region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_ENDPOINT_URL": endpoint,
        "REELGATE_TABLE": table, "REELGATE_BUCKET": bucket, "REELGATE_RENDER_QUEUE_URL": queue_url,
        "REELGATE_WEBHOOK_QUEUE_URL": queue_url,
        "REELGATE_UPSTREAM_BASE_URL": f"http://127.0.0.1:{upstream.server_address[1]}/v1",
        "REELGATE_MODERATOR": "rules", "REELGATE_LOG": "info",
        # api-responses declares the PDF renderer; the bench's requests carry no PDF, so the
        # function is never invoked (a name is all start-up checks).
        "REELGATE_PDF_FUNCTION": "bench-pdf-rasterizer",
    })
    # The CLI is the release build (it is not deployed) unless BENCH_CLI names another.
    reelgate = Path(os.environ.get("BENCH_CLI") or release.parent / "release" / "reelgate")
    org = admin(reelgate, env, "org", "create", "--name", "bench", "--plan", args.plan, "--credits", "1000000")
    org_id = org.get("id") or org.get("org") or org.get("org_id")
    user = admin(reelgate, env, "user", "create", "--org", org_id, "--email", "bench@example.com")
    user_id = user.get("id") or user.get("user") or user.get("user_id")
    key = admin(reelgate, env, "key", "create", "--user", user_id)
    secret = key.get("key") or key.get("secret") or key.get("api_key")

    fn_env = dict(env)
    fn_env["AWS_ENDPOINT_URL"] = proxy_url
    log_dir = Path(os.environ.get("BENCH_LOG_DIR", "/tmp/reelgate-bench-cold-start"))
    log_dir.mkdir(parents=True, exist_ok=True)
    fn_env["BENCH_LOG_DIR"] = str(log_dir)
    for assignment in args.fn_env:
        name, _, value = assignment.partition("=")
        fn_env[name] = value

    results = []
    print(f"{'function':28} {'init ms':>8} {'1st ms':>8} {'warm p50':>9} {'warm p99':>9} {'RSS MB':>7} "
          f"{'trips':>6} {'+AWS ms':>8}  event -> status")
    for binary in binaries:
        bootstrap = release / shared.get(binary, binary)
        env = dict(fn_env, REELGATE_FUNCTION=binary) if binary in shared else fn_env
        if not bootstrap.exists():
            print(f"{binary:28} not built ({bootstrap})")
            results.append({"binary": binary, "error": "not built"})
            continue
        description, event = events_for(binary, secret, org_id)
        r = run_function(binary, bootstrap, env, event, args.warm, args.cold_runs, args.aws_delay_ms)
        r["event"] = description
        r["bootstrap_bytes"] = bootstrap.stat().st_size
        results.append(r)
        if "error" in r:
            print(f"{binary:28} FAILED: {r['error'][:300]}")
            continue
        w = r["warm"]
        rss = (r.get("peak_rss_kb") or 0) / 1024
        trips = r.get("sequential_round_trips", {}).get("median")
        modelled = r.get("modelled_aws", {}).get("added_p50_ms")
        print(f"{binary:28} {r['init_ms_median']:8.1f} {r['first_ms_median']:8.1f} {w['p50_ms']:9.2f} "
              f"{w['p99_ms']:9.2f} {rss:7.1f} {trips if trips is not None else '-':>6} "
              f"{modelled if modelled is not None else '-':>8}  {description} -> {w['statuses']}")
    load = os.getloadavg()
    report = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "loadavg_1_5_15": [round(x, 2) for x in load],
                    "arch": os.uname().machine},
        "cold_runs": args.cold_runs, "warm_invocations": args.warm, "profile": args.profile,
        "plan": args.plan, "aws_delay_ms": args.aws_delay_ms, "fn_env": args.fn_env,
        "functions": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"load average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({os.cpu_count()} CPUs; anything else running on this machine makes the numbers noisy)")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
