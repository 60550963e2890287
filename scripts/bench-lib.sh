# Shared by the local-server benchmarks (scripts/bench-overload.sh, scripts/bench-cores.sh):
# `reelgate serve` pinned to some CPUs, chat_bench's fast fake upstream and its load generator
# on the others, and a funded tenant. Source it after setting REELGATE and BENCH (the binaries).
# It sets WORK (a temporary directory removed on exit) and PIDS (killed on exit).

WORK="$(mktemp -d)"
PIDS=()
bench_cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap bench_cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() {
  local i
  for i in $(seq 1 120); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "bench: $1 did not answer" >&2
  return 1
}

# cpus_besides SERVER_CPUS: every CPU of this machine the server's list (e.g. 0 or 0-1,4) does
# not name, comma-separated; all of them when it names every one.
cpus_besides() {
  python3 -c '
import os, sys
server = set()
for part in sys.argv[1].split(","):
    a, _, b = part.partition("-")
    server.update(range(int(a), int(b or a) + 1))
every = sorted(os.sched_getaffinity(0))
rest = [c for c in every if c not in server]
print(",".join(map(str, rest or every)))' "$1"
}

# bench_setup CLIENT_CPUS: starts the fast upstream on CLIENT_CPUS, writes a catalog with its
# model `bench-model` (exported as REELGATE_CATALOG) and creates a funded organization whose
# key is KEY, in the data directory DATA. The organization's plan is BENCH_PLAN: `enterprise`
# (the default: no rate limits, so a request writes no windows) or `bench-limited`, a plan whose
# limits are far above any rate here, so every request takes and settles its key's and its
# organization's windows without ever being refused.
bench_setup() {
  local up_port
  up_port="$(free_port)"
  taskset -c "$1" "$BENCH" --serve-upstream "127.0.0.1:$up_port" 2>"$WORK/upstream.log" &
  PIDS+=($!)
  UPSTREAM="http://127.0.0.1:$up_port"
  DATA="$WORK/data"
  mkdir -p "$DATA"
  {
    cat functions/reelgate/src/domain/catalog/catalog.default.toml
    cat <<CATALOG

[[upstreams]]
id = "fast"
kind = "openai"
base_url = "$UPSTREAM"

[[chat_models]]
id = "bench-model"
upstream = "fast"
upstream_model = "fast-model"
capabilities = ["text"]
reasoning_efforts = []
input_per_million = "0.15"
output_per_million = "0.60"

[[plans]]
id = "bench-limited"
max_concurrent_renders = 1
key_limits = { requests_per_minute = 100000000, tokens_per_minute = 100000000000, video_creates_per_minute = 1 }
org_limits = { requests_per_minute = 100000000, tokens_per_minute = 100000000000, video_creates_per_minute = 1 }
CATALOG
  } >"$WORK/catalog.toml"
  export REELGATE_CATALOG="$WORK/catalog.toml"
  local org user
  org="$(json_field "$("$REELGATE" admin --data-dir "$DATA" org create --name bench --plan "${BENCH_PLAN:-enterprise}" --credits 1000000)" id id)"
  user="$(json_field "$("$REELGATE" admin --data-dir "$DATA" user create --org "$org" --email bench@example.com)" id id)"
  KEY="$(json_field "$("$REELGATE" admin --data-dir "$DATA" key create --user "$user")" secret key)"
}

json_field() { python3 -c 'import json,sys; d = json.loads(sys.argv[1]); print(d.get(sys.argv[2]) or d.get(sys.argv[3], ""))' "$@"; }

# start_server NAME CPUS [VAR=VALUE…]: `reelgate serve` on CPUS; sets RG_PID and RG_URL.
start_server() {
  local name="$1" cpus="$2" port
  shift 2
  port="$(free_port)"
  env REELGATE_LOG=warn "$@" taskset -c "$cpus" \
    "$REELGATE" serve --addr "127.0.0.1:$port" --data-dir "$DATA" >"$WORK/$name.out" 2>"$WORK/$name.log" &
  RG_PID=$!
  PIDS+=("$RG_PID")
  RG_URL="http://127.0.0.1:$port"
  wait_http "$RG_URL/health"
}

stop_server() { kill "$RG_PID" 2>/dev/null || true; wait "$RG_PID" 2>/dev/null || true; }
