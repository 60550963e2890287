#!/usr/bin/env bash
# Two builds of the server, measured in turn (docs/hot-path.md). A benchmark, not a test.
#
#   scripts/bench-alternate.sh BEFORE_DIR AFTER_DIR [--runs 5] [--plan enterprise|bench-limited]
#                              [--rates-per-core 1000,2500] [--seconds 5] [--out FILE]
#
# Each DIR holds a release `reelgate` and its `chat_bench` (copy them from
# $CARGO_TARGET_DIR/release/ and .../release/examples/ after each build). Runs
# scripts/bench-cores.sh on one gateway core for BEFORE, then AFTER, RUNS times, so that drift
# in the machine (other load, thermal state) falls on both alike, and prints one row per run:
# the added p50 / p99 of plain requests and of streamed requests' first byte at each rate.
# Writes every run's rows to FILE (default docs/bench/alternate.json).
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE="$1"
AFTER="$2"
shift 2
RUNS=5
PLAN=enterprise
RATES=1000,2500
SECONDS_PER_RATE=5
OUT=docs/bench/alternate.json
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    --plan) PLAN="$2"; shift ;;
    --rates-per-core) RATES="$2"; shift ;;
    --seconds) SECONDS_PER_RATE="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
for dir in "$BEFORE" "$AFTER"; do
  for bin in reelgate chat_bench; do
    [[ -x "$dir/$bin" ]] || { echo "bench-alternate: $dir/$bin is missing" >&2; exit 2; }
  done
done
RESULTS="$(mktemp -d)"
trap 'rm -rf "$RESULTS"' EXIT
for run in $(seq 1 "$RUNS"); do
  for which in before after; do
    dir="$BEFORE"
    [[ "$which" == after ]] && dir="$AFTER"
    BENCH_SERVER_BIN="$dir/reelgate" BENCH_CLIENT_BIN="$dir/chat_bench" \
      scripts/bench-cores.sh --no-build --cores 1 --rates-per-core "$RATES" \
      --seconds "$SECONDS_PER_RATE" --plan "$PLAN" --out "$RESULTS/$which-$run.json" >/dev/null
    echo "bench-alternate: run $run, $which done" >&2
  done
done
mkdir -p "$(dirname "$OUT")"
python3 - "$RESULTS" "$RUNS" "$PLAN" "$OUT" <<'PY'
import json, os, sys
results, runs, plan, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
table = []
for run in range(1, runs + 1):
    for which in ("before", "after"):
        doc = json.load(open(f"{results}/{which}-{run}.json"))
        table.append({"run": run, "binary": which, "load_average": doc["load_average"], "rows": doc["rows"]})
json.dump({"plan": plan, "runs": table}, open(out, "w"), indent=1)
rates = [r["offered_rps"] for r in table[0]["rows"]]
head = " | ".join(f"{rate}/s plain p50 / p99 | {rate}/s streamed first byte p50 / p99" for rate in rates)
print(f"| binary | {head} | errors | peak RSS MiB |")
print("| --- |" + " --- | --- |" * len(rates) + " ---: | ---: |")
for t in table:
    cells = []
    for r in t["rows"]:
        cells.append(f"{r['plain_added_p50_ms']:.2f} / {r['plain_added_p99_ms']:.2f}")
        cells.append(f"{r.get('streamed_first_byte_added_p50_ms', float('nan')):.2f} / "
                     f"{r.get('streamed_first_byte_added_p99_ms', float('nan')):.2f}")
    errors = sum(r["errors"] + r.get("streamed_errors", 0) for r in t["rows"])
    rss = max(r["peak_rss_mib"] for r in t["rows"])
    print(f"| {t['binary']}, run {t['run']} | " + " | ".join(cells) + f" | {errors} | {rss} |")
for which in ("before", "after"):
    for i, rate in enumerate(rates):
        p99 = sorted(t["rows"][i]["plain_added_p99_ms"] for t in table if t["binary"] == which)
        print(f"{which}: {rate}/s plain added p99 median {p99[len(p99) // 2]:.2f} ms, range {p99[0]:.2f}-{p99[-1]:.2f}")
print(f"plan {plan}; wrote {out}")
PY
