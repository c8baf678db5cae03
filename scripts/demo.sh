#!/usr/bin/env bash
# The main job on the bundled sample traffic: import it into a fresh,
# hash-chained log, verify the chain, show what it holds, and replay it
# through the legacy and the candidate plugins.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bin=$build/src/understudy
set -a
. scenarios/demo.env
set +a
rm -rf var/demo-events.db* var/demo-run.db*
mkdir -p var
echo "== import the sample traffic"
"$bin" log import --config scenarios/demo.config.json scenarios/sample.jsonl
echo "== verify the hash chain"
"$bin" log verify --log var/demo-events.db
echo "== what the log holds"
"$bin" log stats --log var/demo-events.db
echo "== replay: legacy decides, candidate shadows"
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
