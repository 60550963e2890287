#!/usr/bin/env bash
# A local AWS emulator (ministack, from PyPI) for the reelgate-aws adapter tests and local
# experiments. No Docker needed: ministack is a Python process.
#
#   scripts/aws-emulator.sh start   install (first time only) and start it; no-op when running
#   scripts/aws-emulator.sh stop    stop it
#   scripts/aws-emulator.sh env     print the exports that point the AWS SDK at it
#   eval "$(scripts/aws-emulator.sh env)"
#
# Settings (environment):
#   REELGATE_TOOLS_DIR      where the venv, its temp dir and the log live
#                           (default: $HOME/.cache/reelgate/tools)
#   REELGATE_EMULATOR_PORT  port on 127.0.0.1 (default: 4566)
#   REELGATE_EMULATOR_WAIT  seconds to wait for it to become healthy (default: 60)
set -euo pipefail

MINISTACK_VERSION="1.5.33"
TOOLS_DIR="${REELGATE_TOOLS_DIR:-$HOME/.cache/reelgate/tools}"
PORT="${REELGATE_EMULATOR_PORT:-4566}"
WAIT_SECS="${REELGATE_EMULATOR_WAIT:-60}"
VENV="$TOOLS_DIR/ministack-$MINISTACK_VERSION"
EMU_TMP="$TOOLS_DIR/ministack-tmp/$PORT"
LOG="$TOOLS_DIR/ministack-$PORT.log"
# ministack writes its own log into its TMPDIR.
SERVER_LOG="$EMU_TMP/ministack-$PORT.log"
ENDPOINT="http://127.0.0.1:$PORT"
HEALTH="$ENDPOINT/_ministack/health"

die() {
  echo "aws-emulator: $*" >&2
  exit 1
}

show_logs() {
  local f
  for f in "$LOG" "$SERVER_LOG"; do
    if [[ -s "$f" ]]; then
      echo "--- last lines of $f" >&2
      tail -n 20 "$f" >&2 || true
    fi
  done
}

healthy() {
  python3 - "$HEALTH" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

install() {
  # The marker is written last, so an interrupted install is redone rather than trusted.
  if [[ -f "$VENV/.installed" && -x "$VENV/bin/ministack" ]]; then
    return
  fi
  command -v python3 >/dev/null || die "python3 is required to install ministack"
  mkdir -p "$TOOLS_DIR"
  echo "aws-emulator: installing ministack $MINISTACK_VERSION into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV" || die "could not create a venv in $VENV (is python3-venv installed?)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ministack==$MINISTACK_VERSION" || { rm -rf "$VENV"; die "pip could not install ministack==$MINISTACK_VERSION"; }
  touch "$VENV/.installed"
}

run_ministack() {
  mkdir -p "$EMU_TMP"
  TMPDIR="$EMU_TMP" BIND_HOST=127.0.0.1 GATEWAY_PORT="$PORT" "$VENV/bin/ministack" "$@"
}

start() {
  if healthy; then
    echo "aws-emulator: already running at $ENDPOINT" >&2
    return
  fi
  install
  # ministack keeps every Lambda code zip it was given under its TMPDIR and never deletes
  # them; each test run deploys fresh zips, so a developer machine would grow by gigabytes
  # a day. Nothing is running on this port, so none of them is in use.
  rm -rf "$EMU_TMP/ministack-provided-code-$PORT"
  echo "aws-emulator: starting ministack on $ENDPOINT (log: $LOG)" >&2
  run_ministack -d >"$LOG" 2>&1 || {
    show_logs
    die "ministack failed to start"
  }
  local deadline=$((SECONDS + WAIT_SECS))
  until healthy; do
    if ((SECONDS >= deadline)); then
      show_logs
      die "ministack did not answer $HEALTH within ${WAIT_SECS}s (is port $PORT taken?)"
    fi
    sleep 0.5
  done
  echo "aws-emulator: ready at $ENDPOINT" >&2
}

stop() {
  if [[ ! -x "$VENV/bin/ministack" ]]; then
    echo "aws-emulator: not installed, nothing to stop" >&2
    return
  fi
  run_ministack --stop >>"$LOG" 2>&1 || true
  local deadline=$((SECONDS + 15))
  while healthy; do
    if ((SECONDS >= deadline)); then
      die "ministack on port $PORT is still answering after --stop"
    fi
    sleep 0.5
  done
  echo "aws-emulator: stopped" >&2
}

print_env() {
  cat <<EOF
export AWS_ENDPOINT_URL=$ENDPOINT
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=us-east-1
EOF
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) die "usage: $0 start|stop|env" ;;
esac
