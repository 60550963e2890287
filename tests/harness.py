"""The real `reelgate serve` binary as a test peer, shared by every Python suite under tests/
(end-to-end, and any suite that attacks or drives the running server). Each suite's conftest.py
puts this directory on sys.path and imports from here.

Environment:
  REELGATE_BIN   path of the built `reelgate` binary (scripts/test.sh sets it)
"""

import json
import os
import re
import socket
import subprocess
import time

import httpx

BIN = os.environ.get("REELGATE_BIN", "")


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
            if line.startswith("  try:") or "make another with" in line:
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
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None

    def admin(self, *args) -> dict:
        out = subprocess.run(
            [BIN, "admin", "--data-dir", self.data_dir, *args],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout)

    def agree(self, user: str, org: str):
        """Records agreement the only way the service allows: from a console session."""
        session = self.admin("console-session", "create", "--user", user, "--org", org)
        r = httpx.post(
            f"{self.base_url}/v1/videos/acceptance",
            headers={"Authorization": f"Bearer {session['secret']}"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["accepted"] is True


FAKE_UPSTREAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python", "fake_upstream.py")


class FakeUpstream:
    """tests/python/fake_upstream.py as a child process (a fake OpenAI-compatible upstream)."""

    def __init__(self, gap_ms: int = 0):
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, FAKE_UPSTREAM, "--port", "0", "--gap-ms", str(gap_ms)],
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

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident set (VmHWM) in KiB, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc status")
