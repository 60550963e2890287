"""Console fixtures: the real `reelgate serve` binary (tests/harness.py), signed in to through
its one-time sign-in links, driven over HTTP (httpx) and in a real headless Chromium."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, LocalServer  # noqa: E402


@pytest.fixture(scope="module")
def server():
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    with tempfile.TemporaryDirectory() as data_dir:
        srv = LocalServer(data_dir).start()
        try:
            yield srv
        finally:
            srv.stop()
