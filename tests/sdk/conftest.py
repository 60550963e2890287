"""SDK conformance fixtures: `reelgate serve` with the FakeUpstream as its text-model upstream,
and a funded organization on the enterprise plan whose person has agreed to the video terms
(through the console, the only way), with its own API key. The official SDKs drive it."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import FakeUpstream, serving  # noqa: E402

MODEL = "fake-model-v1"


class Tenant:
    def __init__(self, server, key, org, user, fake_url):
        self.server, self.key, self.org, self.user = server, key, org, user
        # The FakeUpstream's address, for what it received (GET /_fake/requests).
        self.fake_url = fake_url
        self.base_url = f"{server.base_url}/v1"


@pytest.fixture(scope="session")
def tenant():
    fake = FakeUpstream(gap_ms=5)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision"}
        with serving(env=env) as server:
            org = server.admin("org", "create", "--name", "SDK", "--plan", "enterprise", "--credits", "50.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "sdk@example.test")
            key = server.admin("key", "create", "--user", user["id"])["secret"]
            server.agree(user["id"], org["id"])
            yield Tenant(server, key, org["id"], user["id"], fake.url)
    finally:
        fake.stop()
