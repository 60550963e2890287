"""Observability and usage: the real `reelgate` binary (tests/harness.py) with
tests/python/fake_upstream.py as a priced upstream that reports cached prompt tokens."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
