#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. installs the test tools once (Python venv with pytest + the openai and anthropic SDKs, ffmpeg, the AWS
#      emulator) into a cache outside the clone;
#   2. starts the AWS emulator on 127.0.0.1 so the AWS adapters' contract suite runs;
#   3. builds the workspace once (dev profile, all features) and runs every Rust test with
#      nextest — the adapter contract suites against both the embedded adapters and the emulator;
#   4. runs the Python suites (tests/e2e, ..., tests/sdk, tests/fuzz) against the real `reelgate`
#      binary of that build; every answer they receive is checked against docs/openapi.json;
#   5. prints one closing line: "tests: N passed, N failed".
#
# Environment: CARGO_TARGET_DIR (default: a cache outside the clone, shared with scripts/reelgate
# so running the service and testing it compile once; see scripts/cargo-env.sh),
# REELGATE_TOOLS_DIR, REELGATE_EMULATOR_PORT. Extra arguments go to nextest (e.g. a test-name
# filter).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/cargo-env.sh
source "$ROOT/scripts/cargo-env.sh"

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "test tools"
bash scripts/test-tools.sh || exit 1
PYTHON="$REELGATE_TOOLS_DIR/python/bin/python"
export REELGATE_PYTHON="$PYTHON"

# --- infrastructure checks (issue 7, owned with functions/reelgate-lambda): cfn-lint on
# infra/template.yaml, asl-validator on statemachine/*.asl.json and `sam validate --lint`, offline;
# counted as one test.
# The Rust consistency checks (template <-> binaries <-> API_ROUTES <-> ASL placeholders) and the
# AWS path on the emulator run with the Rust tests below.
step "infrastructure checks (cfn-lint, SAM transform, asl-validator, sam validate --lint)"
infra_status=0
bash scripts/infra-check.sh || infra_status=1
# --- end of infrastructure checks

step "AWS emulator"
emulator_log="$(mktemp)"
bash scripts/aws-emulator.sh start 2>&1 | tee "$emulator_log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || exit 1
eval "$(bash scripts/aws-emulator.sh env)"
# Stop it afterwards only if this run started it (a developer's own emulator keeps running).
if ! grep -q "already running" "$emulator_log"; then
  trap 'bash scripts/aws-emulator.sh stop >/dev/null 2>&1 || true' EXIT
fi

# Every server the suite starts sheds on its in-flight bound only: on a machine running many
# tests at once, runtime lag measures the machine, not the server (docs/security.md §9). The
# overload tests set their own bounds.
export REELGATE_SHED_LAG_MS=0

step "build (dev profile, all features)"
cargo build --workspace --all-features --all-targets || exit 1

rust_passed=0 rust_failed=0 py_passed=0 py_failed=0
step "Rust tests"
RUST_LOG_FILE="$(mktemp)"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --all-features --no-fail-fast --failure-output final "$@" 2>&1 | tee "$RUST_LOG_FILE"
  rust_status=${PIPESTATUS[0]}
  summary="$(grep -E '^ +Summary ' "$RUST_LOG_FILE" | tail -1)"
  rust_passed="$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$summary")"
  rust_failed="$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$summary")"
else
  cargo test --workspace --all-features --no-fail-fast "$@" 2>&1 | tee "$RUST_LOG_FILE"
  rust_status=${PIPESTATUS[0]}
  rust_passed="$(grep -E '^test result:' "$RUST_LOG_FILE" | sed -nE 's/.* ([0-9]+) passed.*/\1/p' | awk '{s+=$1} END {print s+0}')"
  rust_failed="$(grep -E '^test result:' "$RUST_LOG_FILE" | sed -nE 's/.* ([0-9]+) failed.*/\1/p' | awk '{s+=$1} END {print s+0}')"
fi
rust_passed=${rust_passed:-0}
rust_failed=${rust_failed:-0}
if [[ $rust_status -ne 0 && $rust_failed -eq 0 ]]; then rust_failed=1; fi

# Each Python suite below runs against the real `reelgate` binary of that build and adds its
# pytest counts to the totals; a suite that fails without a count still counts as one failure.
REELGATE_BIN="$CARGO_TARGET_DIR/debug/reelgate"
export REELGATE_BIN
py_passed=0 py_failed=0 py_status=0
run_python_suite() { # title, directory
  step "$1"
  local log
  log="$(mktemp)"
  "$PYTHON" -m pytest -p no:cacheprovider -q "$2" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local line passed failed
  line="$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1)"
  passed="$(sed -nE 's/(^|.*[^0-9])([0-9]+) passed.*/\2/p' <<<"$line")"
  failed="$(sed -nE 's/(^|.*[^0-9])([0-9]+) failed.*/\2/p' <<<"$line")"
  passed=${passed:-0}
  failed=${failed:-0}
  if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi
  py_passed=$((py_passed + passed))
  py_failed=$((py_failed + failed))
  [[ $status -eq 0 ]] || py_status=1
}

run_python_suite "end-to-end tests (real binary, openai SDK, ffprobe)" tests/e2e
run_python_suite "front door origin check (real binary, openai SDK)" tests/frontdoor
run_python_suite "security: jobs, retries and crashes (real binary)" tests/security_jobs
run_python_suite "engines: capabilities, the conform stage, openai_videos and the hosted providers' fakes (real binary, ffmpeg)" tests/engines
run_python_suite "console (headless Chromium)" tests/console
run_python_suite "webhooks (real binary, a signature-checking receiver)" tests/webhooks
run_python_suite "observability: usage report, metrics, logs, traces (real binary, priced fake upstream, fake OTLP collector)" tests/observability
run_python_suite "security (attacks on the real binary)" tests/security
run_python_suite "SDK conformance (official openai Python and Node SDKs, anthropic Python SDK)" tests/sdk
run_python_suite "fuzzing (Schemathesis, bounded run) and what it found" tests/fuzz

# infra_status: the "infrastructure checks" step above (one test).
passed=$((rust_passed + py_passed + 1 - infra_status))
failed=$((rust_failed + py_failed + infra_status))
echo
echo "rust: ${rust_passed} passed, ${rust_failed} failed; python suites: ${py_passed} passed, ${py_failed} failed"
echo "tests: ${passed} passed, ${failed} failed"
[[ $rust_status -eq 0 && $py_status -eq 0 && $infra_status -eq 0 ]]
