#!/usr/bin/env bash
# Throughput per gateway core (docs/performance.md). A benchmark, not a test.
#
#   scripts/bench-cores.sh [--no-build] [--cores 1,2,4] [--rates-per-core 500,1000,2500]
#                          [--seconds 5] [--perf] [--plan enterprise|bench-limited]
#                          [--out docs/bench/cores.json]
#
# For each gateway core count N that leaves at least one CPU for the rest: `reelgate serve`
# (release, default configuration, SQLite store, a ledger entry written before every answer)
# pinned with taskset to CPUs 0..N-1, chat_bench's fast fake upstream and its open-loop load
# generator pinned to the other CPUs. At each rate (per-core rate x N) the same load goes to the
# upstream directly and through reelgate, plain then streamed. One row per (N, rate): the rate
# reelgate completed, its errors, the added latency (reelgate - direct) p50/p99 of plain
# requests and of streamed requests' first byte, and the server's peak RSS. On a 2-core machine
# only N = 1 fits. --perf samples the server (`perf record -F 99`, flat) through each N's run and prints
# the functions with the most self time. --plan bench-limited gives the tenant a plan with rate
# limits far above the load, so every request also takes and settles its windows (the default,
# enterprise, has none). Writes docs/bench/cores.json. BENCH_SERVER_BIN and BENCH_CLIENT_BIN
# name other binaries to measure (a previous build's, for alternating runs:
# scripts/bench-alternate.sh). They are not REELGATE_* variables because the server refuses any
# variable of its own prefix that it does not know.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=1
CORES="1,2,4"
RATES_PER_CORE="500,1000,2500"
SECONDS_PER_RATE="5"
PERF=0
OUT="docs/bench/cores.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --cores) CORES="$2"; shift ;;
    --rates-per-core) RATES_PER_CORE="$2"; shift ;;
    --seconds) SECONDS_PER_RATE="$2"; shift ;;
    --perf) PERF=1 ;;
    --plan) export BENCH_PLAN="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=scripts/cargo-env.sh
source scripts/cargo-env.sh
if [[ "$BUILD" == 1 ]]; then
  cargo build --release --locked -p reelgate-cli
  cargo build --release --locked -p reelgate-embedded --example chat_bench --features testing
fi
REELGATE="${BENCH_SERVER_BIN:-$CARGO_TARGET_DIR/release/reelgate}"
BENCH="${BENCH_CLIENT_BIN:-$CARGO_TARGET_DIR/release/examples/chat_bench}"
if [[ "$PERF" == 1 ]] && ! command -v perf >/dev/null; then
  echo "bench-cores: --perf needs perf (linux-perf)" >&2
  exit 2
fi

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
CPUS="$(nproc)"
FIRST_CLIENTS="$(cpus_besides 0)"
bench_setup "$FIRST_CLIENTS"

: >"$WORK/rows.jsonl"
for n in ${CORES//,/ }; do
  if (( n >= CPUS )); then
    echo "bench-cores: $n gateway cores need more than this machine's $CPUS CPUs; skipped" >&2
    continue
  fi
  server_cpus="0-$((n - 1))"
  client_cpus="$(cpus_besides "$server_cpus")"
  rates="$(python3 -c 'import sys; n = int(sys.argv[1]); print(",".join(str(int(r) * n) for r in sys.argv[2].split(",")))' "$n" "$RATES_PER_CORE")"
  start_server "cores-$n" "$server_cpus"
  perf_pid=""
  if [[ "$PERF" == 1 ]]; then
    # Flat sampling (no call graphs): in a VM without a PMU, perf with -g takes both cores.
    perf record -F 99 -p "$RG_PID" -o "$WORK/perf-$n.data" >/dev/null 2>"$WORK/perf-$n.log" &
    perf_pid=$!
  fi
  taskset -c "$client_cpus" "$BENCH" --upstream "$UPSTREAM" --gateways "reelgate|$RG_URL|$KEY|bench-model" \
    --rates "$rates" --seconds "$SECONDS_PER_RATE" >"$WORK/cores-$n.jsonl"
  if [[ -n "$perf_pid" ]]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" 2>/dev/null || true
  fi
  peak_kib="$(awk '/VmHWM/ {print $2}' "/proc/$RG_PID/status")"
  stop_server
  python3 - "$n" "$peak_kib" "$WORK/cores-$n.jsonl" >>"$WORK/rows.jsonl" <<'PY'
import json, sys
n, peak_kib, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
runs = [json.loads(l) for l in open(path) if l.strip()]
by = {(r["mode"], r["rate"], r["target"]): r for r in runs}
for rate in sorted({r["rate"] for r in runs}):
    plain_d, plain_g = by[("plain", rate, "direct")], by[("plain", rate, "reelgate")]
    row = {"gateway_cores": n, "offered_rps": rate, "achieved_rps": round(plain_g["achieved_rps"], 1),
           "errors": plain_g["errors"],
           "plain_added_p50_ms": round(plain_g["p50_ms"] - plain_d["p50_ms"], 3),
           "plain_added_p99_ms": round(plain_g["p99_ms"] - plain_d["p99_ms"], 3),
           "peak_rss_mib": peak_kib // 1024}
    if ("streamed", rate, "reelgate") in by:
        s_d, s_g = by[("streamed", rate, "direct")], by[("streamed", rate, "reelgate")]
        row.update({"streamed_first_byte_added_p50_ms": round(s_g["ttfb_p50_ms"] - s_d["ttfb_p50_ms"], 3),
                    "streamed_first_byte_added_p99_ms": round(s_g["ttfb_p99_ms"] - s_d["ttfb_p99_ms"], 3),
                    "streamed_errors": s_g["errors"]})
    print(json.dumps(row))
PY
  if [[ "$PERF" == 1 ]]; then
    echo "== $n gateway core(s): the server's functions by self time (perf, all rates)"
    perf report -i "$WORK/perf-$n.data" --stdio --no-children --sort symbol --percent-limit 1.5 2>/dev/null |
      grep -E '^ +[0-9.]+%' | head -25 | tee "$WORK/perf-$n.top"
  fi
done

mkdir -p "$(dirname "$OUT")"
python3 - "$OUT" "$SECONDS_PER_RATE" "$WORK/rows.jsonl" "$WORK" <<'PY'
import glob, json, os, sys
out, seconds, rows_path, work = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
profiles = {os.path.basename(p)[5:-4]: open(p).read().splitlines() for p in glob.glob(f"{work}/perf-*.top")}
json.dump({"cpus": os.cpu_count(), "seconds_per_rate": seconds, "load_average": os.getloadavg(),
           "rows": rows, "profiles": profiles}, open(out, "w"), indent=1)
print("| gateway cores | offered/s | achieved/s | errors | plain added p50 / p99 ms | streamed first byte added p50 / p99 ms | peak RSS MiB |")
print("| ---: | ---: | ---: | ---: | --- | --- | ---: |")
for r in rows:
    streamed = (f"{r['streamed_first_byte_added_p50_ms']:.2f} / {r['streamed_first_byte_added_p99_ms']:.2f}"
                if "streamed_first_byte_added_p50_ms" in r else "—")
    print(f"| {r['gateway_cores']} | {r['offered_rps']} | {r['achieved_rps']:.0f} | {r['errors']} | "
          f"{r['plain_added_p50_ms']:.2f} / {r['plain_added_p99_ms']:.2f} | {streamed} | {r['peak_rss_mib']} |")
print(f"load average at the end: {os.getloadavg()}; wrote {out}")
PY
