#!/usr/bin/env bash
# The deployed artifacts, measured: runs the whole-stack `sam build` as a deployer types it (from
# the clone's root, samconfig.toml's defaults: every function through
# functions/reelgate-lambda/Makefile, the `lambda` profile, the template's architecture), times
# it, then prints each function's .aws-sam/build/<LogicalId>/bootstrap and its zip against the
# targets (HTTP functions: bootstrap under 12 MB, zip under 5 MB, no video codec) with
# scripts/lambda-artifacts.sh's measurement. Run before each release; not part of CI (a cold
# build is tens of minutes on two cores). Needs no AWS account.
#
#   scripts/sam-build-sizes.sh [--no-build] [--build-dir DIR] [--out FILE]
#
#   --no-build   measure what the last `sam build` left in the build directory
#   --build-dir  sam build's --build-dir (default .aws-sam/build)
#   --out       the report (default docs/bench/artifacts-sam-build-arm64.json)
# Exit status 1 when a target is missed or a function has no bootstrap.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD=1
BUILD_DIR=.aws-sam/build
OUT="docs/bench/artifacts-sam-build-arm64.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

eval "$(bash scripts/deploy-tools.sh env)"
export SAM_CLI_TELEMETRY="${SAM_CLI_TELEMETRY:-0}"
if [[ "$BUILD" == 1 ]]; then
  start=$SECONDS
  sam build --build-dir "$BUILD_DIR"
  export BUILD_SECONDS=$((SECONDS - start))
  echo "sam build: $BUILD_SECONDS s (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
fi

# Each logical id's bootstrap under its binary's name (the streaming twins run their HTTP
# function's binary: the two copies must be the same file).
BY_BINARY="$(mktemp -d)"
trap 'rm -rf "$BY_BINARY"' EXIT
status=0
while read -r id binary; do
  bootstrap="$BUILD_DIR/$id/bootstrap"
  if [[ ! -f "$bootstrap" ]]; then
    echo "missing: $bootstrap ($binary)" >&2
    status=1
  elif [[ -e "$BY_BINARY/$binary" ]]; then
    cmp -s "$bootstrap" "$BY_BINARY/$binary" || { echo "$id: not the same $binary as the other functions built from it" >&2; status=1; }
  else
    cp "$bootstrap" "$BY_BINARY/$binary"
  fi
done < <(sed -nE 's/^BINARY_([A-Za-z0-9]+) := (.+)$/\1 \2/p' functions/reelgate-lambda/Makefile)

arch="$(sed -n '/^Globals:/,/^Resources:/{/Architectures:/{n;s/^ *- *//p;q}}' infra/template.yaml)"
ARTIFACTS_SOURCE="sam build (.aws-sam/build/<LogicalId>/bootstrap)" \
  bash scripts/lambda-artifacts.sh --from "$BY_BINARY" --arch "$arch" --profile lambda --out "$OUT" || status=1
exit $status
