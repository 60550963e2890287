"""FakeUpstream: a tiny OpenAI-compatible chat server for reelgate's Python SDK tests.

It is a fake, for tests only: it speaks the chat completions protocol with scripted,
deterministic answers so that the tests can check what reelgate forwards and returns.

    python fake_upstream.py [--port PORT] [--gap-ms MS]

prints `FAKE_UPSTREAM_URL=http://127.0.0.1:<port>` on its first line once it listens (port 0
picks a free port). Behaviour of POST /v1/chat/completions, by the request:

- tools given and the last message is from the user: two parallel `get_weather` calls
  (Paris, Tokyo), finish_reason `tool_calls`;
- the last message is a `tool` result: "Weather: <results joined by '; '>";
- an `image_url` part: the fake GETs the URL (as a vision model would; a `data:` URL is
  decoded) and answers "image <n> bytes png=<true|false>";
- a last user message that starts with `echo:`: the rest of it, as sent (a reply whose words
  the test chooses: markdown, markup);
- otherwise: "Hello from the fake upstream.".

As OpenAI does, the text is cut before the first of the request's `stop` sequences (finish
`stop`, without saying which one matched) and after `max_completion_tokens` (or `max_tokens`)
words (finish `length`); a `tool` message that answers no earlier assistant tool call is refused
with OpenAI's 400. Streamed tool calls send the id and name first, then the arguments in two
fragments, as OpenAI streams them.

With `stream: true` the answer goes out as SSE, one chunk per word, `--gap-ms` apart (default
200), then a finish chunk, a usage chunk when `stream_options.include_usage` is set, and
`data: [DONE]`. Usage is always prompt_tokens=10, completion_tokens=<words>; with
`--cached-tokens N` (N > 0) it also reports `prompt_tokens_details.cached_tokens = N`, as an
upstream with a prompt cache does.

GET /v1/models lists `fake-model-v1`; GET /_fake/requests returns every chat request body
received, in order (the tests inspect what reelgate forwarded); GET /_fake/fetched lists the
media URLs it fetched with their sizes; GET /_fake/streams lists each streamed answer's end:
`{"words_sent", "words", "ended": "done" | "reader_left", "at"}` (a reader that left is seen at
the next write).
"""

import argparse
import base64
import json
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUESTS = []
FETCHED = []
STREAMS = []
LOCK = threading.Lock()
GAP_SECONDS = 0.2
CACHED_TOKENS = 0


def _refusal(body):
    """OpenAI's 400 for a tool message that answers no earlier tool call, else None."""
    called = set()
    for i, m in enumerate(body.get("messages") or []):
        for call in m.get("tool_calls") or []:
            called.add(call.get("id"))
        if m.get("role") == "tool" and m.get("tool_call_id") not in called:
            return {"error": {
                "message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                "type": "invalid_request_error", "param": f"messages.[{i}].role", "code": None}}
    return None


def _limit(body, text):
    """The text as OpenAI would end it (stop sequences, the token limit) and its finish reason."""
    finish = "stop"
    stops = body.get("stop") or []
    if isinstance(stops, str):
        stops = [stops]
    for s in stops:
        at = text.find(s)
        if at >= 0:
            text = text[:at]
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    words = text.split(" ") if text else []
    if limit and len(words) > limit:
        text = " ".join(words[:limit])
        finish = "length"
    return text, finish


def _answer(body):
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if body.get("tools") and last.get("role") == "user":
        calls = [
            {"id": "call_paris", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}},
            {"id": "call_tokyo", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": "Tokyo"})}},
        ]
        return None, calls
    if last.get("role") == "tool":
        results = [m.get("content") for m in messages if m.get("role") == "tool"]
        return "Weather: " + "; ".join(str(r) for r in results), None
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "image_url":
                    url = part["image_url"]["url"]
                    data = b""
                    if url.startswith("data:"):
                        data = base64.b64decode(url.split(";base64,", 1)[1])
                    elif url.startswith("http"):
                        with urllib.request.urlopen(url, timeout=10) as r:
                            data = r.read()
                        with LOCK:
                            FETCHED.append({"url": url, "bytes": len(data)})
                    png = data.startswith(b"\x89PNG\r\n\x1a\n")
                    return f"image {len(data)} bytes png={'true' if png else 'false'}", None
    if isinstance(last.get("content"), str) and last["content"].startswith("echo:"):
        return last["content"][len("echo:"):].lstrip(" "), None
    return "Hello from the fake upstream.", None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the test output is what matters
        pass

    def _json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": "fake-model-v1", "object": "model", "created": 0, "owned_by": "fake"}]})
        elif self.path == "/_fake/requests":
            with LOCK:
                self._json(200, REQUESTS)
        elif self.path == "/_fake/streams":
            with LOCK:
                self._json(200, STREAMS)
        elif self.path == "/_fake/fetched":
            with LOCK:
                self._json(200, FETCHED)
        else:
            self._json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/v1/chat/completions":
            self._json(404, {"error": {"message": "no such path", "type": "invalid_request_error"}})
            return
        with LOCK:
            REQUESTS.append(body)
        refusal = _refusal(body)
        if refusal:
            self._json(400, refusal)
            return
        text, calls = _answer(body)
        finish = "tool_calls" if calls else "stop"
        if text:
            text, finish = _limit(body, text)
        words = text.split(" ") if text else []
        usage = {"prompt_tokens": 10, "completion_tokens": max(len(words), len(calls or [])),
                 "total_tokens": 10 + max(len(words), len(calls or []))}
        if CACHED_TOKENS:
            usage["prompt_tokens_details"] = {"cached_tokens": CACHED_TOKENS}
        base = {"id": "fake-upstream-id", "created": int(time.time()), "model": body.get("model")}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = calls
            self._json(200, {**base, "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()

        def send(chunk):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        def chunk(delta, finish=None):
            return {**base, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        sent = 0
        try:
            send(chunk({"role": "assistant", "content": ""}))
            if calls:
                for i, call in enumerate(calls):
                    time.sleep(GAP_SECONDS)
                    args = call["function"]["arguments"]
                    half = len(args) // 2
                    send(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                "function": {"name": call["function"]["name"], "arguments": ""}}]}))
                    for part in (args[:half], args[half:]):
                        send(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
            for i, word in enumerate(words):
                time.sleep(GAP_SECONDS)
                send(chunk({"content": word if i == 0 else " " + word}))
                sent = i + 1
            send(chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                send({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            ended = "done"
        except (BrokenPipeError, ConnectionResetError):
            ended = "reader_left"  # the reader went away: stop generating
        with LOCK:
            STREAMS.append({"words_sent": sent, "words": len(words), "ended": ended, "at": time.time()})
        self.close_connection = True


def main():
    global GAP_SECONDS, CACHED_TOKENS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gap-ms", type=int, default=200)
    parser.add_argument("--cached-tokens", type=int, default=0)
    args = parser.parse_args()
    GAP_SECONDS = args.gap_ms / 1000
    CACHED_TOKENS = args.cached_tokens
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"FAKE_UPSTREAM_URL=http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
