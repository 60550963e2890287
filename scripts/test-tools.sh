#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, once, into a cache outside the clone:
# a Python venv with the pinned test packages below, Debian packages (ffmpeg for ffprobe, and any
# other tool a suite drives), and the AWS emulator (scripts/aws-emulator.sh). Idempotent: the venv
# is rebuilt only when PY_PACKAGES changes, and a Debian package is installed only when its command
# is missing.
#
#   REELGATE_TOOLS_DIR   where tools live (default $HOME/.cache/reelgate/tools)
set -euo pipefail

TOOLS_DIR="${REELGATE_TOOLS_DIR:-$HOME/.cache/reelgate/tools}"
VENV="$TOOLS_DIR/python"
# Pinned so a new release cannot change what the tests assert.
PY_PACKAGES=("pytest==9.2.0" "openai==3.57.0" "anthropic==2.10.0" "httpx==0.28.1" "playwright==1.65.0"
  "jsonschema==4.26.0" "schemathesis==4.32.5" "pyjwt==2.15.1" "cryptography==50.0.2"
  "prometheus-client==0.26.0" "opentelemetry-proto==1.45.2" "protobuf==7.36.2")
# The official Node SDKs (openai, @anthropic-ai/sdk) for the Node conformance suites (tests/sdk/node), installed with the
# machine's npm into $TOOLS_DIR/node (6.x: the 7.x line needs Node 22).
NODE_PACKAGES=("openai@6.49.0" "@anthropic-ai/sdk@1.10.0" "axe-core@4.11.0")

mkdir -p "$TOOLS_DIR"

# The venv's stamp holds the package list it was built from; a changed list reinstalls.
STAMP="$VENV/.reelgate-packages"
if [[ ! -x "$VENV/bin/python" ]] || [[ "$(cat "$STAMP" 2>/dev/null)" != "${PY_PACKAGES[*]}" ]]; then
  echo "test-tools: installing the Python test packages into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}"
  printf '%s' "${PY_PACKAGES[*]}" >"$STAMP"
fi

# need_apt COMMAND PACKAGE...: installs the Debian packages unless COMMAND is already on PATH.
# Runs apt one package set at a time (two concurrent apt runs fail half-way).
apt_updated=0
need_apt() {
  local command_name="$1"
  shift
  command -v "$command_name" >/dev/null 2>&1 && return 0
  if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test-tools: $command_name is missing and cannot be installed here (needs root and apt-get)" >&2
    return 1
  fi
  echo "test-tools: installing $* from Debian"
  if [[ $apt_updated -eq 0 ]]; then
    apt-get update -qq >/dev/null
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need_apt ffprobe ffmpeg
# The console's browser tests drive Debian's Chromium through Playwright (Japanese UI: CJK fonts).
need_apt chromium chromium fonts-noto-cjk

# The Node SDK suite needs node and npm (the machine image has them; Debian has them too).
need_apt node nodejs
need_apt npm npm
NODE_DIR="$TOOLS_DIR/node"
NODE_STAMP="$NODE_DIR/.reelgate-packages"
if command -v npm >/dev/null 2>&1 && [[ "$(cat "$NODE_STAMP" 2>/dev/null)" != "${NODE_PACKAGES[*]}" ]]; then
  echo "test-tools: installing the Node test packages into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent "${NODE_PACKAGES[@]}"
  printf '%s' "${NODE_PACKAGES[*]}" >"$NODE_STAMP"
fi

echo "test-tools: python $("$VENV/bin/python" -c 'import openai,pytest;print(f"openai {openai.__version__}, pytest {pytest.__version__}")'), $(ffprobe -version | head -1 | cut -d' ' -f1-3)"
