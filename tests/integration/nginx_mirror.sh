#!/usr/bin/env bash
# Runs docs/deploy/nginx-mirror.conf, the configuration docs/deploy.md shows,
# in a real nginx from Debian: nginx in front of a primary, understudy as the
# mirror target. N signed callbacks through nginx are N verified events, each
# answered by the primary; with understudy stopped the primary's answers are
# the same. Also checks that the doc shows the file as it is.
# usage: nginx_mirror.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
conf_file=$src/docs/deploy/nginx-mirror.conf
nginx=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
if [ -z "$nginx" ]; then
  echo "nginx is not installed: run 'make test' (it installs it) or apt-get install nginx-light" >&2
  exit 1
fi
. "$src/tests/integration/common.sh"

# The doc's nginx block is the file, byte for byte.
python3 - "$src/docs/deploy.md" "$conf_file" <<'PY' || fail "docs/deploy.md does not show docs/deploy/nginx-mirror.conf as it is"
import sys
doc, conf = open(sys.argv[1]).read(), open(sys.argv[2]).read()
marker = "<!-- docs/deploy/nginx-mirror.conf -->\n```nginx\n"
at = doc.find(marker)
if at < 0:
    sys.exit("no nginx-mirror.conf block in the doc")
start = at + len(marker)
end = doc.find("```\n", start)
sys.exit(0 if doc[start:end] == conf else "the doc's block differs from the file")
PY

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export UNDERSTUDY_STRIPE_SECRET=whsec_nginx_mirror_test
export UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

# understudy, recording only what the mirror sends it.
write_test_config "$src" "$build" "$tmp/config.json"
"$bin" serve --config "$tmp/config.json" --listen 127.0.0.1:0 --log "$tmp/events.db" \
  --run "$tmp/run.db" 2> "$tmp/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_for "understudy serve did not start" "$tmp/serve.log" \
  grep -q 'listening on' "$tmp/serve.log"
understudy=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$tmp/serve.log" | head -1)

# The primary: answers every POST 200 with a digest of the body it got, so
# each answer shows it is the primary's, for that request.
cat > "$tmp/primary.py" <<'PY'
import hashlib, http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        out = ("primary " + hashlib.sha256(body).hexdigest()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("127.0.0.1:%d" % s.server_address[1])
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
python3 "$tmp/primary.py" "$tmp/primary.addr" &
pids+=($!)
wait_for "the primary did not start" /dev/null test -s "$tmp/primary.addr"
primary=$(cat "$tmp/primary.addr")

# nginx: its own prefix, logs and temp paths in $tmp, one process as this
# user; the file from docs/ with the placeholders filled in. The port is
# picked free and then bound by nginx: if something took it in between,
# another port is tried.
port_open() { python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),1)' "$1" 2>/dev/null; }
nginx_up() { port_open "$listen_port" || ! kill -0 "$nginx_pid" 2>/dev/null; }
mkdir -p "$tmp/nginx"
for attempt in 1 2 3 4 5; do
  listen_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  listen=127.0.0.1:$listen_port
  sed -e "s/@LISTEN@/$listen/" -e "s/@PRIMARY@/$primary/" -e "s/@UNDERSTUDY@/$understudy/" \
    "$conf_file" > "$tmp/understudy-mirror.conf"
  cat > "$tmp/nginx.conf" <<CONF
daemon off;
master_process off;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log info;
events { worker_connections 256; }
http {
    access_log $tmp/nginx-access.log;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    include $tmp/understudy-mirror.conf;
}
CONF
  "$nginx" -t -q -p "$tmp/nginx" -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" \
    || fail "nginx refuses the configuration: $(tail -5 "$tmp/nginx-error.log")"
  : > "$tmp/nginx-error.log"
  "$nginx" -p "$tmp/nginx" -e "$tmp/nginx-error.log" -c "$tmp/nginx.conf" &
  nginx_pid=$!
  pids+=("$nginx_pid")
  wait_for "nginx did not start" "$tmp/nginx-error.log" nginx_up
  grep -q 'bind() to' "$tmp/nginx-error.log" || { kill -0 "$nginx_pid" 2>/dev/null && break; }
  kill "$nginx_pid" 2>/dev/null || true
  [ "$attempt" = 5 ] && fail "nginx could not listen: $(tail -5 "$tmp/nginx-error.log")"
