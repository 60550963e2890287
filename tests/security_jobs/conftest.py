"""Fixtures of the jobs, retries and crashes suite: the real `reelgate serve` binary
(tests/harness.py) with a short Idempotency-Key lifetime, and funded tenants that have agreed to
the video terms (an organization, a person, an API key, the agreement from a console session)."""

import os
import struct
import sys
import tempfile
import uuid
import zlib
from dataclasses import dataclass

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, LocalServer  # noqa: E402

# Short, so the expiry test waits seconds rather than the default 24 hours.
IDEMPOTENCY_TTL_SECS = 4


@dataclass
class Tenant:
    server: LocalServer
    org: str
    user: str
    key: str

    @property
    def headers(self):
        return {"Authorization": f"Bearer {self.key}"}

    def url(self, path: str) -> str:
        return f"{self.server.base_url}{path}"

    def state(self) -> dict:
        """The organization as the admin CLI reads it (balance, reserved, renders in flight)."""
        return self.server.admin("org", "show", "--org", self.org)


def make_tenant(server: LocalServer, plan: str = "enterprise", credits: str = "500.00") -> Tenant:
    org = server.admin("org", "create", "--name", f"T-{uuid.uuid4().hex[:8]}", "--plan", plan, "--credits", credits)
    user = server.admin("user", "create", "--org", org["id"], "--email", f"{uuid.uuid4().hex[:10]}@example.test")
    key = server.admin("key", "create", "--user", user["id"])["secret"]
    server.agree(user["id"], org["id"])
    return Tenant(server=server, org=org["id"], user=user["id"], key=key)


def start_server(data_dir: str, **env) -> LocalServer:
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    return LocalServer(data_dir, env={"REELGATE_IDEMPOTENCY_TTL_SECS": str(IDEMPOTENCY_TTL_SECS), **env}).start()


@pytest.fixture(scope="session")
def server():
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir)
        try:
            yield srv
        finally:
            srv.stop()


@pytest.fixture
def tenant(server) -> Tenant:
    return make_tenant(server)


def png_bytes(w=8, h=8, shade=120) -> bytes:
    rows = b"".join(b"\x00" + b"".join(bytes((x * 30 % 256, y * 30 % 256, shade)) for x in range(w)) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
