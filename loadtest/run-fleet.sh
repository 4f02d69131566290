#!/usr/bin/env bash
# A cluster run for a fleet of agencies: WORKSPACES small workspaces (a generated one of
# PEOPLE people, about 60 records, copied by SQL under new ids) on a fresh PostgreSQL
# database, nodes started with --replicas 2. Phases (PHASES picks them):
#   start     node a alone: start to ready, resident memory, idle store reads and CPU;
#   join      b then c join: each one's start to ready, workspaces with no writer once
#             it is ready, the writers' spread 30 s after, then store rows read and CPU
#             over IDLE_SECS (two nodes, then three);
#   idle      three nodes, no client, SETTLE_SECS after the last change: store rows
#             read per second (by table) and each node's CPU over IDLE_SECS;
#   restart   a killed (kill -9) and started again: the writers' spread 30 s after it is
#             back;
#   failover  writes (one at a time) to one workspace through a node that does not
#             write it while its writer is killed: how long until a write is
#             acknowledged again, and how many failed;
#   imports   IMPORTS new workspaces imported one after another through one node's admin
#             interface, each counted through the API at once: refusals, and copies that
#             answered other than the snapshot's counts;
#   big       ROUNDS rounds: a new workspace of BIG_PEOPLE people imported through one
#             node, counted, its writer killed (kill -9) 3 s later, counted again at the
#             next writer once there is one: records missing, and refusals.
# NODES=1 runs every phase but join, idle (three nodes), restart and failover on node a
# alone.
# Results in bench-results/fleet-<time>/ (summary.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

WORKSPACES="${WORKSPACES:-1000}"
PEOPLE="${PEOPLE:-8}"
IMPORTS="${IMPORTS:-200}"
IDLE_SECS="${IDLE_SECS:-30}"
SETTLE_SECS="${SETTLE_SECS:-60}"
STORE="${STORE:-postgres://postgres@127.0.0.1:5432/postgres}"
OUT="${OUT:-bench-results/fleet-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18443}"
ADMIN_PORT="${ADMIN_PORT:-18444}"
PHASES="${PHASES:-start join idle restart failover imports big}"
NODES="${NODES:-3}"
BIG_PEOPLE="${BIG_PEOPLE:-60000}"
ROUNDS="${ROUNDS:-5}"

source loadtest/common.sh
lt_fresh_database fleet
DB="${STORE%/*}/recruitd_fleet"

names=(a b c)
dirs=("$DATA" "$(mktemp -d)" "$(mktemp -d)")
pids=("" "" "")
trap 'for p in "${pids[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; wait; rm -rf "${dirs[1]}" "${dirs[2]}"; lt_cleanup' EXIT
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
api() { echo "https://127.0.0.1:$((API_PORT + 100 * $1))"; }
admin() { echo "http://127.0.0.1:$((ADMIN_PORT + 100 * $1))"; }
token() { cat "${dirs[$1]}/admin-token"; }
start() {
  "$BIN/recruitd" --data-dir "${dirs[$1]}" "${store[@]}" serve --node-name "${names[$1]}" \
    --replicas 2 --listen "127.0.0.1:$((API_PORT + 100 * $1))" \
    --admin-listen "127.0.0.1:$((ADMIN_PORT + 100 * $1))" \
    >>"$OUT/server-${names[$1]}.out" 2>>"$OUT/server-${names[$1]}.log" &
  pids[$1]=$!
}
# Seconds from now until node $1 answers ready (at most 10 minutes).
until_ready() {
  local from; from=$(date +%s.%N)
  for _ in $(seq 1 6000); do
    if [ -s "${dirs[$1]}/admin-token" ] &&
      curl -sf "$(admin "$1")/admin/v1/ready" -H "Authorization: Bearer $(token "$1")" >/dev/null; then
      python3 -c "import time; print(round(time.time() - $from, 2))"
      return 0
    fi
    sleep 0.1
  done
  echo "node ${names[$1]} not ready in 10 minutes; see $OUT" >&2
  exit 1
}
view() { curl -sf "$(admin "$1")/admin/v1/cluster" -H "Authorization: Bearer $(token "$1")"; }
# "<writers per live node> <max/even> <workspaces with no writer>" as node $1 sees it.
spread() {
  view "$1" | python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]; total = int(sys.argv[1])
