#!/usr/bin/env bash
# The latency `understudy serve --respond upstream` adds in front of a
# trivial local service (nginx answering `return 200`), against calling that
# service directly, in the same run: 1 KiB signed Stripe callbacks driven by
# wrk, one connection at a time (the latency of one request) and four. A
# third line, `serve --respond ack` (recording alone, no forwarding), shows
# how much of what is added is the durable commit.
# usage: tests/bench/upstream.sh [BUILD_DIR] [SECONDS]   (needs wrk, nginx, jq)
set -euo pipefail
build=${1:-build}
secs=${2:-10}
cd "$(dirname "$0")/../.."
. tests/bench/wrk-lib.sh
needs "wrk nginx-light jq" wrk nginx openssl jq
wrk_begin upstream whsec_bench_upstream
srv= ack=
cleanup() { kill $(cat "$dir/nginx.pid" 2>/dev/null) 2>/dev/null || true; for p in $srv $ack; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

# The service: nginx, one worker, answering 200 with a small JSON body.
nginx_start "$dir" "server { listen 127.0.0.1:18491; location / { default_type application/json;
    return 200 '{\"ok\":true}'; } }"

# understudy in front of it: the demo routes, the legacy production's
# handler at the service's url, the reference candidate in shadow.
candidate=$PWD/$build/src/plugins/candidate/understudy-candidate.so
jq --arg c "$candidate" '.plugins.legacy = {"url": "http://127.0.0.1:18491", "timeout_ms": 2000}
  | .plugins.candidate.path = $c | del(.run, .log)' scenarios/demo.config.json > "$dir/config.json"
./"$build"/src/understudy serve --config "$dir/config.json" --listen 127.0.0.1:18492 \
  --log "$dir/events.db" --run "$dir/run.db" --respond upstream 2> "$dir/serve.log" &
srv=$!
wait_listening "$dir/serve.log"
grep -q listening "$dir/serve.log" || { cat "$dir/serve.log" >&2; exit 1; }
./"$build"/src/understudy serve --config "$dir/config.json" --listen 127.0.0.1:18494 \
  --admin-listen 127.0.0.1:18495 --log "$dir/ack-events.db" 2> "$dir/ack.log" &
ack=$!
wait_listening "$dir/ack.log"

signed_post "$dir" "$secret"

ms() { # wrk's "123.45us" / "1.23ms" / "1.02s" -> ms
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0;
    else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}
declare -A p50 p99
run() { # name url connections
  wrk -t1 -c"$3" -d"${secs}s" --latency -s "$dir/post.lua" "$2" > "$dir/$1.txt"
  local rps non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/$1.txt")
  p50[$1]=$(ms "$(awk '$1=="50%" {print $2}' "$dir/$1.txt")")
  p99[$1]=$(ms "$(awk '$1=="99%" {print $2}' "$dir/$1.txt")")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/$1.txt")
  printf '%-12s c=%-2s %10s req/s   p50 %8s ms   p99 %8s ms   non-2xx %s\n' "$1" "$3" "$rps" \
    "${p50[$1]}" "${p99[$1]}" "${non2xx:-0}"
}
echo "body: ${#body} bytes, wrk -t1 for ${secs}s per run, loopback, one machine"
for c in 1 4; do
  run direct-c$c http://127.0.0.1:18491/webhooks/stripe $c
  run ack-c$c http://127.0.0.1:18494/webhooks/stripe $c
  run upstream-c$c http://127.0.0.1:18492/webhooks/stripe $c
  awk -v a="${p50[upstream-c$c]}" -v b="${p50[direct-c$c]}" -v x="${p99[upstream-c$c]}" \
    -v y="${p99[direct-c$c]}" -v c=$c \
    'BEGIN { printf "added c=%s: p50 %+.3f ms   p99 %+.3f ms\n", c, a - b, x - y }'
done
kill -TERM "$srv" "$ack"; wait "$srv" "$ack" || true
srv= ack=
./"$build"/src/understudy log verify --log "$dir/events.db" | head -1
echo "answers recorded: $(sqlite3 "$dir/run.db.answers" 'SELECT count(*) FROM answers') (errors: $(sqlite3 "$dir/run.db.answers" "SELECT count(*) FROM answers WHERE verdict = 'error'"))"
