#!/usr/bin/env bash
# The demo's run with the real legacy in line: the example service
# (src/plugins/examples/service.py, its own SQLite database) plays
# production's handler, `serve --respond upstream` stands in front of it,
# and every scenario is driven through serve over HTTP. Each answer is the
# service's, recorded as the legacy's decision before it is relayed; the C
# candidate shadows it; then the report and the gate.
#
# The service has the candidate's rules and both read the same event time
# (Understudy-Received-At), so the run should hold no divergence: what is
# shown is the path (forwarded once, answered as it came, recorded), not a
# finding.
set -euo pipefail
. "$(dirname "$0")/demo-env.sh"
rm -rf var/demo-upstream-* reports/demo-upstream
mkdir -p var

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
}
trap stop_all EXIT

# Waits for "listening on HOST:PORT" in file $1 and prints PORT.
port_of() {
  for _ in $(seq 200); do
    grep -q 'listening on' "$1" && break
    sleep 0.05
  done
  sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$1" | head -1
}

echo "== upstream: the example service as the legacy, serve --respond upstream in front"
python3 src/plugins/examples/service.py --listen 127.0.0.1:0 \
  --db var/demo-upstream-service.db > var/demo-upstream-service.log 2>&1 &
pids+=($!)
service_port=$(port_of var/demo-upstream-service.log)
[ -n "$service_port" ] || { cat var/demo-upstream-service.log; exit 1; }

# The demo's config with the legacy as a url plugin. It lives in var/, as
# deep as scenarios/, so its relative paths (the candidate's .so) still hold.
python3 - "$service_port" > var/demo-upstream.config.json << 'EOF'
import json, sys
cfg = json.load(open("scenarios/demo.config.json"))
cfg["plugins"]["legacy"] = {"url": f"http://127.0.0.1:{sys.argv[1]}", "timeout_ms": 2000}
json.dump(cfg, sys.stdout, indent=2)
EOF

"$bin" serve --config var/demo-upstream.config.json --listen 127.0.0.1:0 \
  --respond upstream --log var/demo-upstream-events.db --run var/demo-upstream-run.db \
  2> var/demo-upstream-serve.log &
serve_pid=$!
pids+=("$serve_pid")
port=$(port_of var/demo-upstream-serve.log)
[ -n "$port" ] || { cat var/demo-upstream-serve.log; exit 1; }
echo "service on 127.0.0.1:$service_port, serve --respond upstream on 127.0.0.1:$port"

"$bin" drive --config var/demo-upstream.config.json --target "http://127.0.0.1:$port" \
  --speed 20000 scenarios/[0-9]*.json > var/demo-upstream-drive.txt
tail -1 var/demo-upstream-drive.txt
kill -TERM "$serve_pid"
wait "$serve_pid"

"$bin" log verify --log var/demo-upstream-events.db | tail -1
"$bin" report --run var/demo-upstream-run.db --out reports/demo-upstream > /dev/null
set +e
"$bin" gate --run var/demo-upstream-run.db --triage scenarios/demo.triage.json
status=$?
set -e
echo "answers as the service gave them: $PWD/var/demo-upstream-drive.txt;" \
  "report: $PWD/reports/demo-upstream/index.html"
echo "gate exit status: $status"
exit "$status"
