#!/usr/bin/env bash
# Measures what a large workspace costs: generates PEOPLE people (cached between runs),
# imports them offline into a fresh store and times it (and its peak memory), imports
# them again through a running server's admin interface (time, the server's peak), then
# restarts the server on the imported store and reports:
#   - time from process start to `GET /admin/v1/ready` answering 200;
#   - resident memory at ready, and after a full sync of all nine entities
#     (`recruitd-loadtest sync`, every count checked);
#   - bytes of resident memory per stored record (the store's records of the workspace,
#     as the `workspace loaded` log line counts them);
#   - start to ready again without the checkpoint the import wrote (a full load).
#
# Settings (environment): PEOPLE (1000000), SEED (1), STORE (sqlite, or a postgres:// URL:
# a fresh database is made from it, named recruitd_capacity), CACHE (bench-results/cache:
# the generated snapshot), OUT (bench-results/capacity-<UTC time>), API_PORT (18463),
# ADMIN_PORT (18464), CARGO_TARGET_DIR (target), SKIP_ADMIN_IMPORT=1 to leave out the
# import through the admin interface.
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-1000000}"
SEED="${SEED:-1}"
STORE="${STORE:-sqlite}"
CACHE="${CACHE:-bench-results/cache}"
OUT="${OUT:-bench-results/capacity-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18463}"
ADMIN_PORT="${ADMIN_PORT:-18464}"

mkdir -p "$CACHE"
source loadtest/common.sh
SNAP="$CACHE/workspace-$PEOPLE-seed$SEED.json"
if [ ! -s "$SNAP" ]; then
  "$BIN/recruitd" generate --people "$PEOPLE" --seed "$SEED" --out "$SNAP.tmp"
  mv "$SNAP.tmp" "$SNAP"
fi

fresh_store() {
  rm -rf "${DATA:?}"/*
  lt_drop_caches
  lt_fresh_database capacity
}

# Runs a command; its wall time (s) and peak resident memory (KiB) go to $OUT/time.txt.
measure() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$@"
  else
    local t0; t0=$(date +%s.%N)
    "$@"
    echo "$(echo "$(date +%s.%N) - $t0" | bc) 0" >"$OUT/time.txt"
  fi
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
mb() { echo "$(( $1 / 1024 ))"; }

# Seconds until the admin interface says ready.
wait_ready() {
  local t0; t0=$(date +%s.%N)
  until [ -s "$DATA/admin-token" ] && curl -sf -o /dev/null \
      -H "Authorization: Bearer $(cat "$DATA/admin-token")" \
      "http://127.0.0.1:$ADMIN_PORT/admin/v1/ready"; do
    kill -0 "$server_pid" 2>/dev/null || { echo "the server stopped; see $OUT" >&2; exit 1; }
    sleep 0.1
  done
  echo "$(date +%s.%N) - $t0" | bc
}

echo "store: $STORE; $PEOPLE people (seed $SEED), snapshot $(du -h "$SNAP" | cut -f1)" | tee "$OUT/summary.txt"

# 1. Offline import.
fresh_store
measure "$BIN/recruitd" --data-dir "$DATA" "${store[@]}" import "$SNAP" 2>"$OUT/import.log" >"$OUT/import.out"
read -r secs kib <"$OUT/time.txt"
echo "offline import: ${secs} s, peak $(mb "$kib") MiB" | tee -a "$OUT/summary.txt"

# 2. Through the admin interface, into a fresh store (the server's peak while importing).
if [ "${SKIP_ADMIN_IMPORT:-0}" != 1 ]; then
  ADMIN_DATA="$DATA"
  DATA="$(mktemp -d)"
  fresh_store
  lt_start_server admin-import
  wait_ready >/dev/null
  t0=$(date +%s.%N)
  # --upload-file streams the file (--data-binary would read all of it into memory first).
  curl -sf -o "$OUT/admin-import.json" -H "Authorization: Bearer $(cat "$DATA/admin-token")" \
    -H 'Content-Type: application/json' -H 'Expect:' -X POST --upload-file "$SNAP" \
    "http://127.0.0.1:$ADMIN_PORT/admin/v1/import"
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  echo "import through the admin interface: ${secs} s, server peak $(mb "$(hwm_kib "$server_pid")") MiB" | tee -a "$OUT/summary.txt"
  lt_stop_server
  rm -rf "$DATA"
  DATA="$ADMIN_DATA"
  if [ "$STORE" != sqlite ]; then
    # The admin import's fresh database replaced the offline one: import again.
    fresh_store
    "$BIN/recruitd" --data-dir "$DATA" "${store[@]}" import "$SNAP" >"$OUT/import.out" 2>/dev/null
  fi
fi

# 3. A key for the sync, then a restart on the imported store.
workspace=$(head -c 4096 "$SNAP" | grep -o '"workspace":{"id":"[^"]*"' | cut -d'"' -f6)
owner=$(grep -o 'created-by [^ )]*' "$OUT/import.out" | head -n1 | cut -d' ' -f2)
"$BIN/recruitd" --data-dir "$DATA" "${store[@]}" key create --workspace "$workspace" \
  --created-by "$owner" --rate-limit-per-minute 100000000 --admin-listen 127.0.0.1:9 \
  2>/dev/null | head -n1 > "$DATA/loadtest.key"
lt_start_server ready
ready_secs=$(wait_ready)
ready_rss=$(rss_kib "$server_pid")
records=$(grep -o 'records=[0-9]*' "$OUT/server-ready.log" | head -n1 | cut -d= -f2)
echo "start to ready: ${ready_secs} s; resident at ready $(mb "$ready_rss") MiB ($(( ready_rss * 1024 / records )) B per stored record, $records records)" | tee -a "$OUT/summary.txt"

# 4. A full sync of all nine entities (every count checked), then the memory again.
"$BIN/recruitd-loadtest" --data-dir "$DATA" --url "https://127.0.0.1:$API_PORT" --out "$OUT" \
  --name full-sync sync --duration 1 --warmup 0 --incremental-rounds 0 >"$OUT/sync.txt" 2>&1 || {
  echo "the full sync failed; see $OUT/sync.txt" >&2; exit 1; }
synced_rss=$(rss_kib "$server_pid")
rate=$(grep -o '"full_records_per_s": *[0-9.]*' "$OUT/full-sync.json" | head -n1 | grep -o '[0-9.]*$')
echo "after a full sync: resident $(mb "$synced_rss") MiB ($(( synced_rss * 1024 / records )) B per stored record); full sync ${rate%.*} records/s" | tee -a "$OUT/summary.txt"
lt_stop_server

# 5. The same start without the checkpoint: a full load from the store.
rm -rf "$DATA/checkpoints"
lt_start_server full-load
load_secs=$(wait_ready)
echo "start to ready without a checkpoint (full load from the store): ${load_secs} s; resident $(mb "$(rss_kib "$server_pid")") MiB" | tee -a "$OUT/summary.txt"
lt_stop_server
echo "reports in $OUT"
