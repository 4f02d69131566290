#!/usr/bin/env bash
# Three nodes of one cluster on a fresh PostgreSQL database (PEOPLE generated people,
# imported through the first node):
#   1. what passing a request to the workspace's writer costs: closed-loop lookups
#      (concurrency 1, then 4) through the writer, then through another node (each
#      lookup passed on to the writer), alternated three times;
#   2. lookups (closed loop, concurrency 32) and full syncs (3 streams) with the clients
#      spread over 1, 2 and 3 nodes (`--target`);
#   3. follower lag: writes (closed loop, concurrency 4) through the writer, and the
#      p50/p99 of the other holder's `recruitd_follower_lag_seconds` (from a commit to
#      that node's copy holding it);
#   4. a rolling restart: each node in turn stopped (SIGTERM) and started again under
#      the `mixed` scenario spread over the two others (as a load balancer steers
#      clients away from a node being restarted): errors per scenario;
#   5. lookups at 200/s spread over the two other nodes while the writer is killed
#      (kill -9): failed lookups, and how long until another node holds the lease.
#
# The nodes and the load generator share this machine's cores: the figures show
# overhead, not scaling. Results in bench-results/cluster-<time>/ (summary.txt).
# PHASES (default "forward scale lag rolling failover") runs only the phases named.
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-100000}"
STORE="${STORE:-postgres://postgres@127.0.0.1:5432/postgres}"
OUT="${OUT:-bench-results/cluster-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18443}"
ADMIN_PORT="${ADMIN_PORT:-18444}"
SECS="${SECS:-20}"
PHASES="${PHASES:-forward scale lag rolling failover}"

source loadtest/common.sh
lt_fresh_database cluster

# Node i (0, 1, 2): named a, b, c, on ports API_PORT+100*i and ADMIN_PORT+100*i; node
# 0 on DATA (where `prepare` leaves the key), the others on data dirs of their own.
names=(a b c)
dirs=("$DATA" "$(mktemp -d)" "$(mktemp -d)")
pids=("" "" "")
trap 'for p in "${pids[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; rm -rf "${dirs[1]}" "${dirs[2]}"; lt_cleanup' EXIT
api() { echo "https://127.0.0.1:$((API_PORT + 100 * $1))"; }
admin() { echo "http://127.0.0.1:$((ADMIN_PORT + 100 * $1))"; }
start() {
  "$BIN/recruitd" --data-dir "${dirs[$1]}" "${store[@]}" serve --node-name "${names[$1]}" \
    --listen "127.0.0.1:$((API_PORT + 100 * $1))" \
    --admin-listen "127.0.0.1:$((ADMIN_PORT + 100 * $1))" \
    >"$OUT/server-${names[$1]}.out" 2>"$OUT/server-${names[$1]}.log" &
  pids[$1]=$!
  for _ in $(seq 1 600); do
    [ -s "${dirs[$1]}/admin-token" ] && [ -s "${dirs[$1]}/tls/cert.pem" ] && return 0
    sleep 0.1
  done
  echo "node ${names[$1]} did not start; see $OUT" >&2
  exit 1
}
# The cluster as node $1 sees it: "<owner> <nodes alive> <holders of the workspace>
# <a holder that does not write it>".
view() {
  curl -sf "$(admin "$1")/admin/v1/cluster" -H "Authorization: Bearer $(cat "${dirs[$1]}/admin-token")" |
    python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]; w = d["workspaces"]
o = w[0]["owner"] if w else None
f = [h for h in w[0]["holders"] if h != o] if w else []
print(o, sum(n["alive"] for n in d["nodes"]), len(w[0]["holders"]) if w else 0, f[0] if f else None)' 2>/dev/null || true
}
# Percentiles p50 and p99 of a Prometheus histogram $2 on node $1's /metrics, read
# from its cumulative buckets (each given as its upper bound), in milliseconds.
percentiles() {
  curl -sf "$(admin "$1")/metrics" -H "Authorization: Bearer $(cat "${dirs[$1]}/admin-token")" |
    python3 -c 'import sys
name = sys.argv[1]
b = []
for l in sys.stdin:
    if l.startswith(name + "_bucket{le=\""):
        le = l.split("\"")[1]; n = float(l.rsplit(" ", 1)[1])
        b.append((float("inf") if le == "+Inf" else float(le), n))
total = b[-1][1] if b else 0
def q(p):
    for le, n in b:
        if n >= p * total: return "%.1f" % (le * 1000) if le != float("inf") else "inf"
print("commits %d: p50 <= %s ms, p99 <= %s ms" % (total, q(0.5), q(0.99)))' "$2"
}
index_of() { for i in 0 1 2; do if [ "${names[$i]}" = "$1" ]; then echo "$i"; fi; done; }
target() { echo "$(api "$1")=${dirs[$1]}/tls/cert.pem"; }

