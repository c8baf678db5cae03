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
if [ -f "$build/src/plugins/legacy/understudy-legacy.so" ]; then
  echo "== replay: legacy decides, candidate shadows; divergences:"
  "$bin" replay --config scenarios/demo.config.json --divergences var/demo-divergences.jsonl
  cat var/demo-divergences.jsonl | cut -c1-200
fi
