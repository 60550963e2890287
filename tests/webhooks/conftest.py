"""Webhook fixtures: a receiver inside the tests (a real HTTP server on 127.0.0.1 that checks
every delivery's Standard Webhooks signature with its own HMAC code) and the real
`reelgate serve` (tests/harness.py) allowed to reach it, with retries seconds apart."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import serving  # noqa: E402

from receiver import Receiver  # noqa: E402


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    try:
        yield r
    finally:
        r.stop()


@pytest.fixture(scope="module")
def server():
    """Loopback endpoints are allowed (REELGATE_FETCH_ALLOW) so the receiver can be reached;
    a failed attempt is retried after 1 s, three times, then the endpoint is disabled."""
    env = {"REELGATE_FETCH_ALLOW": "127.0.0.1", "REELGATE_WEBHOOK_RETRY_SECS": "1,1,1"}
    with serving(env=env) as srv:
        srv.agree(srv.user, srv.org)
        yield srv
