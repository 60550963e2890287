"""The real `reelgate serve` binary as a test peer, shared by every Python suite under tests/
(end-to-end, and any suite that attacks or drives the running server). Each suite's conftest.py
puts this directory on sys.path and imports from here.

Environment:
  REELGATE_BIN   path of the built `reelgate` binary (scripts/test.sh sets it)
"""

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time

import httpx

import openapi_check

BIN = os.environ.get("REELGATE_BIN", "")


def stop_process(proc):
    """Ends a child process: politely, then by force after 10 s."""
    if proc:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def serving(args=(), env=None):
    """`reelgate serve` on a fresh data directory for the length of a `with` block."""
    if not BIN:
        raise RuntimeError("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    checker = openapi_check.install()
    with tempfile.TemporaryDirectory() as data_dir:
        server = LocalServer(data_dir, args=args, env=env).start()
        # Every answer this server gives a test is checked against docs/openapi.json.
        openapi_check.watch(server.base_url)
        before = len(checker.violations)
        try:
            yield server
        finally:
            openapi_check.unwatch(server.base_url)
            server.stop()
        missed = checker.violations[before:]
        assert not missed, "answers that do not match docs/openapi.json:\n  " + "\n  ".join(missed)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """One `reelgate serve` process and its data directory."""

    def __init__(self, data_dir: str, args=(), env=None):
        self.data_dir = data_dir
        self.extra_args = list(args)
        self.extra_env = dict(env or {})
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(data_dir, "serve.log")
        self.proc = None
        self.api_key = None
        self.org = None
        self.user = None
        self.sign_in_link = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [
                BIN,
                "serve",
                "--addr",
                f"127.0.0.1:{self.port}",
                "--data-dir",
                self.data_dir,
                *self.extra_args,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "REELGATE_RENDER_POLL_SECS": "1", **self.extra_env},
        )
        lines = []
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            lines.append(line)
            if m := re.search(r"demo API key \(shown once, keep it\): (\S+)", line):
                self.api_key = m.group(1)
            if m := re.search(r"demo organization: (org_\S+) \(user (user_\S+)\)", line):
                self.org, self.user = m.group(1), m.group(2)
            if m := re.search(r"console sign-in link \(works once, for \d+ min\): (\S+)", line):
                self.sign_in_link = m.group(1)
            if "another link: reelgate admin console-link" in line:
                break
        for _ in range(100):
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"reelgate serve did not become ready: {''.join(lines)}")

    def stop(self):
        stop_process(self.proc)
        self.proc = None

    def admin(self, *args) -> dict:
        out = subprocess.run(
            [BIN, "admin", "--data-dir", self.data_dir, *args],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout)

    def console_link(self, user: str, org: str) -> str:
        """A one-time sign-in link to the console for a member of an organization."""
        return self.admin(
            "console-link", "--user", user, "--org", org, "--public-url", self.base_url
        )["url"]

    def console(self, user: str = None, org: str = None, link: str = None) -> "ConsoleClient":
        """A console browser session (cookie + CSRF token), signed in by a link."""
        if link is None:
            link = self.console_link(user or self.user, org or self.org)
        return ConsoleClient(self.base_url).sign_in(link)

    def agree(self, user: str, org: str):
        """Records agreement the only way the service allows: signed in to the console."""
        with self.console(user, org) as console:
            r = console.post("/console/api/terms/agree")
            assert r.status_code == 200, r.text
            assert r.json()["accepted"] is True


