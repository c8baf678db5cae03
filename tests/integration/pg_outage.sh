#!/usr/bin/env bash
# A recorder whose PostgreSQL goes away: while the server is down every
# callback is answered 503 (nothing acknowledged that is not committed);
# once it is back the recorder connects again by itself and records, on the
# same stream, and the log verifies.
# usage: pg_outage.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
. "$src/tests/integration/common.sh"
. "$src/tests/integration/pg_lib.sh"
pg_test_begin whsec_pg_outage_test
"$bin" serve --config "$tmp/config.json" --listen 127.0.0.1:0 --log "$url" 2> "$tmp/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_for "serve did not start" "$tmp/serve.log" grep -q 'listening on' "$tmp/serve.log"
addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$tmp/serve.log" | head -1)

# An unsigned callback: recorded (evidence first), answered 401.
post() {
  python3 - "$addr" "$1" <<'PY'
import http.client, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request("POST", "/webhooks/stripe", '{"id":"evt_%s"}' % sys.argv[2], {"Content-Type": "application/json"})
print(c.getresponse().status)
PY
}
[ "$(post before)" = 401 ] || fail "a callback before the outage was not recorded"
pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop > /dev/null
for i in 1 2; do
  got=$(post "down$i")
  [ "$got" = 503 ] || fail "with the database down, a callback was answered $got, not 503"
done
pg_as_owner "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1" start > /dev/null \
  || fail "the server did not start again"
for i in 1 2; do
  got=$(post "after$i")
  [ "$got" = 401 ] || fail "after the outage, a callback was answered $got: the recorder did not reconnect"
done
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "serve did not stop cleanly: $(tail -5 "$tmp/serve.log")"
"$bin" log verify --log "$url" > "$tmp/verify.txt" || fail "verify: $(cat "$tmp/verify.txt")"
grep -q "^ok: 3 events verified" "$tmp/verify.txt" || fail "verify said: $(cat "$tmp/verify.txt")"
grep -q "^stream 1 (.*): 3 events" "$tmp/verify.txt" || fail "not one stream: $(cat "$tmp/verify.txt")"
"$bin" log export --log "$url" | python3 -c '
import json, sys
ids = [json.loads(json.loads(l)["body"])["id"] for l in sys.stdin]
sys.exit(0 if ids == ["evt_before", "evt_after1", "evt_after2"] else "logged: %r" % ids)' \
  || fail "the log does not hold exactly the callbacks answered 401"
echo "ok: 503 while the database was down, recording again on the same stream once it was back"
