"""End-to-end fixtures: the real `reelgate` binary serving on a free port from a fresh data
directory (tests/harness.py), driven by real clients (the official `openai` SDK, httpx, ffprobe).
"""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, LocalServer  # noqa: E402


@pytest.fixture(scope="session")
def server():
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    with tempfile.TemporaryDirectory() as data_dir:
        srv = LocalServer(data_dir).start()
        try:
            yield srv
        finally:
            srv.stop()