live = [n for n in d["nodes"] if n["alive"]]
owned = {n["name"]: n["workspaces_owned"] for n in live}
even = total / len(live)
print(" ".join("%s=%d" % kv for kv in sorted(owned.items())), "%.2f" % (max(owned.values()) / even), total - sum(owned.values()))' "$WORKSPACES"
}
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Rows read by every table (sequential and index fetches) so far.
rows_read() {
  psql "$DB" -Atc "SELECT relname || ' ' || (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)) \
    FROM pg_stat_user_tables ORDER BY relname"
}
# Store rows read per second and each live node's CPU (% of a core) over IDLE_SECS.
idle() {
  local before after t0 t1 ticks
  declare -A c0
  # A backend that went idle less than a second after its last report flushes its
  # table counts up to 10 s later: the reads of what came before (a view asked for just
  # now, the last loads) land before the window, not in it.
  sleep 11
  before=$(rows_read)
  for i in 0 1 2; do [ -n "${pids[$i]}" ] && c0[$i]=$(cpu_ticks "${pids[$i]}"); done
  t0=$(date +%s.%N)
  sleep "$IDLE_SECS"
  after=$(rows_read)
  t1=$(date +%s.%N)
  ticks=$(getconf CLK_TCK)
  python3 - "$t0" "$t1" <<PY | tee -a "$OUT/summary.txt"
import sys
t = float(sys.argv[2]) - float(sys.argv[1])
b = dict(l.split() for l in """$before""".splitlines())
a = dict(l.split() for l in """$after""".splitlines())
d = {k: (int(a[k]) - int(b.get(k, 0))) / t for k in a}
busy = ", ".join("%s %.0f/s" % kv for kv in sorted(d.items(), key=lambda kv: -kv[1]) if kv[1] >= 0.5)
print("  store rows read: %.0f/s (%s)" % (sum(d.values()), busy or "none"))
PY
  for i in 0 1 2; do
    [ -n "${pids[$i]}" ] || continue
    local used; used=$(( $(cpu_ticks "${pids[$i]}") - ${c0[$i]} ))
    say "  node ${names[$i]}: $(python3 -c "print('%.2f' % (100 * $used / $ticks / ($t1 - $t0)))")% of a core, $(rss_mb "${pids[$i]}") MB resident"
  done
}

# The fleet: one generated workspace, copied under new ids.
"$BIN/recruitd" generate --people "$PEOPLE" --seed 7 --out "$OUT/template.json" 2>/dev/null
"$BIN/recruitd" --data-dir "${dirs[0]}" "${store[@]}" import "$OUT/template.json" >/dev/null 2>&1
template=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workspace"]["id"])' "$OUT/template.json")
psql "$DB" -q -v ON_ERROR_STOP=1 -v t="$template" -v n="$((WORKSPACES - 1))" <<'SQL'
CREATE TEMP TABLE copies AS SELECT gen_random_uuid()::text AS id, n FROM generate_series(1, :n) n;
INSERT INTO workspaces (workspace_id, name, default_region)
  SELECT c.id, 'Agency ' || c.n, w.default_region FROM copies c, workspaces w WHERE w.workspace_id = :'t';
INSERT INTO records (workspace_id, kind, id, body)
  SELECT c.id, r.kind, r.id, r.body FROM copies c, records r WHERE r.workspace_id = :'t';
INSERT INTO blobs (workspace_id, name, bytes)
  SELECT c.id, b.name, b.bytes FROM copies c, blobs b WHERE b.workspace_id = :'t';
INSERT INTO commit_positions (workspace_id, position, tag)
  SELECT c.id, p.position, gen_random_uuid()::text FROM copies c, commit_positions p WHERE p.workspace_id = :'t';
ANALYZE;
SQL
records=$(psql "$DB" -Atc "SELECT count(*) FROM records")
say "fleet: $WORKSPACES workspaces of $((records / WORKSPACES)) records ($records records), PEOPLE=$PEOPLE; $(nproc) cores"

if phase start; then
  start 0
  say "a alone: ready in $(until_ready 0) s, $(rss_mb "${pids[0]}") MB resident"
  sleep "$SETTLE_SECS"
  say "a alone, idle ($SETTLE_SECS s after ready):"
  idle
fi
[ -n "${pids[0]}" ] || { start 0; until_ready 0 >/dev/null; }

