#!/usr/bin/env bash
# Measures the change feed: a catch-up of about a million changes, then delivery while
# writes run. Starts recruitd on a fresh store, prepares PEOPLE people (the first
# import of a workspace writes no change history), takes a token from a list's
# `changes_since`, imports the same workspace again with every record's `updated_at`
# moved (so every record changes: about 6.4 records per person, 160,000 people give
# about a million changes), and then runs
#   1. `sync --mode changes --since <token> --write-rate 0`: the catch-up, changes/s
#      (twice, from the same token);
#   2. `sync --mode changes --write-rate RATE`: one client long-polls the feed while
#      writes run, commit-to-delivery latency;
# every change delivered is checked against GET in both.
#
# Settings (environment): PEOPLE (160000), RATE (500 writes/s), DURATION (30 s measured
# after a 5 s warm-up), STORE (sqlite, or a postgres:// URL: a fresh database is made
# from it, named recruitd_changes), OUT (bench-results/changes-<UTC time>), API_PORT
# (18473), ADMIN_PORT (18474), CARGO_TARGET_DIR (target).
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-160000}"
RATE="${RATE:-500}"
DURATION="${DURATION:-30}"
STORE="${STORE:-sqlite}"
OUT="${OUT:-bench-results/changes-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18473}"
ADMIN_PORT="${ADMIN_PORT:-18474}"

source loadtest/common.sh
lt_serve_prepared changes

# A point before the second import: the first page of any list carries one.
token="$(lt_first_token)"

# Every record's updated_at moved within its second (never before its created_at):
# the workspace imported again changes every record it holds.
sed -E 's/("updated_at":"[0-9-]{10}T[0-9:]{8}\.)[0-9]{3}Z"/\1999Z"/g' "$snapshot" >"$DATA/moved.json"
"${LT[@]}" prepare --people "$PEOPLE" --snapshot "$DATA/moved.json" "${ADMIN[@]}" 2>&1 | tee -a "$OUT/prepare.log"

# The import's pages go to disk (and SQLite folds its log into the database) in the
# background for some seconds after it answers: let that finish, so the catch-up
# measures the feed rather than the write-back.
sync
sleep 10

status=0
# Twice: the token stays valid, and the second reads a server whose caches the first
# warmed (the first is the cold case a client meets after a restart).
for run in 1 2; do
  echo "== catch-up $run" | tee -a "$OUT/summary.txt"
  "${LT[@]}" --name "catch-up-$run" sync --mode changes --since "$token" --write-rate 0 \
    2>"$OUT/catch-up-$run.log" | tee -a "$OUT/summary.txt" || status=$?
done
echo "== live at $RATE writes/s" | tee -a "$OUT/summary.txt"
"${LT[@]}" --name live sync --mode changes --write-rate "$RATE" --duration "$DURATION" --warmup 5 \
  2>"$OUT/live.log" | tee -a "$OUT/summary.txt" || status=$?
grep -h "changes in\|acknowledged\|checked" "$OUT"/catch-up-*.log "$OUT/live.log" | tee -a "$OUT/summary.txt" || true
echo "reports in $OUT"
exit "$status"
