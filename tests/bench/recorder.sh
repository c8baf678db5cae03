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
needs "wrk nginx-light" wrk nginx openssl curl
wrk_begin recorder whsec_bench_recorder
cleanup() { kill $(cat "$dir/nginx.pid" 2>/dev/null) 2>/dev/null || true; kill "$srv" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# nginx: one worker, answering 200 without reading further.
nginx_start "$dir" 'server { listen 127.0.0.1:18481; location / { return 200 "ok"; } }'

# understudy: the demo routes, a fresh log on this disk.
./"$build"/src/understudy serve --config scenarios/demo.config.json --listen 127.0.0.1:18482 \
  --admin-listen 127.0.0.1:18483 --log "$dir/events.db" --run "${RUN_DB:-$dir/run.db}" 2> "$dir/serve.log" &
srv=$!
wait_listening "$dir/serve.log"

signed_post "$dir" "$secret"

tick=$(getconf CLK_TCK)
# CPU ticks (user + system) of serve and of its children (the isolated
# candidate), read from /proc: the figure a shared machine leaves intact.
serve_ticks() {
  local t=0 k
  for k in "$srv" $(pgrep -P "$srv" || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$k/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
# The live runner's lag in events, from serve's admin listener.
runner_lag() {
  curl -s http://127.0.0.1:18483/metrics | awk '$1 == "understudy_runner_lag_events" {print $2}'
}

run() { # name url connections
  local t0
  [ "$1" = "${1#recorder}" ] || t0=$(serve_ticks)
  wrk -t2 -c"$3" -d"${secs}s" --latency -s "$dir/post.lua" "$2" > "$dir/$1.txt"
  local rps p99 non2xx n
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/$1.txt")
  p99=$(awk '$1=="99%" {print $2}' "$dir/$1.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/$1.txt")
  printf '%-14s c=%-3s %10s req/s   p99 %8s   non-2xx %s\n' "$1" "$3" "$rps" "$p99" "${non2xx:-0}"
  [ -n "${t0:-}" ] || return 0
  # The runner may fall behind during the burst: it must catch up after.
  local lag start=$SECONDS left
  lag=$(runner_lag)
  for _ in $(seq 1200); do left=$(runner_lag); [ "$left" = 0 ] && break; sleep 0.1; done
  n=$(awk '/requests in/ {print $1}' "$dir/$1.txt")
  printf '%14s runner %s events behind at the end, caught up in %d s (left: %s);' \
    '' "$lag" $((SECONDS - start)) "${left:-?}"
  printf ' serve CPU %d us/request (with the candidate and the catch-up)\n' \
    $(( ($(serve_ticks) - t0) * 1000000 / tick / n ))
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
