"""The front door's origin check against the real `reelgate serve` binary (tests/harness.py),
started with REELGATE_ORIGIN_SECRET as the AWS functions are (docs/deploy.md, "One front door").
"""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import BIN, LocalServer  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from frontdoor_secrets import SECONDARY, SECRET  # noqa: E402


def _serve(env):
    if not BIN:
        pytest.fail("REELGATE_BIN must name the built reelgate binary (run scripts/test.sh)")
    data_dir = tempfile.TemporaryDirectory()
    srv = LocalServer(data_dir.name, env=env).start()
    return srv, data_dir


@pytest.fixture(scope="session")
def guarded():
    """A server behind the front door's check, with a secondary secret (mid-rotation)."""
    srv, data_dir = _serve(
        {"REELGATE_ORIGIN_SECRET": SECRET, "REELGATE_ORIGIN_SECRET_SECONDARY": SECONDARY}
    )
    try:
        yield srv
    finally:
        srv.stop()
        data_dir.cleanup()


@pytest.fixture(scope="session")
def open_server():
    """A server without an origin secret (the local default)."""
    srv, data_dir = _serve({})
    try:
        yield srv
    finally:
        srv.stop()
        data_dir.cleanup()