class ConsoleClient:
    """What a browser does with the console's JSON routes: it follows a sign-in link, keeps the
    session cookie, and sends the session's CSRF token with every state-changing request."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.http = httpx.Client(base_url=base_url, timeout=30)
        self.csrf = None
        self.set_cookie = None

    def sign_in(self, link: str) -> "ConsoleClient":
        r = self.http.get(link, follow_redirects=False)
        assert r.status_code == 303, r.text
        self.set_cookie = r.headers.get("set-cookie")
        session = self.http.get("/console/api/session")
        assert session.status_code == 200, session.text
        self.csrf = session.json()["csrf_token"]
        return self

    def get(self, path: str, **kw) -> httpx.Response:
        return self.http.get(path, **kw)

    def post(self, path: str, json=None, csrf: bool = True, headers=None) -> httpx.Response:
        h = dict(headers or {})
        if csrf and self.csrf:
            h["X-CSRF-Token"] = self.csrf
        return self.http.post(path, json=json, headers=h)

    def delete(self, path: str, csrf: bool = True) -> httpx.Response:
        h = {"X-CSRF-Token": self.csrf} if csrf and self.csrf else {}
        return self.http.delete(path, headers=h)

    def close(self):
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


FAKE_UPSTREAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "fake_upstream.py")


class FakeUpstream:
    """tests/python/fake_upstream.py as a child process (a fake OpenAI-compatible upstream)."""

    def __init__(self, gap_ms: int = 0, cached_tokens: int = 0):
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, FAKE_UPSTREAM, "--port", "0", "--gap-ms", str(gap_ms),
             "--cached-tokens", str(cached_tokens)],
            stdout=subprocess.PIPE,
            text=True,
        )
        first = self.proc.stdout.readline().strip()
        if not first.startswith("FAKE_UPSTREAM_URL="):
            self.stop()
            raise RuntimeError(f"fake upstream did not start: {first!r}")
        self.url = first.split("=", 1)[1]

    def requests(self) -> list:
        return httpx.get(f"{self.url}/_fake/requests", timeout=10).json()

    def streams(self) -> list:
        return httpx.get(f"{self.url}/_fake/streams", timeout=10).json()

    def stop(self):
        stop_process(self.proc)
        self.proc = None


DEFAULT_CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "functions", "reelgate", "src",
                               "domain", "catalog", "catalog.default.toml")


class FakeProviderProcess:
    """A fake provider (a script in tests/python) as a child process: it prints `<BANNER>=<url>`
    once it listens, records what it received (`/_fake/requests`), keeps a prompt cache
    (`/_fake/cache`) and forgets both on `/_fake/reset`. `catalog(path)` writes the default
    catalog plus `CATALOG` (the fake's upstream and its chat model), for REELGATE_CATALOG."""

    SCRIPT = ""
    BANNER = ""
    CATALOG = ""

    def __init__(self, *args: str):
        import sys

        self.proc = subprocess.Popen([sys.executable, self.SCRIPT, "--port", "0", *args],
                                     stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().strip()
        if not first.startswith(f"{self.BANNER}="):
            self.stop()
            raise RuntimeError(f"{os.path.basename(self.SCRIPT)} did not start: {first!r}")
        self.url = first.split("=", 1)[1]

    def catalog(self, path: str) -> str:
        with open(DEFAULT_CATALOG) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text + self.CATALOG.format(fake=self))
        return path

    def requests(self) -> list:
        """Every request it received, in order, refused ones included."""
        return httpx.get(f"{self.url}/_fake/requests", timeout=10).json()

    def cache(self) -> list:
        """Its live prompt-cache entries."""
        return httpx.get(f"{self.url}/_fake/cache", timeout=10).json()

    def reset(self):
        """Forgets the recorded requests and empties the prompt cache."""
        httpx.post(f"{self.url}/_fake/reset", timeout=10).raise_for_status()

    def stop(self):
        stop_process(self.proc)
        self.proc = None


class FakeConverse(FakeProviderProcess):
    """tests/python/fake_converse.py (a fake Bedrock Runtime: Converse, ConverseStream,
    CountTokens). Its catalog's chat model `MODEL_ID` is Claude on it; `ENV` holds the fake AWS
    credentials it needs. `count_input`: an uncached request reports its real input count."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "fake_converse.py")
    BANNER = "FAKE_CONVERSE_URL"
    MODEL_ID = "claude-on-bedrock"
    UPSTREAM_MODEL = "anthropic.claude-3-7-sonnet-20250219-v1:0"
    ENV = {"AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "fake-secret",
           "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    CATALOG = """
[[upstreams]]
id = "bedrock"
kind = "bedrock"
region = "us-east-1"
base_url = "{fake.url}"

[[chat_models]]
id = "{fake.MODEL_ID}"
upstream = "bedrock"
upstream_model = "{fake.UPSTREAM_MODEL}"
capabilities = ["text", "vision", "tools"]
reasoning_efforts = ["low", "medium", "high"]
input_per_million = "3.00"
output_per_million = "15.00"
"""

    def __init__(self, gap_ms: int = 0, count_input: bool = False):
        super().__init__("--gap-ms", str(gap_ms), *(["--count-input"] if count_input else []))


class FakeAnthropic(FakeProviderProcess):
    """tests/python/fake_anthropic.py (a fake Anthropic Messages API: create, stream,
    count_tokens, with prompt caching and signed thinking). Its catalog's chat model `MODEL_ID`
    is Claude on it; `ENV` holds the key it takes, under the name the catalog's `api_key_env`
    gives."""

    SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "fake_anthropic.py")
    BANNER = "FAKE_ANTHROPIC_URL"
    MODEL_ID = "claude-direct"
    UPSTREAM_MODEL = "claude-sonnet-4-5"
    API_KEY = "fake-anthropic-key"
    ENV = {"FAKE_ANTHROPIC_API_KEY": API_KEY}
    CATALOG = """
[[upstreams]]
id = "anthropic"
kind = "anthropic"
base_url = "{fake.url}"
api_key_env = "FAKE_ANTHROPIC_API_KEY"

[[chat_models]]
id = "{fake.MODEL_ID}"
upstream = "anthropic"
upstream_model = "{fake.UPSTREAM_MODEL}"
capabilities = ["text", "vision", "tools"]
reasoning_efforts = ["low", "medium", "high"]
input_per_million = "3.00"
output_per_million = "15.00"
cached_input_per_million = "0.30"
cache_write_per_million = "3.75"
"""

    def __init__(self, gap_ms: int = 0):
        super().__init__("--gap-ms", str(gap_ms), "--api-key", self.API_KEY)


class FakeHangingEngine:
    """A fake video engine (reelgate's engine protocol, docs/engine-protocol.md) on a thread:
    every render it accepts stays `rendering` at progress 5 until it is canceled, so a job
    stays running as long as a test needs. Point the service at it with
    REELGATE_REFERENCE_ENGINE_URL. `canceled` lists the renders canceled through it."""

    def __init__(self):
        import http.server
        import threading

        self.lock = threading.Lock()
        self.renders = {}
        self.canceled = []
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", "0")))
                with engine.lock:
                    if self.path == "/v1/renders":
                        rid = "rnd_%024x" % (len(engine.renders) + 1)
                        engine.renders[rid] = {"id": rid, "status": "rendering", "progress": 5,
                                               "error": None, "result_url": None, "created_at": int(time.time())}
                        return self.answer(202, engine.renders[rid])
                    parts = self.path.strip("/").split("/")
                    if len(parts) == 4 and parts[3] == "cancel" and parts[2] in engine.renders:
                        engine.renders[parts[2]]["status"] = "canceled"
                        engine.canceled.append(parts[2])
                        return self.answer(200, engine.renders[parts[2]])
                self.answer(404, {"error": {"code": "render_not_found", "message": "unknown"}})

            def do_GET(self):
                rid = self.path.rstrip("/").rsplit("/", 1)[-1]
                with engine.lock:
                    if rid in engine.renders:
                        return self.answer(200, engine.renders[rid])
                self.answer(404, {"error": {"code": "render_not_found", "message": "unknown"}})

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM) in KiB, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc status")
