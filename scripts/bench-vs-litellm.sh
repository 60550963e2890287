#!/usr/bin/env bash
# reelgate and LiteLLM side by side on this machine (docs/performance.md). A benchmark.
#
#   scripts/bench-vs-litellm.sh [--no-build] [--rates 50,200,500,1000,2000] [--seconds 5]
#
# One fast fake upstream (chat_bench --serve-upstream: a small completion, or eight chunks +
# usage + [DONE] when streamed, answered at once), then `reelgate serve` (release, default
# configuration: tracing and metrics on, no exporter, the local SQLite store with billing) and
# LiteLLM's proxy (pinned, from PyPI, into a venv outside the clone: $LITELLM_CACHE_DIR,
# default ~/.cache/reelgate/litellm; master key, no database, its default single worker: with
# `--num_workers 2` its uvicorn worker processes died at start on the 2-core machine this was
# written on, so it uses one core where reelgate's runtime uses all of them), both in front
# of it. chat_bench's open-loop load generator sends the same request mix to the upstream
# directly and through each gateway, at each rate, plain and streamed. Prints, per mode and rate:
# added latency p50/p99 (gateway − direct; total time plain, time to first byte streamed), the
# achieved throughput, errors, each gateway's peak RSS (VmHWM, summed over LiteLLM's worker
# processes) and the reelgate/LiteLLM ratios. Writes docs/bench/vs-litellm.json.
#
# Load generator, upstream and both gateways share the machine's cores; the load average is
# printed with the results. Uses CARGO_TARGET_DIR when set (else the shared cache of scripts/cargo-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

LITELLM_VERSION="1.100.5"
LITELLM_DIR="${LITELLM_CACHE_DIR:-$HOME/.cache/reelgate/litellm}"
RATES="50,200,500,1000,2000"
SECONDS_PER_RATE="5"
BUILD=1
OUT="docs/bench/vs-litellm.json"
DOC="docs/performance.md"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --rates) RATES="$2"; shift ;;
    --seconds) SECONDS_PER_RATE="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --doc) DOC="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# The build directory the README's commands share (scripts/cargo-env.sh).
# shellcheck source=scripts/cargo-env.sh
source scripts/cargo-env.sh
if [[ "$BUILD" == 1 ]]; then
  cargo build --release --locked -p reelgate-cli
  cargo build --release --locked -p reelgate-embedded --example chat_bench --features testing
fi
REELGATE="$CARGO_TARGET_DIR/release/reelgate"
BENCH="$CARGO_TARGET_DIR/release/examples/chat_bench"

VENV="$LITELLM_DIR/venv-$LITELLM_VERSION"
if [[ ! -f "$VENV/.installed" ]]; then
  echo "bench-vs-litellm: installing litellm[proxy]==$LITELLM_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$LITELLM_VERSION"
  touch "$VENV/.installed"
fi

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # url
  local i
  for i in $(seq 1 120); do
    if python3 - "$1" <<'PY' 2>/dev/null; then return 0; fi
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except urllib.error.HTTPError:
    pass
PY
    sleep 0.5
  done
  echo "bench-vs-litellm: $1 did not answer" >&2
  return 1
}

UP_PORT="$(free_port)"
"$BENCH" --serve-upstream "127.0.0.1:$UP_PORT" 2>"$WORK/upstream.log" &
PIDS+=($!)
UPSTREAM="http://127.0.0.1:$UP_PORT"

# reelgate: the default catalog plus the fake upstream and one chat model on it.
RG_PORT="$(free_port)"
DATA="$WORK/reelgate-data"
mkdir -p "$DATA"
{
  cat functions/reelgate/src/domain/catalog/catalog.default.toml
  cat <<EOF

[[upstreams]]
id = "fast"
kind = "openai"
base_url = "$UPSTREAM"

[[chat_models]]
id = "bench-model"
upstream = "fast"
upstream_model = "fast-model"
capabilities = ["text", "tools"]
reasoning_efforts = []
input_per_million = "0.15"
output_per_million = "0.60"
EOF
} >"$WORK/catalog.toml"
export REELGATE_CATALOG="$WORK/catalog.toml"
ORG="$("$REELGATE" admin --data-dir "$DATA" org create --name bench --plan enterprise --credits 1000000)"
ORG_ID="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$ORG")"
USER_JSON="$("$REELGATE" admin --data-dir "$DATA" user create --org "$ORG_ID" --email bench@example.com)"
USER_ID="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$USER_JSON")"
KEY_JSON="$("$REELGATE" admin --data-dir "$DATA" key create --user "$USER_ID")"
RG_KEY="$(python3 -c 'import json,sys; d = json.loads(sys.argv[1]); print(d.get("key") or d.get("secret"))' "$KEY_JSON")"
"$REELGATE" serve --addr "127.0.0.1:$RG_PORT" --data-dir "$DATA" 2>"$WORK/reelgate.log" &
RG_PID=$!
PIDS+=("$RG_PID")
unset REELGATE_CATALOG

