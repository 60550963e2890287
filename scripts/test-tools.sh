#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo, once, into a cache outside the clone:
# a Python venv with pytest and the official openai SDK, ffmpeg (ffprobe) from Debian for
# checking rendered MP4s, and the AWS emulator (scripts/aws-emulator.sh). Idempotent.
#
#   REELGATE_TOOLS_DIR   where tools live (default $HOME/.cache/reelgate/tools)
set -euo pipefail

TOOLS_DIR="${REELGATE_TOOLS_DIR:-$HOME/.cache/reelgate/tools}"
VENV="$TOOLS_DIR/python"
# Pinned so a new release cannot change what the tests assert.
PY_PACKAGES=("pytest==9.2.0" "openai==3.52.0" "httpx==0.28.1")

mkdir -p "$TOOLS_DIR"

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import openai, pytest, httpx" 2>/dev/null; then
  echo "test-tools: creating the Python venv in $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}"
fi

if ! command -v ffprobe >/dev/null 2>&1; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null 2>&1; then
    echo "test-tools: installing ffmpeg (ffprobe) from Debian"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg >/dev/null
  else
    echo "test-tools: ffprobe is missing and cannot be installed here (needs root and apt-get)" >&2
    exit 1
  fi
fi

echo "test-tools: python $("$VENV/bin/python" -c 'import openai,pytest;print(f"openai {openai.__version__}, pytest {pytest.__version__}")'), $(ffprobe -version | head -1 | cut -d' ' -f1-3)"
