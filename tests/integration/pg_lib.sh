# A PostgreSQL server of the test's own, from Debian's postgresql package:
# initdb and pg_ctl in a temporary folder, run as the postgres user (initdb
# refuses root), listening on 127.0.0.1 on a free port and on a unix socket
# in that folder only. Sourced by the PostgreSQL tests and tests/bench/pg.sh.
#
#   pg_start            starts it: PG_DIR, PG_PORT, PG_HOST set
#   pg_stop             stops it and removes PG_DIR (call it from a trap)
#   pg_admin SQL...     runs SQL as the superuser (psql, stops on an error)
#   pg_make_log NAME    a database NAME owned by a new login role NAME (not a
#                       superuser, as the log's user should be); prints its URL
#
# Without the server binaries it fails (a test that needs it must fail, not
# skip): `make test` installs postgresql and libpq-dev.

pg_bindir() {
  local d
  d=$(pg_config --bindir 2>/dev/null || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return; }
  done
  echo "PostgreSQL's server is not installed: run 'make test' (it installs it) or" \
    "apt-get install postgresql libpq-dev" >&2
  return 1
}

# As the postgres user when we are root (initdb and postgres refuse root).
pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_start() {
  local bin
  bin=$(pg_bindir) || return 1
  PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/understudy-pg-XXXXXX")
  chmod 755 "$PG_DIR"
  [ "$(id -u)" = 0 ] && { pg_as_owner true; chown postgres "$PG_DIR"; }
  pg_as_owner "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 \
    --locale=C.UTF-8 > "$PG_DIR/initdb.log" 2>&1 \
    || { echo "initdb failed: $(tail -5 "$PG_DIR/initdb.log")" >&2; return 1; }
  PG_HOST=127.0.0.1
  local attempt
  for attempt in 1 2 3 4 5; do
    PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if pg_as_owner "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
        -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=on" start \
        > "$PG_DIR/pg_ctl.log" 2>&1; then
      PG_BIN=$bin
      return 0
    fi
  done
  echo "the PostgreSQL server did not start: $(tail -5 "$PG_DIR/server.log" 2>/dev/null)" >&2
  return 1
}

pg_stop() {
  [ -n "${PG_DIR:-}" ] || return 0
  if [ -n "${PG_BIN:-}" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
    pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop > /dev/null 2>&1 || true
  fi
  rm -rf "$PG_DIR"
  PG_DIR=
}

pg_admin() {
  psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U postgres -d "${PG_ADMIN_DB:-postgres}" "$@"
}

pg_make_log() {
  pg_admin -c "CREATE ROLE $1 LOGIN" -c "CREATE DATABASE $1 OWNER $1" >&2 || return 1
  echo "postgresql://$1@$PG_HOST:$PG_PORT/$1"
}

# The start of a test of a log in PostgreSQL (after common.sh, with src and
# build set): a folder $tmp, a server, the log's database $url,
# the signing secrets (the Stripe one is SECRET), tests/data/config.json as
# $tmp/config.json, and a trap that SIGKILLs what the test put in pids,
# stops the server and removes $tmp, however the test ends.
pg_test_begin() { # SECRET
  tmp=$(mktemp -d)
  pids=()
  trap pg_test_end EXIT
  pg_start || fail "no PostgreSQL server"
  url=$(pg_make_log ustlog) || fail "cannot make the log's database"
  export UNDERSTUDY_STRIPE_SECRET=$1
  export UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
  write_test_config "$src" "$build" "$tmp/config.json"
}

pg_test_end() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pg_stop
  rm -rf "$tmp"
}
