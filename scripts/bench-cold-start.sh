#!/usr/bin/env bash
# Cold and warm starts of every Lambda bootstrap (docs/cost.md). A benchmark, not a test.
#
#   scripts/bench-cold-start.sh [--no-build] [--profile release|lambda] [bench-cold-start.py options...]
#     e.g. --functions api-models,api-chat-completions --cold-runs 3 --warm 50
#     --aws-delay-ms 4 (the latency AWS's per-call time adds), --plan starter (rate limits on),
#     --fn-env REELGATE_ACCOUNT_CACHE_SECS=0 (a variable for the functions); BENCH_CLI=<path>
#     uses another `reelgate` for the admin commands (docs/hot-path.md)
#
#   --profile  the Cargo profile of the bootstraps (default release; `lambda` is the deployed,
#              size-optimised profile of Cargo.toml). The CLI is always the release build.
#
# Builds the release bootstraps and the release CLI (`reelgate admin --backend aws` creates the
# bench's organization and key), installs boto3 (pinned) into a venv outside the clone
# ($BENCH_CACHE_DIR, default ~/.cache/reelgate/bench), starts the local AWS emulator
# (scripts/aws-emulator.sh) and runs scripts/bench-cold-start.py, which writes
# docs/bench/cold-start.json. Uses CARGO_TARGET_DIR when set (else the shared cache of scripts/cargo-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

BOTO3_VERSION="1.44.5"
BENCH_DIR="${BENCH_CACHE_DIR:-$HOME/.cache/reelgate/bench}"
BUILD=1
PROFILE=release
while [[ "${1:-}" == "--no-build" || "${1:-}" == "--profile" ]]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    --profile) PROFILE="$2"; shift 2 ;;
  esac
done
# The build directory the README's commands share (scripts/cargo-env.sh).
# shellcheck source=scripts/cargo-env.sh
source scripts/cargo-env.sh
if [[ "$BUILD" == 1 ]]; then
  cargo build --profile "$PROFILE" --locked -p reelgate-lambda --bins
  cargo build --release --locked -p reelgate-cli
fi

VENV="$BENCH_DIR/venv-boto3-$BOTO3_VERSION"
if [[ ! -f "$VENV/.installed" ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "boto3==$BOTO3_VERSION"
  touch "$VENV/.installed"
fi

bash scripts/aws-emulator.sh start
eval "$(bash scripts/aws-emulator.sh env)"
export BENCH_LOG_DIR="$BENCH_DIR/logs"
exec "$VENV/bin/python" scripts/bench-cold-start.py --release-dir "$CARGO_TARGET_DIR/$PROFILE" --profile "$PROFILE" "$@"
