#!/usr/bin/env bash
# Two `serve` recorders on one PostgreSQL log (a server this test starts),
# under concurrent signed load; one is SIGKILLed mid-load. Then: every
# callback either recorder acknowledged (2xx) is in the log exactly once,
# the log verifies (each recorder's stream to its head), the survivor kept
# recording after the kill, and its live runner decided every event of the
# log, the other recorder's too.
# usage: pg_recorders.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
. "$src/tests/integration/common.sh"
. "$src/tests/integration/pg_lib.sh"
pg_test_begin whsec_pg_recorders_test

# Recorder a records only; recorder b also runs the live runner on the log.
start_serve() { # name [--run DB]
  local name=$1; shift
  "$bin" serve --config "$tmp/config.json" --listen 127.0.0.1:0 --log "$url" "$@" \
    2> "$tmp/serve-$name.log" &
  pids+=($!)
  eval "pid_$name=$!"
  wait_for "recorder $name did not start" "$tmp/serve-$name.log" \
    grep -q 'listening on' "$tmp/serve-$name.log"
  eval "addr_$name=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$tmp/serve-$name.log" | head -1)"
}
start_serve a
start_serve b --run "$tmp/run-b.db"

# Signed callbacks on 4 connections until the stop file appears (or the
# recorder is gone); each acknowledged event id is written, flushed, to
# the acks file: an id there was answered 2xx.
cat > "$tmp/load.py" <<'PY'
import hashlib, hmac, http.client, json, os, sys, threading, time
addr, prefix, acks, stop = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
host, port = addr.rsplit(":", 1)
secret = os.environ["UNDERSTUDY_STRIPE_SECRET"].encode()
out = open(acks, "a", buffering=1)
lock = threading.Lock()
def worker(w):
    conn, i = None, 0
    while not os.path.exists(stop):
        evt = "evt_%s_%d_%d" % (prefix, w, i)
        i += 1
        body = json.dumps({"id": evt, "type": "payment_intent.succeeded", "created": int(time.time()),
                           "data": {"object": {"id": "pi_" + evt, "amount": 1000 + i, "currency": "eur",
                                               "metadata": {"order_id": "o_" + evt}}}},
                          separators=(",", ":")).encode()
        t = str(int(time.time()))
        sig = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
            conn.request("POST", "/webhooks/stripe", body,
                         {"Content-Type": "application/json", "Stripe-Signature": "t=%s,v1=%s" % (t, sig)})
            r = conn.getresponse()
            r.read()
        except (OSError, http.client.HTTPException):
            return  # the recorder is gone: what it acknowledged is written
        if 200 <= r.status < 300:
            with lock:
                out.write(evt + "\n")
ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
for t in ts: t.start()
for t in ts: t.join()
PY
acked() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
python3 "$tmp/load.py" "$addr_a" a "$tmp/acks-a.txt" "$tmp/stop" &
load_a=$!
pids+=("$load_a")
python3 "$tmp/load.py" "$addr_b" b "$tmp/acks-b.txt" "$tmp/stop" &
pids+=($!)
wait_for "recorder a acknowledged too little" "$tmp/serve-a.log" acked "$tmp/acks-a.txt" 300
wait_for "recorder b acknowledged too little" "$tmp/serve-b.log" acked "$tmp/acks-b.txt" 300

# Mid-load: a dies without a word; b goes on under its load.
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null || true
wait "$load_a" 2>/dev/null || true
b_at_kill=$(wc -l < "$tmp/acks-b.txt")
wait_for "recorder b stopped recording after a was killed" "$tmp/serve-b.log" \
  acked "$tmp/acks-b.txt" $((b_at_kill + 300))
touch "$tmp/stop"
wait "${pids[-1]}" 2>/dev/null || true

# b's runner catches up with the whole log, then b stops cleanly.
head=$("$bin" log stats --log "$url" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_seq"])')
decided() {
  python3 - "$tmp/run-b.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
try:
    row = db.execute("SELECT last_seq FROM cursor WHERE id = 1").fetchone()
except sqlite3.Error:
    row = None
sys.exit(0 if row and int(row[0]) >= int(sys.argv[2]) else 1)
PY
}
wait_for "b's runner did not decide through seq $head" "$tmp/serve-b.log" decided "$head"
kill -TERM "$pid_b"
wait "$pid_b" || fail "recorder b did not stop cleanly: $(tail -5 "$tmp/serve-b.log")"

"$bin" log verify --log "$url" --json > "$tmp/verify.json" \
  || fail "the log does not verify: $(cat "$tmp/verify.json")"
"$bin" log export --log "$url" --derived --out "$tmp/export.jsonl"
python3 - "$tmp/export.jsonl" "$tmp/acks-a.txt" "$tmp/acks-b.txt" "$tmp/verify.json" "$b_at_kill" \
  "$pid_a" "$pid_b" <<'PY' \
  || fail "acknowledged events and the log disagree"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ids = [r["event_id"] for r in rows]
if len(ids) != len(set(ids)):
    sys.exit("an event is in the log twice")
logged = set(ids)
for f in sys.argv[2:4]:
    acked = open(f).read().split()
    missing = [e for e in acked if e not in logged]
    if missing:
        sys.exit("%s: %d acknowledged events are not in the log, e.g. %s" % (f, len(missing), missing[0]))
bad = [r for r in rows if r["signature"] != "verified"]
if bad:
    sys.exit("signature not verified: %r" % bad[0]["event_id"])
v = json.load(open(sys.argv[4]))
if not v["ok"] or v["checked"] != len(rows) or len(v["streams"]) != 2:
    sys.exit("verify: %r" % v)
if sum(s["events"] for s in v["streams"]) != len(rows):
    sys.exit("the streams do not add up to the log")
# b went on after a was killed: its stream ends past a's.
by_pid = {s["label"].rsplit(" ", 1)[1]: s for s in v["streams"]}
a, b = by_pid[sys.argv[6]], by_pid[sys.argv[7]]
if not b["head_seq"] > a["head_seq"]:
    sys.exit("the survivor's stream ends before the killed one's: %r" % v["streams"])
print("ok: %d events (%d from the killed recorder, %d from the survivor, %s of them after the kill)"
      % (len(rows), a["events"], b["events"], len(open(sys.argv[3]).read().split()) - int(sys.argv[5])))
PY