if phase join; then
  for i in 1 2; do
    grep -c "took writer leases\|handed writer leases over" "$OUT/server-a.log" >"$OUT/moves-before" || true
    start "$i"
    took=$(until_ready "$i")
    read -r _ _ none <<<"$(spread "$i" | awk '{print $(NF-2), $(NF-1), $NF}')"
    say "${names[$i]} joins: ready in $took s; workspaces with no writer then: $(spread "$i" | awk '{print $NF}')"
    sleep 30
    say "  30 s later, writers (max/even, none): $(spread "$i")"
    say "  $((i + 1)) nodes, idle:"
    idle
  done
fi
if [ "$NODES" = 1 ]; then
  PHASES="${PHASES/join/}"; PHASES="${PHASES/idle/}"; PHASES="${PHASES/restart/}"; PHASES="${PHASES/failover/}"
else
  for i in 1 2; do [ -n "${pids[$i]}" ] || { start "$i"; until_ready "$i" >/dev/null; }; done
fi

if phase idle; then
  sleep "$SETTLE_SECS"
  moves=$(cat "$OUT"/server-*.log | grep -c "took writer leases" || true)
  say "three nodes, idle ($SETTLE_SECS s later):"
  idle
  after=$(cat "$OUT"/server-*.log | grep -c "took writer leases" || true)
  say "  lease takes while idle: $((after - moves))"
fi

if phase restart; then
  kill -9 "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true; pids[0]=""
  start 0
  say "a killed and started again: ready in $(until_ready 0) s"
  sleep 30
  say "  30 s later, writers (max/even, none): $(spread 1)"
fi

if phase failover; then
  # A key of one workspace, its writer, and a node that does not write it.
  ws=$(view 1 | python3 -c 'import json,sys; d = json.load(sys.stdin)["data"]; w = [w for w in d["workspaces"] if w["owner"]][0]; print(w["id"], w["owner"])')
  read -r wsid owner <<<"$ws"
  created_by=$(python3 -c 'import json,sys; u = [u for u in json.load(open(sys.argv[1]))["users"] if u["role"] == "owner"][0]; print(u["email"])' "$OUT/template.json")
  key=$(curl -sf "$(admin 1)/admin/v1/keys" -H "Authorization: Bearer $(token 1)" -H 'content-type: application/json' \
    -d "{\"workspace_id\":\"$wsid\",\"created_by_email\":\"$created_by\",\"scopes\":[\"read\",\"notes:write\"],\"rate_limit_per_minute\":10000000}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["secret"])')
  company=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["companies"][0]["id"])' "$OUT/template.json")
  for i in 0 1 2; do [ "${names[$i]}" = "$owner" ] && w=$i; done
  o=$(( (w + 1) % 3 ))
  python3 - "$(api "$o")" "$key" "$company" "${pids[$w]}" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, ssl, sys, time, urllib.request
url, key, company, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
def write(n):
    body = json.dumps({"parent_type": "company", "parent_id": company, "body_html": "n%d" % n, "reference": "failover-%d" % n}).encode()
    req = urllib.request.Request(url + "/v1/notes", body, {"Authorization": "Bearer " + key, "content-type": "application/json"})
    try:
        return urllib.request.urlopen(req, context=ctx, timeout=15).status
    except urllib.error.HTTPError as e:
        statuses.setdefault(e.code, e.read()[:200])
        return e.code
    except Exception as e:
        statuses.setdefault(0, str(e))
        return 0
statuses = {}
n, failed = 0, 0
end = time.time() + 3
while time.time() < end:
    n += 1; failed += write(n) not in (200, 201)
os.kill(pid, 9); killed = time.time()
back, longest = None, 0.0
while time.time() < killed + 20:
    n += 1
    sent = time.time()
    s = write(n)
    longest = max(longest, time.time() - sent)
    if s in (200, 201):
        if back is None: back = time.time() - killed
        if time.time() > killed + 5: break
    else:
        failed += 1
print("failover: the first write after kill -9 of the writer acknowledged %.2f s after it; the longest write took %.2f s; %d of %d writes failed" % (back or -1, longest, failed, n))
for code, body in sorted(statuses.items()):
    print("  first refusal %d: %s" % (code, body))
PY
  wait "${pids[$w]}" 2>/dev/null || true; pids[$w]=""
  start "$w"; until_ready "$w" >/dev/null
fi

if phase imports; then
  python3 - "$(admin 0)" "$(token 0)" "$(api 0)" "$IMPORTS" "$OUT/template.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, ssl, sys, time, urllib.request, uuid
admin, token, api, n, template = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
snap = json.load(open(template))
owner = [u for u in snap["users"] if u["role"] == "owner"][0]["id"]
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
def call(req):
    try:
        r = urllib.request.urlopen(req, context=ctx, timeout=60); return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
