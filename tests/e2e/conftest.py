"""End-to-end fixtures: the real `reelgate` binary serving on a free port from a fresh data
directory (tests/harness.py), driven by real clients (the official `openai` SDK, httpx, ffprobe).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import serving  # noqa: E402


@pytest.fixture(scope="session")
def server():
    with serving() as srv:
        yield srv
