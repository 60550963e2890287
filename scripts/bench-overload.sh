#!/usr/bin/env bash
# Overload shedding of the local server (docs/security.md §9). A benchmark, not a test.
#
#   scripts/bench-overload.sh [--no-build] [--profile release|debug] [--server-cpus 1]
#                             [--seconds 5] [--saturation N] [--on-env "VAR=VALUE ..."]
#
# `reelgate serve` (release) is pinned to the CPUs of --server-cpus (taskset), in front of
# chat_bench's fast fake upstream; chat_bench's open-loop generator (pinned to the other CPUs)
# sends plain chat requests. First the saturation rate is found (the most requests a second the
# server completes, ramping the offered rate) unless --saturation gives it; then the server is
# offered 0.5x, 1x, 2x and 4x that rate twice: once as it ships (shedding on) and once with
# shedding off (REELGATE_MAX_IN_FLIGHT=1000000, REELGATE_SHED_LAG_MS=0), which is how every
# request was queued before shedding existed. Per run: sent and admitted rates, shed (503) and
# failed requests, admitted p50/p99, /health p99 and max (asked every 50 ms on new connections)
# and the server's peak RSS. Writes docs/bench/overload.json. --on-env sets variables for the
# shedding server only (to compare REELGATE_SHED_FLOOR or REELGATE_SHED_LAG_MS values).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=1
PROFILE="release"
SERVER_CPUS="1"
SECONDS_PER_RATE="5"
SATURATION=""
ON_ENV=""
OUT="docs/bench/overload.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --profile) PROFILE="$2"; shift ;;
    --server-cpus) SERVER_CPUS="$2"; shift ;;
    --seconds) SECONDS_PER_RATE="$2"; shift ;;
    --saturation) SATURATION="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --on-env) ON_ENV="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=scripts/cargo-env.sh
source scripts/cargo-env.sh
if [[ "$BUILD" == 1 ]]; then
  if [[ "$PROFILE" == release ]]; then
    cargo build --release --locked -p reelgate-cli
    cargo build --release --locked -p reelgate-embedded --example chat_bench --features testing
  else
    # The test build (scripts/test.sh) already holds both; build it the way it does.
    cargo build --workspace --all-features --all-targets
  fi
fi
REELGATE="$CARGO_TARGET_DIR/$PROFILE/reelgate"
BENCH="$CARGO_TARGET_DIR/$PROFILE/examples/chat_bench"

# The generator and the upstream get every CPU the server does not.
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
CLIENT_CPUS="$(cpus_besides "$SERVER_CPUS")"
bench_setup "$CLIENT_CPUS"

load() { # rates
  taskset -c "$CLIENT_CPUS" "$BENCH" --overload "$RG_URL|$KEY|bench-model" --server-pid "$RG_PID" \
    --rates "$1" --seconds "$SECONDS_PER_RATE"
}

if [[ -z "$SATURATION" ]]; then
  start_server ramp "$SERVER_CPUS"
  SATURATION="$(load 500,1000,1500,2000,3000,4000 | tee "$WORK/ramp.jsonl" |
    python3 -c 'import json,sys; print(int(max(json.loads(l)["admitted_rps"] for l in sys.stdin if l.strip())))')"
  stop_server
  echo "saturation: $SATURATION requests/s (the most completed in the ramp)" >&2
fi
RATES="$(python3 -c 'import sys; s = int(sys.argv[1]); print(",".join(str(int(s * f)) for f in (0.5, 1, 2, 4)))' "$SATURATION")"

# shellcheck disable=SC2086 # ON_ENV is a list of VAR=VALUE words
start_server shedding "$SERVER_CPUS" $ON_ENV
load "$RATES" | sed 's/^{/{"shedding": "on", /' >"$WORK/on.jsonl"
stop_server
start_server unbounded "$SERVER_CPUS" REELGATE_MAX_IN_FLIGHT=1000000 REELGATE_SHED_LAG_MS=0
load "$RATES" | sed 's/^{/{"shedding": "off", /' >"$WORK/off.jsonl"
stop_server

mkdir -p "$(dirname "$OUT")"
python3 - "$SATURATION" "$SERVER_CPUS" "$OUT" "$PROFILE" "$WORK/on.jsonl" "$WORK/off.jsonl" <<'PY'
import json, os, sys
saturation, cpus, out, profile = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rows = [json.loads(l) for f in sys.argv[5:] for l in open(f) if l.strip()]
json.dump({"profile": profile, "saturation_rps": saturation, "server_cpus": cpus, "load_average": os.getloadavg(),
           "runs": rows}, open(out, "w"), indent=1)
print(f"{profile} build, server on CPUs {cpus}; saturation {saturation} requests/s")
print("| shedding | offered/s | sent/s | admitted/s | shed | errors | admitted p50 ms | admitted p99 ms | /health p99 ms | /health max ms | /health failed | peak RSS MiB |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['shedding']} | {r['offered_rps']} | {r['sent_rps']:.0f} | {r['admitted_rps']:.0f} | {r['shed']} | "
          f"{r['errors']} | {r['admitted_p50_ms']:.1f} | {r['admitted_p99_ms']:.1f} | {r['health_p99_ms']:.1f} | "
          f"{r['health_max_ms']:.1f} | {r['health_failed']} | {r['peak_rss_mib']} |")
print(f"load average at the end: {os.getloadavg()}")
PY