start 0
LT=("$BIN/recruitd-loadtest" --data-dir "$DATA" --out "$OUT")
"${LT[@]}" --url "$(api 0)" prepare --people "$PEOPLE" --admin-url "$(admin 0)" 2>&1 | tee "$OUT/prepare.log"
start 1
start 2
for _ in $(seq 1 1200); do
  read -r owner alive holders follower <<<"$(view 0)"
  [ "$alive" = 3 ] && [ "$holders" = 2 ] && [ "$owner" != None ] && [ "$follower" != None ] && break
  sleep 0.1
done
sleep 3 # a writer that the third node's arrival moved has moved by now
read -r owner alive holders follower <<<"$(view 0)"
w=$(index_of "$owner")
f=$(index_of "$follower")
o1=$(( (w + 1) % 3 )); o2=$(( (w + 2) % 3 ))
echo "three nodes up ($alive alive, $holders holding the workspace); $owner writes it, $follower follows" | tee -a "$OUT/summary.txt"

run() {
  local name="$1"; shift
  echo "== $name" | tee -a "$OUT/summary.txt"
  "${LT[@]}" --name "$name" "$@" 2>"$OUT/$name.log" | tee -a "$OUT/summary.txt" || true
}
phase forward && for i in 1 2 3; do
  # One in flight: the latency a hop adds; four: what it costs the two cores.
  for c in 1 4; do
    run "direct-c$c-$i" --target "$(target "$w")" lookup --concurrency "$c" --duration "$SECS" --warmup 3
    run "forwarded-c$c-$i" --target "$(target "$o1")" lookup --concurrency "$c" --duration "$SECS" --warmup 3
  done
done
one=(--target "$(target "$w")")
two=("${one[@]}" --target "$(target "$o1")")
three=("${two[@]}" --target "$(target "$o2")")
if phase scale; then
  run lookup-1-node "${one[@]}" lookup --concurrency 32 --duration "$SECS" --warmup 3
  run lookup-2-nodes "${two[@]}" lookup --concurrency 32 --duration "$SECS" --warmup 3
  run lookup-3-nodes "${three[@]}" lookup --concurrency 32 --duration "$SECS" --warmup 3
  run sync-1-node "${one[@]}" sync --streams 3 --duration "$SECS" --warmup 3
  run sync-2-nodes "${two[@]}" sync --streams 3 --duration "$SECS" --warmup 3
  run sync-3-nodes "${three[@]}" sync --streams 3 --duration "$SECS" --warmup 3
fi

# Follower lag: writes through the writer; the other holder's lag per commit.
if phase lag; then
  run writes-followed --target "$(target "$w")" write --concurrency 4 --duration "$SECS" --warmup 3
  echo "== follower lag on $follower: $(percentiles "$f" recruitd_follower_lag_seconds)" | tee -a "$OUT/summary.txt"
fi
if phase rolling; then
  for i in 0 1 2; do
    j=$(( (i + 1) % 3 )); k=$(( (i + 2) % 3 ))
    "${LT[@]}" --name "rolling-${names[$i]}" --target "$(target "$j")" --target "$(target "$k")" \
      mixed --duration 30 --warmup 2 --full-sync-every 0 >"$OUT/rolling-${names[$i]}.txt" 2>"$OUT/rolling-${names[$i]}.log" &
    load_pid=$!
    sleep 7
    kill -TERM "${pids[$i]}"
    stopping=$(date +%s.%N)
    wait "${pids[$i]}" || true
    stopped=$(python3 -c "import time; print(round(time.time() - $stopping, 2))")
    start "$i"
    until read -r now alive holders _ <<<"$(view "$j")" && [ "$alive" = 3 ] && [ "$holders" = 2 ] && [ "$now" != None ]; do sleep 0.1; done
    wait "$load_pid" || true
    echo "== rolling: ${names[$i]} stopped in ${stopped} s and started again under mixed over the two others" | tee -a "$OUT/summary.txt"
    grep -E "^(endpoint|GET|POST|PATCH|all) " "$OUT/rolling-${names[$i]}.txt" | tee -a "$OUT/summary.txt" || true
  done
  sleep 3
  read -r owner _ _ follower <<<"$(view 0)"
  w=$(index_of "$owner")
  o1=$(( (w + 1) % 3 )); o2=$(( (w + 2) % 3 ))
fi
phase failover || exit 0

# The writer killed under 200 lookups/s spread over the two others.
"${LT[@]}" --name failover --target "$(target "$o1")" --target "$(target "$o2")" \
  lookup --rate 200 --duration 25 >"$OUT/failover.txt" 2>"$OUT/failover.log" &
load_pid=$!
sleep 8
kill -9 "${pids[$w]}"
killed=$(date +%s.%N)
pids[$w]=""
until read -r now _ _ _ <<<"$(view "$o1")" && [ "$now" != None ] && [ "$now" != "$owner" ]; do sleep 0.05; done
took=$(python3 -c "import time; print(round(time.time() - $killed, 2))")
echo "== failover: $now holds the writer lease ${took} s after kill -9 of $owner" | tee -a "$OUT/summary.txt"
wait "$load_pid" || true
cat "$OUT/failover.txt" >>"$OUT/summary.txt"
echo "results in $OUT"