# LiteLLM: the same upstream as an OpenAI-compatible model, a master key, no database.
LL_PORT="$(free_port)"
cat >"$WORK/litellm.yaml" <<EOF
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/fast-model
      api_base: $UPSTREAM/v1
      api_key: fake-upstream-key
general_settings:
  master_key: sk-bench-litellm
EOF
# The packaged model price map (offline: no fetch from GitHub at start).
LITELLM_LOCAL_MODEL_COST_MAP=True "$VENV/bin/litellm" --config "$WORK/litellm.yaml" \
  --host 127.0.0.1 --port "$LL_PORT" >"$WORK/litellm.log" 2>&1 &
LL_PID=$!
PIDS+=("$LL_PID")

wait_http "http://127.0.0.1:$RG_PORT/health" || { tail -20 "$WORK/reelgate.log"; exit 1; }
wait_http "http://127.0.0.1:$LL_PORT/health/liveliness" || { tail -40 "$WORK/litellm.log"; exit 1; }

"$BENCH" --upstream "$UPSTREAM" --rates "$RATES" --seconds "$SECONDS_PER_RATE" \
  --gateways "reelgate|http://127.0.0.1:$RG_PORT|$RG_KEY|bench-model;litellm|http://127.0.0.1:$LL_PORT|sk-bench-litellm|bench-model" \
  >"$WORK/results.jsonl"

python3 - "$WORK/results.jsonl" "$RG_PID" "$LL_PID" "$OUT" "$LITELLM_VERSION" "$DOC" "$RATES" "$SECONDS_PER_RATE" <<'PY'
import json, os, sys, time
from pathlib import Path

rows = [json.loads(l) for l in Path(sys.argv[1]).read_text().splitlines() if l.strip()]
rg_pid, ll_pid, out, ll_version = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
doc, rates, seconds = sys.argv[6], sys.argv[7], sys.argv[8]

def tree(pid):
    """pid and every descendant (LiteLLM's uvicorn workers)."""
    kids = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(kids.get(p, []))
    return seen

def hwm_mb(pid):
    total = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024

rss = {"reelgate": hwm_mb(rg_pid), "litellm": hwm_mb(ll_pid)}
by = {(r["mode"], r["rate"], r["target"]): r for r in rows}
table = []
print(f"\nadded latency over a direct call (ms; plain: total time, streamed: time to first byte)")
print(f"{'mode':8} {'rate':>5} | {'rg +p50':>8} {'rg +p99':>8} {'rg rps':>7} {'rg err':>6} | "
      f"{'ll +p50':>8} {'ll +p99':>8} {'ll rps':>7} {'ll err':>6} | {'p50 x':>6} {'p99 x':>6} {'rps x':>6}")
for (mode, rate, target), d in sorted(by.items(), key=lambda kv: (kv[0][0] != "plain", kv[0][1])):
    if target != "direct":
        continue
    key = "p%s_ms" if mode == "plain" else "ttfb_p%s_ms"
    line = {"mode": mode, "rate": rate}
    for g in ("reelgate", "litellm"):
        r = by.get((mode, rate, g))
        if not r:
            continue
        line[g] = {"added_p50_ms": r[key % 50] - d[key % 50], "added_p99_ms": r[key % 99] - d[key % 99],
                   "achieved_rps": r["achieved_rps"], "errors": r["errors"], "completed": r["completed"],
                   "p50_ms": r[key % 50], "p99_ms": r[key % 99]}
    line["direct"] = {"p50_ms": d[key % 50], "p99_ms": d[key % 99], "achieved_rps": d["achieved_rps"],
                      "errors": d["errors"]}
    rg, ll = line.get("reelgate"), line.get("litellm")
    def ratio(a, b):
        return a / b if b else float("nan")
    if rg and ll:
        line["ratio_litellm_over_reelgate"] = {
            "added_p50": ratio(ll["added_p50_ms"], rg["added_p50_ms"]),
            "added_p99": ratio(ll["added_p99_ms"], rg["added_p99_ms"]),
            "throughput_reelgate_over_litellm": ratio(rg["achieved_rps"], ll["achieved_rps"]),
        }
        x = line["ratio_litellm_over_reelgate"]
        print(f"{mode:8} {rate:5} | {rg['added_p50_ms']:8.2f} {rg['added_p99_ms']:8.2f} {rg['achieved_rps']:7.0f} "
              f"{rg['errors']:6} | {ll['added_p50_ms']:8.2f} {ll['added_p99_ms']:8.2f} {ll['achieved_rps']:7.0f} "
              f"{ll['errors']:6} | {x['added_p50']:6.1f} {x['added_p99']:6.1f} {x['throughput_reelgate_over_litellm']:6.2f}")
    table.append(line)
