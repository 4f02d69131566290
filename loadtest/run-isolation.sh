#!/usr/bin/env bash
# Measures how a large import in one workspace affects API writes to another: starts
# recruitd on a fresh store, prepares a small workspace (B) with the load generator,
# writes a generated snapshot of PEOPLE people (another workspace, A), then runs
# `recruitd-loadtest write` against B at a fixed rate while A's snapshot is imported
# through the admin interface. Reports the import's time and B's write figures (every
# answer checked; any refusal is an error in the report).
#
# Settings (environment): PEOPLE (100000), RATE (100 writes/s), DURATION (40 s of
# writes, measured after a 2 s warm-up; the import should end a few seconds before the
# run does), STORE (sqlite, or a postgres:// URL: a fresh database is made from it,
# named recruitd_isolation), OUT (bench-results/isolation-<UTC time>), API_PORT (18453),
# ADMIN_PORT (18454), CARGO_TARGET_DIR (target).
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-100000}"
RATE="${RATE:-100}"
DURATION="${DURATION:-40}"
STORE="${STORE:-sqlite}"
OUT="${OUT:-bench-results/isolation-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18453}"
ADMIN_PORT="${ADMIN_PORT:-18454}"

source loadtest/common.sh
lt_fresh_database isolation

"$BIN/recruitd" generate --people "$PEOPLE" --seed 17 --out "$DATA/a.json" >/dev/null
# The snapshot file is the harness's own: flushed now, its write-back does not land in
# the middle of the measurement (the kernel writes dirty pages out after 30 s).
lt_drop_caches
lt_start_server isolation
lt_wait_started

"${LT[@]}" prepare --people 1000 --admin-url "http://127.0.0.1:$ADMIN_PORT" >"$OUT/prepare.log" 2>&1
sync

# The write run starts first; the import begins 3 s into it, and the run should end
# soon after the import does, so that its figures are the import's (a long quiet tail
# would dilute them); the script fails if the import outlasted it.
"${LT[@]}" --name writes-during-import write --rate "$RATE" --duration "$DURATION" --warmup 2 \
  >"$OUT/write.txt" 2>"$OUT/write.log" &
writer=$!
sleep 5
token="$(cat "$DATA/admin-token")"
started=$(date +%s.%N)
curl -sS -o "$OUT/import.json" -w '%{http_code}\n' -X POST \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data-binary @"$DATA/a.json" "http://127.0.0.1:$ADMIN_PORT/admin/v1/import" >"$OUT/import.status"
ended=$(date +%s.%N)
status=0
wait "$writer" || status=$?
writer_ended=$(date +%s.%N)
echo "store: $STORE; import of $PEOPLE people: HTTP $(cat "$OUT/import.status"), $(awk "BEGIN {printf \"%.1f\", $ended - $started}") s" | tee "$OUT/summary.txt"
if awk "BEGIN {exit !($ended > $writer_ended)}"; then
  echo "the import outlasted the write run: raise DURATION" | tee -a "$OUT/summary.txt"
  status=1
fi
cat "$OUT/write.txt" | tee -a "$OUT/summary.txt"
echo "reports in $OUT"
exit "$status"
