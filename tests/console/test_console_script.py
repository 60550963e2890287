"""The console's script parses: each part under functions/reelgate/src/api/console/assets/js/
on its own (so a syntax error names its file), and the whole script as the real `reelgate serve`
serves it, joined from those parts (strict, one scope), both with `node --check`."""

import glob
import os
import subprocess
import tempfile

import httpx

PARTS = os.path.join(os.path.dirname(__file__), "..", "..",
                     "functions", "reelgate", "src", "api", "console", "assets", "js")


def node_check(path: str):
    r = subprocess.run(["node", "--check", path], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"node --check {path}:\n{r.stderr}"


def test_each_part_of_the_console_script_parses():
    parts = sorted(glob.glob(os.path.join(PARTS, "*.js")))
    assert parts, f"no script parts under {PARTS}"
    for part in parts:
        node_check(part)


def test_the_served_console_script_parses(server):
    r = httpx.get(f"{server.base_url}/console/assets/console.js")
    assert r.status_code == 200
    assert r.text.startswith('"use strict";')
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "console.js")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r.text)
        node_check(path)