load = os.getloadavg()
print(f"peak RSS: reelgate {rss['reelgate']:.1f} MiB, LiteLLM {rss['litellm']:.1f} MiB (all workers) "
      f"-> LiteLLM/reelgate {rss['litellm'] / max(rss['reelgate'], 0.001):.1f}x")
print("p50 x / p99 x = LiteLLM's added latency / reelgate's; rps x = reelgate's throughput / LiteLLM's")
print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs "
      "(load generator, upstream and both gateways share them)")
report = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
          "loadavg_1_5_15": [round(x, 2) for x in load], "litellm_version": ll_version,
          "peak_rss_mib": rss, "rows": table, "raw": rows}
Path(out).parent.mkdir(parents=True, exist_ok=True)
Path(out).write_text(json.dumps(report, indent=1) + "\n")
print(f"wrote {out}")

md = []
md.append("# Performance: reelgate and LiteLLM side by side")
md.append("")
md.append("Generated by `scripts/bench-vs-litellm.sh` (edit the script, not this file); the raw figures are "
          "in `docs/bench/vs-litellm.json`.")
md.append("")
md.append(f"Measured {report['measured_at']} on {os.cpu_count()} CPUs (load average at the end "
          f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}). One fast fake upstream (`chat_bench --serve-upstream`), `reelgate serve` "
          "(release build, default configuration: tracing and metrics on, no exporter, SQLite store, "
          f"authentication, billing with a ledger write per request) and LiteLLM {ll_version} "
          "(`litellm[proxy]` from PyPI, master key, no database, its default single worker) in front "
          "of it, and chat_bench's open-loop load generator on the same machine. At each rate, "
          f"{seconds} s of requests go to the upstream directly, then through reelgate, then through "
          "LiteLLM, each run starting once the machine's CPUs are less than a quarter busy again (a "
          "gateway that fell behind goes on working on requests whose clients gave up). Added latency = the gateway's percentile minus the direct call's: total time for plain "
          "requests, time to the first byte of the body for streamed ones.")
md.append("")
md.append("| mode | rate/s | reelgate +p50 ms | reelgate +p99 ms | reelgate req/s | reelgate errors "
          "| LiteLLM +p50 ms | LiteLLM +p99 ms | LiteLLM req/s | LiteLLM errors "
          "| LiteLLM/reelgate added p50 | added p99 | reelgate/LiteLLM throughput |")
md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for line in table:
    rg, ll, x = line.get("reelgate"), line.get("litellm"), line.get("ratio_litellm_over_reelgate")
    if not (rg and ll and x):
        continue
    md.append(f"| {line['mode']} | {line['rate']} | {rg['added_p50_ms']:.2f} | {rg['added_p99_ms']:.2f} | "
              f"{rg['achieved_rps']:.0f} | {rg['errors']} | {ll['added_p50_ms']:.2f} | {ll['added_p99_ms']:.2f} | "
              f"{ll['achieved_rps']:.0f} | {ll['errors']} | {x['added_p50']:.1f}× | {x['added_p99']:.1f}× | "
              f"{x['throughput_reelgate_over_litellm']:.2f}× |")
md.append("")
md.append(f"Peak RSS over the whole run: reelgate {rss['reelgate']:.1f} MiB, LiteLLM {rss['litellm']:.1f} MiB.")
md.append("")
md.append("Reading the table: a negative added latency means the gateway's percentile came out below the "
          "direct call's in that run (noise of a shared machine at low rates). An achieved rate below the "
          "offered one means the gateway fell behind the open-loop schedule; requests then queue and the "
          "tail grows. Errors include client timeouts (30 s). LiteLLM ran one worker process (its default; "
          "with `--num_workers 2` its workers died at start on this machine), reelgate's runtime uses every "
          "core, so the throughput ratio compares the two as each ships by default.")
md.append("")
md.append("Reproduce: `scripts/bench-vs-litellm.sh "
          f"--rates {rates} --seconds {seconds}` (builds `reelgate` and `chat_bench` in release, installs "
          "LiteLLM into `~/.cache/reelgate/litellm`).")
Path(doc).write_text("\n".join(md) + "\n")
print(f"wrote {doc}")
PY
