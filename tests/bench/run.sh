#!/usr/bin/env bash
# Runs every benchmark with its baseline in the same run. Timings belong
# here, never in a test's pass/fail. usage: tests/bench/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/../.."
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/understudy-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "### event log append (on $(df --output=source "$dir" | tail -1))"
"$build/tests/bench_log_append" "$dir" 7
echo
echo "### event derivation"
"$build/tests/bench_derive" tests/data/config.json 7
if [ -x "$build/tests/bench_replay" ]; then
  echo
  echo "### replay"
  "$build/tests/bench_replay" "$dir" "$build" "${REPLAY_EVENTS:-1000000}"
fi
echo
echo "### replay: the whole log beside two partitions at once"
./tests/bench/partition.sh "$build" "${PARTITION_EVENTS:-200000}" 3
echo
echo "### replay --legacy-from beside a full replay"
./tests/bench/legacy_from.sh "$build" "${LEGACY_FROM_EVENTS:-200000}" 3
if [ -x "$build/tests/bench_url" ]; then
  echo
  echo "### url candidate beside a plain libcurl loop (service answering at once, then in 1 ms)"
  "$build/tests/bench_url" . "$build" "$dir" "${URL_EVENTS:-20000}" 0 3
  "$build/tests/bench_url" . "$build" "$dir" "${URL_SLOW_EVENTS:-3000}" 1000 3
fi
echo
echo "### file to report (import + replay + report) beside a python3 sqlite3 baseline"
ROUNDS=${PIPELINE_ROUNDS:-3} ./tests/bench/pipeline.sh "$build" "${PIPELINE_EVENTS:-200000}"
echo
echo "### state store writes beside bare SQLite inserts"
"$build/tests/bench_store" 4000000 3
if [ -x "$build/tests/bench_report" ]; then
  echo
  echo "### report"
  "$build/tests/bench_report" "$dir" "$build" "${REPORT_EVENTS:-1000000}"
fi
if [ -x "$build/tests/bench_coverage" ]; then
  echo
  echo "### coverage count over a generated week"
  n=${COVERAGE_EVENTS:-1000000}
  ( set -a; . scenarios/demo.env; set +a
    "$build/src/understudy" gen --config tests/data/config.json --events "$n" --seed 1 \
      --out "$dir/cov.jsonl" --quiet
    "$build/src/understudy" log import --config tests/data/config.json --log "$dir/cov.db" \
      --quiet "$dir/cov.jsonl" >/dev/null
    "$build/tests/bench_coverage" "$dir/cov.db" tests/data/config.json 3 )
fi
if command -v wrk >/dev/null && command -v nginx >/dev/null; then
  echo
  echo "### recording beside nginx"
  ./tests/bench/recorder.sh "$build" 10
else
  echo
  echo "### recording: skipped (apt-get install wrk nginx-light, then tests/bench/recorder.sh)"
fi