done

# Signs and posts callbacks through nginx; every answer must be the
# primary's for that body. Prints the event ids it sent.
cat > "$tmp/send.py" <<'PY'
import hashlib, hmac, http.client, json, os, sys, time
port, prefix, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
secret = os.environ["UNDERSTUDY_STRIPE_SECRET"].encode()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
for i in range(n):
    evt = "evt_%s_%03d" % (prefix, i)
    body = json.dumps({"id": evt, "type": "payment_intent.succeeded", "created": int(time.time()),
                       "data": {"object": {"id": "pi_%s_%03d" % (prefix, i), "amount": 1000 + i,
                                           "currency": "eur", "metadata": {"order_id": "o%d" % i}}}},
                      separators=(",", ":")).encode()
    t = str(int(time.time()))
    sig = hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    # Every tenth on its own connection, the rest kept alive.
    if i % 10 == 0:
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/webhooks/stripe", body,
                 {"Content-Type": "application/json", "Stripe-Signature": "t=%s,v1=%s" % (t, sig)})
    r = conn.getresponse()
    got = r.read().decode()
    want = "primary " + hashlib.sha256(body).hexdigest()
    if r.status != 200 or got != want:
        sys.exit("%s: answered %d %r, not the primary's 200 %r" % (evt, r.status, got, want))
    print(evt)
PY
n=50
python3 "$tmp/send.py" "$listen_port" mirrored "$n" > "$tmp/sent.txt" \
  || fail "a callback through nginx did not get the primary's answer"

# The copies arrive beside the answers: wait until all are recorded.
recorded() {
  "$bin" log stats --log "$tmp/events.db" --json 2>/dev/null \
    | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["events"] >= int(sys.argv[1]) else 1)' "$n"
}
wait_for "understudy did not record $n mirrored callbacks" "$tmp/serve.log" recorded
kill -TERM "$serve_pid"
wait "$serve_pid" || fail "understudy serve did not stop cleanly: $(cat "$tmp/serve.log")"

"$bin" log verify --log "$tmp/events.db" > "$tmp/verify.txt" || fail "log verify: $(cat "$tmp/verify.txt")"
"$bin" log export --log "$tmp/events.db" --derived --out "$tmp/export.jsonl"
python3 - "$tmp/export.jsonl" "$tmp/sent.txt" "$n" <<'PY' || fail "the log does not hold exactly the mirrored callbacks, verified"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sent = open(sys.argv[2]).read().split()
n = int(sys.argv[3])
if len(rows) != n:
    sys.exit("%d events for %d callbacks" % (len(rows), n))
bad = [r for r in rows if r["signature"] != "verified"]
if bad:
    sys.exit("signature not verified: %r" % bad[0])
ids = [r["event_id"] for r in rows]
if sorted(ids) != sorted(sent):
    sys.exit("the event ids differ from those sent")
if any(r["target"] != "/webhooks/stripe" or r["method"] != "POST" for r in rows):
    sys.exit("a copy lost its method or URI")
PY
"$bin" log stats --log "$tmp/events.db" --json > "$tmp/stats.json"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["signatures"]=={"verified":int(sys.argv[2])} else "signatures: %r" % s["signatures"])' \
  "$tmp/stats.json" "$n" || fail "log stats does not count $n verified signatures"

# understudy is down: the primary's answers are the same, each of them.
python3 "$tmp/send.py" "$listen_port" unmirrored 20 > /dev/null \
  || fail "with understudy stopped, a callback did not get the primary's answer"
grep -q 'connect() failed' "$tmp/nginx-error.log" \
  || fail "nginx did not try the mirror while understudy was stopped"
echo "ok: $n callbacks through $("$nginx" -v 2>&1 | sed 's/.*: //') mirror: $n verified events," \
  "the primary answered each; with understudy stopped the primary answered 20 of 20"
