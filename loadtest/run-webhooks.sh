#!/usr/bin/env bash
# Measures webhook deliveries (`sync --mode webhooks`; the receiver is the load
# generator's, on loopback). Starts recruitd --webhooks-allow-insecure on a fresh store,
# prepares PEOPLE people, takes a token, imports the workspace twice more with every
# record's `updated_at` moved (each import changes every record: about 1.3M changes at
# 100,000 people), then:
#   1. latency: 10 endpoints while writes run at RATE/s (twice);
#   2. catch-up: one endpoint replayed from the token, changes/s (twice);
#   3. isolation: one endpoint alone, then beside one that hangs 10 s on every delivery;
#   4. lookups (1,000/s) and writes (100/s) alone, then while 10 endpoints catch up from
#      the token (the receiving load generator scheduled as idle work, `chrt --idle`, or
#      at nice 19 where that is refused: it stands for integrators' machines, which are
#      not this one);
#   5. receiver faults: 10 endpoints, a third of deliveries answered 500, 3% answered
#      after 11 s, 5% cut off without an answer, writes at 200/s for 30 s, and the
#      server killed (kill -9) and started again twice.
# Every delivery is checked (signature, order, repeats), every acknowledged write must
# reach every endpoint, and the first endpoint's records are compared with GET.
#
# Settings (environment): PEOPLE (100000), RATE (500), STORE (sqlite, or a postgres://
# URL: a fresh database named recruitd_webhooks), OUT (bench-results/webhooks-<UTC
# time>), API_PORT (18483), ADMIN_PORT (18484), CARGO_TARGET_DIR (target).
set -euo pipefail
cd "$(dirname "$0")/.."

PEOPLE="${PEOPLE:-100000}"
RATE="${RATE:-500}"
STORE="${STORE:-sqlite}"
OUT="${OUT:-bench-results/webhooks-$(date -u +%Y%m%dT%H%M%SZ)}"
API_PORT="${API_PORT:-18483}"
ADMIN_PORT="${ADMIN_PORT:-18484}"
SERVE_ARGS=(--webhooks-allow-insecure)

source loadtest/common.sh
lt_serve_prepared webhooks
token="$(lt_first_token)"
for stamp in 12 13; do
  sed -E "s/\"updated_at\":\"[^\"]*\"/\"updated_at\":\"2026-11-28T$stamp:00:00.000Z\"/g" \
    "$snapshot" >"$DATA/moved.json"
  "${LT[@]}" prepare --people "$PEOPLE" --snapshot "$DATA/moved.json" "${ADMIN[@]}" 2>&1 |
    tee -a "$OUT/prepare.log"
done
sync
sleep 10

status=0
hooks() { "${LT[@]}" --name "$1" sync --mode webhooks "${@:2}" 2>"$OUT/$1.log" | tee -a "$OUT/summary.txt" || status=$?; }
for run in 1 2; do
  hooks "latency-$run" --endpoints 10 --write-rate "$RATE" --duration 20 --warmup 3
done
for run in 1 2; do
  hooks "catch-up-$run" --endpoints 1 --write-rate 0 --since "$token"
done
hooks isolation-alone --endpoints 1 --write-rate "$RATE" --duration 20 --warmup 3
hooks isolation-hanging --endpoints 2 --hanging 1 --write-rate "$RATE" --duration 20 --warmup 3

MIXED=(mixed --lookup-rate 1000 --write-rate 100 --sync-rate 0 --full-sync-every 0 --duration 30 --warmup 5)
"${LT[@]}" --name under-idle "${MIXED[@]}" 2>"$OUT/under-idle.log" | tee -a "$OUT/summary.txt" || status=$?
idle=(chrt --idle 0)
"${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
"${idle[@]}" "${LT[@]}" --name under-catch-up sync --mode webhooks --endpoints 10 --write-rate 0 \
  --since "$token" >"$OUT/under-catch-up.out" 2>"$OUT/under-catch-up.log" &
catching_up=$!
sleep 8
"${LT[@]}" --name under-busy "${MIXED[@]}" 2>"$OUT/under-busy.log" | tee -a "$OUT/summary.txt" || status=$?
kill "$catching_up" 2>/dev/null || true
wait "$catching_up" 2>/dev/null || true
# The endpoints of the stopped catch-up are left registered: removed, as it would have.
key="$(cat "$DATA/loadtest.key")"
for id in $(curl -sS --cacert "$DATA/tls/cert.pem" -H "Authorization: Bearer $key" \
  "https://127.0.0.1:$API_PORT/v1/webhooks" | grep -o '"id":"whe_[^"]*"' | cut -d'"' -f4); do
  curl -sS --cacert "$DATA/tls/cert.pem" -H "Authorization: Bearer $key" -X DELETE \
    "https://127.0.0.1:$API_PORT/v1/webhooks/$id" >/dev/null
done

# Receiver faults, and the server killed twice under them. Write errors while it is
# down are expected; the deliveries' checks are what this run is for.
"${LT[@]}" --name faults sync --mode webhooks --endpoints 10 --write-rate 200 --duration 30 \
  --warmup 2 --fail-share 0.33 --slow-share 0.03 --reset-share 0.05 \
  >"$OUT/faults.out" 2>"$OUT/faults.log" &
faults=$!
for at in 12 8; do
  sleep "$at"
  kill -9 "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "killed the server at $(date -u +%T)" | tee -a "$OUT/summary.txt"
  lt_start_server webhooks
done
wait "$faults" || true
cat "$OUT/faults.out" >>"$OUT/summary.txt"
grep -h "changes/s\|writes delivered\|deliveries accepted\|checked" "$OUT"/*.log | tee -a "$OUT/summary.txt" || true
echo "reports in $OUT"
exit "$status"
