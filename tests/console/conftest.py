"""Console fixtures: the real `reelgate serve` binary (tests/harness.py), signed in to through
its one-time sign-in links, driven over HTTP (httpx) and in a real headless Chromium."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import serving  # noqa: E402


@pytest.fixture(scope="module")
def server():
    with serving() as srv:
        yield srv
