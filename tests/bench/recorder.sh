#!/usr/bin/env bash
# Durable recording throughput and latency of `understudy serve` for 1 KiB
# signed Stripe callbacks, beside nginx answering `return 200` to the same
# load, both on loopback in the same run, driven by wrk.
# usage: tests/bench/recorder.sh [BUILD_DIR] [SECONDS]   (needs wrk, nginx)
set -euo pipefail
build=${1:-build}
secs=${2:-10}
cd "$(dirname "$0")/../.."
. tests/bench/wrk-lib.sh
for tool in wrk nginx openssl; do
  command -v $tool >/dev/null || { echo "needs $tool: apt-get install wrk nginx-light" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/understudy-recorder-XXXXXX")
cleanup() { kill $(cat "$dir/nginx.pid" 2>/dev/null) 2>/dev/null || true; kill "$srv" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
secret=whsec_bench_recorder
export UNDERSTUDY_STRIPE_SECRET=$secret UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

# nginx: one worker, answering 200 without reading further.
nginx_start "$dir" 'server { listen 127.0.0.1:18481; location / { return 200 "ok"; } }'

# understudy: the demo routes, a fresh log on this disk.
./"$build"/src/understudy serve --config scenarios/demo.config.json --listen 127.0.0.1:18482 \
  --log "$dir/events.db" --run "${RUN_DB:-$dir/run.db}" 2> "$dir/serve.log" &
srv=$!
wait_listening "$dir/serve.log"

signed_post "$dir" "$secret"

run() { # name url connections
  wrk -t2 -c"$3" -d"${secs}s" --latency -s "$dir/post.lua" "$2" > "$dir/$1.txt"
  local rps p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/$1.txt")
  p99=$(awk '$1=="99%" {print $2}' "$dir/$1.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/$1.txt")
  printf '%-10s c=%-3s %10s req/s   p99 %8s   non-2xx %s\n' "$1" "$3" "$rps" "$p99" "${non2xx:-0}"
}
echo "body: ${#body} bytes, wrk -t2 for ${secs}s per run, loopback, 2 cores shared with wrk"
run nginx http://127.0.0.1:18481/webhooks/stripe 64
run recorder http://127.0.0.1:18482/webhooks/stripe 64
run nginx-light http://127.0.0.1:18481/webhooks/stripe 4
run recorder-light http://127.0.0.1:18482/webhooks/stripe 4
kill -TERM "$srv"; wait "$srv" || true
recorded=$(./"$build"/src/understudy log stats --log "$dir/events.db" --json | sed 's/.*"events":\([0-9]*\).*/\1/')
./"$build"/src/understudy log verify --log "$dir/events.db" | head -1
echo "events in the log after both recorder runs: $recorded"