expected = None
refused = wrong = 0
started = time.time()
for i in range(n):
    snap["workspace"]["id"] = str(uuid.uuid4())
    secret = "rk_fleet_%d_%s" % (i, uuid.uuid4().hex)
    snap["api_keys"] = [{"id": "key_fleet_%d_%s" % (i, uuid.uuid4().hex[:8]), "secret": secret, "scopes": ["read"], "created_by": owner}]
    s, body = call(urllib.request.Request(admin + "/admin/v1/import", json.dumps(snap).encode(),
                   {"Authorization": "Bearer " + token, "content-type": "application/json"}))
    if s != 200:
        refused += 1; continue
    s, counts = call(urllib.request.Request(api + "/v1/counts", headers={"Authorization": "Bearer " + secret}))
    counts = counts.get("data")
    expected = expected or counts
    wrong += counts != expected
took = time.time() - started
print("imports: %d first imports through one node in %.0f s (%.0f/s): %d refused, %d answered other than the snapshot's counts %s" % (n, took, n / took, refused, wrong, json.dumps(expected)))
PY
fi
if phase big; then
  # The writer of workspace $2 as node $1 sees it ("none" while there is none); the
  # records node $1 answers for the workspace of key $2 (`/v1/counts`).
  owner_of() {
    view "$1" | python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]
print(([w["owner"] for w in d["workspaces"] if w["id"] == sys.argv[1]] + [None])[0] or "none")' "$2"
  }
  records_at() {
    curl -sk "$(api "$1")/v1/counts" -H "Authorization: Bearer $2" |
      python3 -c 'import json,sys; d = json.load(sys.stdin); print(sum(d["data"].values()) if "data" in d else "error: %s" % d)'
  }
  missing_all=0 refused_all=0
  for r in $(seq 1 "$ROUNDS"); do
    "$BIN/recruitd" generate --people "$BIG_PEOPLE" --seed "$((100 + r))" --out "$OUT/big.json" 2>/dev/null
    read -r wsid created_by <<<"$(python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
print(s["workspace"]["id"], [u for u in s["users"] if u["role"] == "owner"][0]["email"])' "$OUT/big.json")"
    refused=0
    until s=$(curl -s -o "$OUT/big-import.json" -w '%{http_code}' "$(admin 0)/admin/v1/import"       -H "Authorization: Bearer $(token 0)" -H 'content-type: application/json' --data-binary @"$OUT/big.json") &&
      [ "$s" = 200 ]; do
      refused=$((refused + 1)); say "  round $r: import answered $s: $(head -c 300 "$OUT/big-import.json")"
      [ "$refused" -lt 5 ] || break
      sleep 1
    done
    key=$(curl -sf "$(admin 0)/admin/v1/keys" -H "Authorization: Bearer $(token 0)" -H 'content-type: application/json' \
      -d "{\"workspace_id\":\"$wsid\",\"created_by_email\":\"$created_by\",\"scopes\":[\"read\"],\"rate_limit_per_minute\":10000000}" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["secret"])')
    before=$(records_at 0 "$key")
    sleep 3
    owner=$(owner_of 0 "$wsid")
    w=0; for i in $(seq 0 $((NODES - 1))); do [ "${names[$i]}" = "$owner" ] && w=$i; done
    kill -9 "${pids[$w]}"; wait "${pids[$w]}" 2>/dev/null || true; pids[$w]=""
    o=$(( (w + 1) % NODES ))
    if [ "$NODES" = 1 ]; then start 0; until_ready 0 >/dev/null; fi
    for _ in $(seq 1 300); do
      next=$(owner_of "$o" "$wsid" 2>/dev/null || echo none)
      [ "$next" != none ] && [ "$next" != "$owner" ] || [ "$NODES" = 1 ] && break
      sleep 0.1
    done
    after=$(records_at "$o" "$key")
    missing=$((before - after))
    missing_all=$((missing_all + missing)); refused_all=$((refused_all + refused))
    say "  round $r: $before records after the import (written by $owner), $after at the next writer ($next): $missing missing; $refused refused"
    [ "$NODES" = 1 ] || { start "$w"; until_ready "$w" >/dev/null; }
  done
  say "big first imports ($BIG_PEOPLE people, $ROUNDS rounds, writer killed 3 s after each): $missing_all records missing, $refused_all refused"
fi
say "results in $OUT"
