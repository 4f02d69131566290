#!/usr/bin/env bash
# Two nodes of one cluster on a fresh PostgreSQL database: what passing a request to
# the workspace's writer costs, and what a writer's death does to lookups.
#
#   loadtest/run-cluster.sh            PEOPLE=100000 (generated and imported), then:
#   1. closed-loop lookups (concurrency 4) through the writer, then through the other
#      node (each one passed to the writer), alternated three times: the difference in
#      latency is forwarding's cost;
#   2. lookups at 200/s through the other node while the writer is killed (kill -9):
#      failed lookups, and how long until the other node holds the writer lease.
#
# Both nodes and the load generator share this machine's cores: the figures show
# overhead, not scaling. Results in bench-results/cluster-<time>/ (summary.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-100000}"
STORE="${STORE:-postgres://postgres@127.0.0.1:5432/postgres}"
OUT="${OUT:-bench-results/cluster-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18443}"
ADMIN_PORT="${ADMIN_PORT:-18444}"
B_API_PORT="${B_API_PORT:-18543}"
B_ADMIN_PORT="${B_ADMIN_PORT:-18544}"
SECS="${SECS:-20}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"

source loadtest/common.sh
DATA_B="$(mktemp -d)"
b_pid=""
trap 'if [ -n "$b_pid" ]; then kill "$b_pid" 2>/dev/null || true; fi; rm -rf "$DATA_B"; lt_cleanup' EXIT

lt_fresh_database cluster
"$BIN/recruitd" --data-dir "$DATA" "${store[@]}" serve --node-name a \
  --listen "127.0.0.1:$API_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" \
  >"$OUT/server-a.out" 2>"$OUT/server-a.log" &
server_pid=$!
lt_wait_started
LT=("$BIN/recruitd-loadtest" --data-dir "$DATA" --out "$OUT")
"${LT[@]}" --url "https://127.0.0.1:$API_PORT" prepare --people "$PEOPLE" \
  --admin-url "http://127.0.0.1:$ADMIN_PORT" 2>&1 | tee "$OUT/prepare.log"

"$BIN/recruitd" --data-dir "$DATA_B" "${store[@]}" serve --node-name b \
  --listen "127.0.0.1:$B_API_PORT" --admin-listen "127.0.0.1:$B_ADMIN_PORT" \
  >"$OUT/server-b.out" 2>"$OUT/server-b.log" &
b_pid=$!

# The cluster view of node b, as one line of JSON.
view() {
  curl -sf "http://127.0.0.1:$B_ADMIN_PORT/admin/v1/cluster" \
    -H "Authorization: Bearer $(cat "$DATA_B/admin-token" 2>/dev/null)" || true
}
owner() { view | python3 -c 'import json,sys; w=json.load(sys.stdin)["data"]["workspaces"]; print(w[0]["owner"] if w else "")' 2>/dev/null || true; }
held_by_b() { view | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(sum(1 for w in d["workspaces"] if "b" in w["holders"]))' 2>/dev/null || true; }
for _ in $(seq 1 1200); do [ "$(held_by_b)" = 1 ] && [ "$(owner)" = a ] && break; sleep 0.1; done
[ "$(owner)" = a ] || { echo "node b did not join with a as the writer; see $OUT" >&2; exit 1; }
echo "two nodes up: a writes, b holds a copy" | tee -a "$OUT/summary.txt"

run() {
  local name="$1"; shift
  echo "== $name" | tee -a "$OUT/summary.txt"
  "${LT[@]}" --name "$name" "$@" 2>"$OUT/$name.log" | tee -a "$OUT/summary.txt" || true
}
for i in 1 2 3; do
  run "direct-$i" --url "https://127.0.0.1:$API_PORT" lookup --concurrency 4 --duration "$SECS" --warmup 3
  run "forwarded-$i" --url "https://127.0.0.1:$B_API_PORT" --cacert "$DATA_B/tls/cert.pem" \
    lookup --concurrency 4 --duration "$SECS" --warmup 3
done

# The writer killed under 200 lookups/s through b.
"${LT[@]}" --name failover --url "https://127.0.0.1:$B_API_PORT" --cacert "$DATA_B/tls/cert.pem" \
  lookup --rate 200 --duration 20 >"$OUT/failover.txt" 2>"$OUT/failover.log" &
load_pid=$!
sleep 5
kill -9 "$server_pid"
killed=$(date +%s.%N)
server_pid=""
until [ "$(owner)" = b ]; do sleep 0.05; done
took=$(python3 -c "import time; print(round(time.time() - $killed, 2))")
echo "== failover: b holds the writer lease ${took} s after kill -9 of a" | tee -a "$OUT/summary.txt"
wait "$load_pid" || true
cat "$OUT/failover.txt" >>"$OUT/summary.txt"
echo "results in $OUT"
