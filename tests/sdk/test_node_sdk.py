"""The Node conformance suite (tests/sdk/node/sdk.test.cjs, the official `openai` npm package)
against the same server and tenant as the Python SDK suite; node's own test runner reports each
test, and a failure here shows its output."""

import os
import shutil
import subprocess

import pytest

TOOLS = os.environ.get("REELGATE_TOOLS_DIR", os.path.expanduser("~/.cache/reelgate/tools"))
NODE_MODULES = os.path.join(TOOLS, "node", "node_modules")
SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node", "sdk.test.cjs")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is installed by scripts/test-tools.sh")
def test_the_official_node_sdk_drives_every_route(tenant):
    assert os.path.isdir(os.path.join(NODE_MODULES, "openai")), "run scripts/test-tools.sh (installs the openai npm package)"
    env = {
        **os.environ,
        "NODE_PATH": NODE_MODULES,
        "SDK_BASE_URL": tenant.base_url,
        "SDK_API_KEY": tenant.key,
    }
    run = subprocess.run(["node", "--test", "--test-reporter=spec", SUITE], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout or "ℹ fail 0" in run.stdout, run.stdout[-3000:]


ANTHROPIC_SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node", "anthropic.test.cjs")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is installed by scripts/test-tools.sh")
def test_the_official_anthropic_node_sdk_drives_the_messages_api(tenant):
    import base64

    from test_python_sdk import png_bytes

    assert os.path.isdir(os.path.join(NODE_MODULES, "@anthropic-ai", "sdk")), "run scripts/test-tools.sh (installs @anthropic-ai/sdk)"
    env = {
        **os.environ,
        "NODE_PATH": NODE_MODULES,
        "SDK_SERVER_URL": tenant.server.base_url,
        "SDK_API_KEY": tenant.key,
        "SDK_PNG_B64": base64.b64encode(png_bytes()).decode(),
    }
    run = subprocess.run(["node", "--test", "--test-reporter=spec", ANTHROPIC_SUITE], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout or "ℹ fail 0" in run.stdout, run.stdout[-3000:]
