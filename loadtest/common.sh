# Shared by the measurement scripts beside it (sourced, after each has set its own
# defaults): the build, a temporary data dir removed on exit, a fresh PostgreSQL database
# when STORE names a server, starting and stopping one recruitd, a workspace prepared on
# it, and the change feed's token of its first page.
#
# Expects: OUT, API_PORT, ADMIN_PORT (set by the caller); STORE for lt_fresh_database;
# PEOPLE for lt_serve_prepared; PHASES for phase; CARGO_TARGET_DIR when the build is not to go to target/.
# Sets: OUT (made absolute), BIN, DATA, server_pid, store (the store arguments), LT (the
# loadtest binary's arguments against the server on API_PORT) and ADMIN (its admin
# interface, for the loadtest's prepare).

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cargo build --release -p recruitd -p recruitd-loadtest
BIN="$CARGO_TARGET_DIR/release"

DATA="$(mktemp -d)"
server_pid=""
LT=("$BIN/recruitd-loadtest" --data-dir "$DATA" --url "https://127.0.0.1:$API_PORT" --out "$OUT")
ADMIN=(--admin-url "http://127.0.0.1:$ADMIN_PORT")

# Whether PHASES (a space-separated list) names the phase $1.
phase() { [[ " ${PHASES:-} " == *" $1 "* ]]; }
lt_cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$DATA"
}
trap lt_cleanup EXIT

store=()
# A fresh database named recruitd_$1 on the server STORE names (nothing for SQLite).
lt_fresh_database() {
  if [ "$STORE" != sqlite ]; then
    psql "${STORE%/*}/postgres" -qc "DROP DATABASE IF EXISTS recruitd_$1 WITH (FORCE)" \
      -c "CREATE DATABASE recruitd_$1"
    store=(--database-url "${STORE%/*}/recruitd_$1")
  fi
}

# Creating files where many were just deleted (an earlier run's data dir) is several
# times slower on ext4 while the freed inodes' table blocks are cached: flush, and drop
# the caches when allowed, so that a run does not measure the previous one's cleanup.
lt_drop_caches() {
  sync
  echo 3 2>/dev/null >/proc/sys/vm/drop_caches || true
}

# Starts recruitd on DATA (its output appended to $OUT/server-$1.out and .log), with
# the caller's SERVE_ARGS (an array) after serve's own.
lt_start_server() {
  "$BIN/recruitd" --data-dir "$DATA" "${store[@]}" serve \
    --listen "127.0.0.1:$API_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" \
    ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} >>"$OUT/server-$1.out" 2>>"$OUT/server-$1.log" &
  server_pid=$!
}

# Waits until the server has written its admin token and TLS pair; fails if it stops
# or takes over a minute.
lt_wait_started() {
  for _ in $(seq 1 600); do
    [ -s "$DATA/admin-token" ] && [ -s "$DATA/tls/cert.pem" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "the server stopped; see $OUT" >&2; exit 1; }
    sleep 0.1
  done
  echo "the server did not start within a minute; see $OUT" >&2
  exit 1
}

lt_stop_server() {
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

# Prints the change-feed token of the first page of a list on the server on API_PORT (a
# point before whatever is written next); fails when the page carries none.
lt_first_token() {
  local token
  token="$(curl -sS --cacert "$DATA/tls/cert.pem" -H "Authorization: Bearer $(cat "$DATA/loadtest.key")" \
    "https://127.0.0.1:$API_PORT/v1/users?limit=1" | grep -o '"changes_since":"[^"]*"' | cut -d'"' -f4)"
  [ -n "$token" ] || { echo "no changes_since on the first page" >&2; return 1; }
  echo "$token"
}

# A fresh database and data dir named $1, the server started on them and a workspace of
# PEOPLE people prepared through its admin interface (logged to $OUT/prepare.log).
# Sets: snapshot (the prepared workspace's snapshot file).
lt_serve_prepared() {
  lt_fresh_database "$1"
  lt_start_server "$1"
  lt_wait_started
  "${LT[@]}" prepare --people "$PEOPLE" "${ADMIN[@]}" 2>&1 | tee "$OUT/prepare.log"
  snapshot="$DATA/workspace-$PEOPLE-seed1.json"
}
