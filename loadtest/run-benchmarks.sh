#!/usr/bin/env bash
# Reproduces the figures of docs/benchmarks.md from scratch: builds
# release binaries, starts recruitd on a fresh SQLite data dir, generates and imports
# 100,000 people, then runs each scenario (and the PostgreSQL baseline) and leaves the
# JSON reports, SVG charts, server log and a summary in one directory.
#
# Settings (environment): PEOPLE (100000), OUT (bench-results/<UTC time>), PG_URL
# (postgres://postgres@127.0.0.1:5432/loadbase; created when missing), API_PORT (18443),
# ADMIN_PORT (18444), WORKERS (server HTTPS workers; default one per CPU), MIXED_SECS
# (600), CARGO_TARGET_DIR (target); QUICK=1 (or --quick) shortens every run to a few
# seconds (a check of the script itself, not a measurement); RUNS="lookup-open-5000 sync" runs only the
# runs named (default: all).
#
# Client and server share the machine, so note what else runs on it: the reports record
# the load average before and after each run.
set -euo pipefail
cd "$(dirname "$0")/.."
# `--quick` is QUICK=1.
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done

PEOPLE="${PEOPLE:-100000}"
OUT="${OUT:-bench-results/$(date -u +%Y%m%dT%H%M%SZ)}"
PG_URL="${PG_URL:-postgres://postgres@127.0.0.1:5432/loadbase}"
API_PORT="${API_PORT:-18443}"
ADMIN_PORT="${ADMIN_PORT:-18444}"
if [ "${QUICK:-0}" = 1 ]; then long=3 short=2 warm_long=1 warm_short=1; MIXED_SECS="${MIXED_SECS:-5}"
else long=60 short=30 warm_long=10 warm_short=5; MIXED_SECS="${MIXED_SECS:-600}"; fi

source loadtest/common.sh

# The baseline's database (its own, so the schema it replaces disturbs nothing else).
pg_db="${PG_URL##*/}"
pg_server="${PG_URL%/*}/postgres"
if ! psql "$pg_server" -Atc "SELECT 1 FROM pg_database WHERE datname = '$pg_db'" | grep -q 1; then
  psql "$pg_server" -c "CREATE DATABASE \"$pg_db\""
fi

sampler_pid=""
trap 'if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2>/dev/null || true; fi; lt_cleanup' EXIT

workers=()
if [ -n "${WORKERS:-}" ]; then workers=(--workers "$WORKERS"); fi
"$BIN/recruitd" --data-dir "$DATA" serve \
  --listen "127.0.0.1:$API_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" "${workers[@]}" \
  >"$OUT/server.out" 2>"$OUT/server.log" &
server_pid=$!
lt_wait_started

# What else the machine did meanwhile: load average and the busiest processes; and the
# server's resident memory.
(while true; do
  echo "$(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg) | recruitd rss $(ps -o rss= -p "$server_pid" | tr -d ' ') KiB | $(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | tr -s ' ' | tr '\n' ';')"
  sleep 10
done) >"$OUT/machine.log" 2>&1 &
sampler_pid=$!

"${LT[@]}" prepare --people "$PEOPLE" --admin-url "http://127.0.0.1:$ADMIN_PORT" 2>&1 | tee "$OUT/prepare.log"

status=0
run() {
  local name="$1"; shift
  if [ -n "${RUNS:-}" ] && [[ " $RUNS " != *" $name "* ]]; then return 0; fi
  echo "== $name: $*" | tee -a "$OUT/summary.txt"
  # A run with errors exits 2 but still writes its report; keep going, remember it.
  "${LT[@]}" --name "$name" "$@" 2>"$OUT/$name.log" | tee -a "$OUT/summary.txt" || status=$?
}

# Lookups at a fixed arrival rate (coordinated-omission corrected), then the same
# schedule as SQL against PostgreSQL.
run lookup-open-5000 lookup --rate 5000 --duration "$long" --warmup "$warm_long" --baseline-postgres "$PG_URL"
# Maximum lookup throughput (closed loop), recruitd and PostgreSQL.
run lookup-closed lookup --concurrency 32 --duration "$short" --warmup "$warm_short" --baseline-postgres "$PG_URL"
# Full syncs of every entity at limit=500 plus incremental rounds, and the keyset baseline.
run sync sync --streams 3 --duration "$short" --warmup "$warm_short" --baseline-postgres "$PG_URL"
# Writes at a fixed rate (SQLite, fsync on commit, group commit).
run write write --rate 500 --duration "$short" --warmup "$warm_short"
# A day at the agency: all three at once for MIXED_SECS.
run mixed mixed --duration "$MIXED_SECS" --warmup "$warm_long" \
  --lookup-rate 200 --write-rate 40 --sync-rate 2 --full-sync-every 300

echo "reports in $OUT"
exit "$status"
