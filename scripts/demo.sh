#!/usr/bin/env bash
# The main job on the bundled sample traffic: import it into a fresh,
# hash-chained log, verify the chain, show what it holds, and replay it
# through the legacy and the candidate plugins.
set -euo pipefail
. "$(dirname "$0")/demo-env.sh"
rm -rf var/demo-events.db* var/demo-run.db*
mkdir -p var
echo "== import the sample traffic"
"$bin" log import --config scenarios/demo.config.json scenarios/sample.jsonl
echo "== verify the hash chain"
"$bin" log verify --log var/demo-events.db
echo "== what the log holds"
"$bin" log stats --log var/demo-events.db
echo "== live: serve on 127.0.0.1, drive every scenario through it over HTTP"
rm -rf var/demo-live-*
"$bin" serve --config scenarios/demo.config.json --listen 127.0.0.1:0 \
  --log var/demo-live-events.db --run var/demo-live-run.db 2> var/demo-live-serve.log &
serve_pid=$!
for _ in $(seq 100); do grep -q 'listening on' var/demo-live-serve.log && break; sleep 0.05; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' var/demo-live-serve.log)
"$bin" drive --config scenarios/demo.config.json --target "http://127.0.0.1:$port" \
  --speed 20000 scenarios/[0-9]*.json > var/demo-live-drive.txt
tail -1 var/demo-live-drive.txt
kill -TERM "$serve_pid"
wait "$serve_pid"
"$bin" drive --config scenarios/demo.config.json --check var/demo-live-run.db --live \
  scenarios/[0-9]*.json | tail -3
"$bin" report --run var/demo-live-run.db --out reports/demo-live > /dev/null
echo "per-request results: $PWD/var/demo-live-drive.txt; report: $PWD/reports/demo-live/index.html"

./scripts/demo-upstream.sh "$build"

echo "== replay the sample: legacy decides, candidate shadows"
"$bin" replay --config scenarios/demo.config.json
echo "== report"
rm -rf reports/demo
"$bin" report --run var/demo-run.db --out reports/demo --triage scenarios/demo.triage.json
cat reports/demo/summary.md
echo
echo "== gate (scenarios/demo.triage.json accepts three classes; the rest are open)"
set +e
"$bin" gate --run var/demo-run.db --triage scenarios/demo.triage.json
status=$?
set -e
echo
echo "report: $PWD/reports/demo/index.html"
echo "gate exit status: $status ($( [ $status = 0 ] && echo 'cutover may proceed' || echo 'not ready for cutover' ))"
