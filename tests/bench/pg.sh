#!/usr/bin/env bash
# Durable recording throughput of `understudy serve` into PostgreSQL beside
# SQLite, in the same run: one recorder into a SQLite file, one into a
# PostgreSQL log, and two recorders into one PostgreSQL log (each under half
# the load, their rates summed). 1 KiB signed Stripe callbacks driven by
# wrk; three rounds, each configuration once per round; medians reported
# (for two recorders, the slower one's p99). Then replay from PostgreSQL
# beside replay of the same events from SQLite.
# The PostgreSQL server is the benchmark's own (tests/integration/pg_lib.sh),
# on this disk, fsync on; every process shares the machine's cores.
# usage: tests/bench/pg.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]   (needs wrk, postgresql)
set -euo pipefail
build=${1:-build}
secs=${2:-5}
conns=${3:-64}
cd "$(dirname "$0")/../.."
. tests/bench/wrk-lib.sh
. tests/integration/pg_lib.sh
needs "wrk postgresql" wrk openssl psql
wrk_begin pg-bench whsec_bench_pg
srvs=()
cleanup() {
  for p in "${srvs[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pg_stop
  rm -rf "$dir"
}
trap cleanup EXIT
pg_start
one=$(pg_make_log one)
two=$(pg_make_log two)

# The demo routes, recording only (no "run": no runner beside the writer).
python3 - "$build" "$dir/config.json" <<'PY'
import json, os, sys
cfg = json.load(open("scenarios/demo.config.json"))
for k in ("log", "run"):
    cfg.pop(k, None)
for side in ("legacy", "candidate"):
    cfg["plugins"][side]["path"] = os.path.abspath(
        "%s/src/plugins/%s/understudy-%s.so" % (sys.argv[1], side, side))
json.dump(cfg, open(sys.argv[2], "w"))
PY
serve() { # name log
  ./"$build"/src/understudy serve --config "$dir/config.json" --listen 127.0.0.1:0 \
    --log "$2" > /dev/null 2> "$dir/serve-$1.log" &
  srvs+=($!)
}
addr() { # name
  wait_listening "$dir/serve-$1.log"
  local a
  a=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/serve-$1.log" | head -1)
  [ -n "$a" ] || { echo "serve $1 did not start: $(tail -3 "$dir/serve-$1.log")" >&2; exit 1; }
  echo "$a"
}
serve sqlite "$dir/events.db"
serve pg "$one"
serve two-a "$two"
serve two-b "$two"
sqlite_addr=$(addr sqlite)
pg_addr=$(addr pg)
two_a=$(addr two-a)
two_b=$(addr two-b)
signed_post "$dir" "$secret"

# wrk against URL with C connections, its report into FILE.
load() { # file url connections
  wrk -t1 -c"$3" -d"${secs}s" --latency -s "$dir/post.lua" "$2" > "$1"
}
rate() { awk '/Requests\/sec/ {print $2}' "$1"; }
p99_ms() {
  awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) sub(/ms/,"",v);
       else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; printf "%.2f", v}' "$1"
}
non2xx() { awk '/Non-2xx/ {n=$NF} END {print n+0}' "$@"; }
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

declare -a r_sqlite r_pg r_two l_sqlite l_pg l_two
bad=0
for round in 1 2 3; do
  load "$dir/sqlite-$round.txt" "http://$sqlite_addr/webhooks/stripe" "$conns"
  load "$dir/pg-$round.txt" "http://$pg_addr/webhooks/stripe" "$conns"
  load "$dir/two-a-$round.txt" "http://$two_a/webhooks/stripe" $((conns / 2)) &
  la=$!
  load "$dir/two-b-$round.txt" "http://$two_b/webhooks/stripe" $((conns / 2))
  wait "$la"
  r_sqlite+=("$(rate "$dir/sqlite-$round.txt")")
  r_pg+=("$(rate "$dir/pg-$round.txt")")
  r_two+=("$(awk -v a="$(rate "$dir/two-a-$round.txt")" -v b="$(rate "$dir/two-b-$round.txt")" 'BEGIN {printf "%.2f", a + b}')")
  l_sqlite+=("$(p99_ms "$dir/sqlite-$round.txt")")
  l_pg+=("$(p99_ms "$dir/pg-$round.txt")")
  l_two+=("$(printf '%s\n' "$(p99_ms "$dir/two-a-$round.txt")" "$(p99_ms "$dir/two-b-$round.txt")" | sort -g | tail -1)")
  bad=$((bad + $(non2xx "$dir"/*-"$round".txt)))
  echo "round $round: sqlite ${r_sqlite[-1]}  pg ${r_pg[-1]}  two-into-pg ${r_two[-1]} req/s" >&2
done
echo "body: ${#body} bytes, wrk -t1 -c$conns for ${secs}s per run (two recorders: -c$((conns / 2)) each)," \
  "3 rounds, loopback; the recorders, wrk and PostgreSQL share $(nproc) cores"
printf '%-28s %12s req/s   p99 %8s ms\n' \
  "1 recorder -> SQLite" "$(median "${r_sqlite[@]}")" "$(median "${l_sqlite[@]}")" \
  "1 recorder -> PostgreSQL" "$(median "${r_pg[@]}")" "$(median "${l_pg[@]}")" \
  "2 recorders -> 1 PostgreSQL" "$(median "${r_two[@]}")" "$(median "${l_two[@]}")"
echo "non-2xx answers over all runs: $bad"
for p in "${srvs[@]}"; do kill -TERM "$p"; done
wait 2>/dev/null || true
srvs=()
./"$build"/src/understudy log verify --log "$two" | sed -n '1p;/^stream/p'
./"$build"/src/understudy log verify --log "$one" | head -1

# Replay: the first REPLAY_EVENTS (20000) of the single recorder's events,
# imported into a PostgreSQL log of their own and into a SQLite file (export
# | import keeps every byte), each replayed three times into a fresh run
# database; events per second, medians.
u=./"$build"/src/understudy
replay_log=$(pg_make_log replay)
"$u" log export --log "$one" --out "$dir/all.jsonl"
head -n "${REPLAY_EVENTS:-20000}" "$dir/all.jsonl" > "$dir/replay.jsonl"
"$u" log import --config "$dir/config.json" --log "$dir/copy.db" "$dir/replay.jsonl" > /dev/null
"$u" log import --config "$dir/config.json" --log "$replay_log" "$dir/replay.jsonl" > /dev/null
events=$(wc -l < "$dir/replay.jsonl")
replay_rate() { # log run
  local t0 t1
  t0=$(date +%s.%N)
  "$u" replay --config "$dir/config.json" --log "$1" --run "$2" --quiet > /dev/null
  t1=$(date +%s.%N)
  awk -v n="$events" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}'
}
declare -a rp_sqlite rp_pg
for round in 1 2 3; do
  rp_sqlite+=("$(replay_rate "$dir/copy.db" "$dir/run-sqlite-$round.db")")
  rp_pg+=("$(replay_rate "$replay_log" "$dir/run-pg-$round.db")")
done
printf 'replay of %s events (reference plugins): SQLite %s events/s, PostgreSQL %s events/s\n' \
  "$events" "$(median "${rp_sqlite[@]}")" "$(median "${rp_pg[@]}")"

# The same PostgreSQL log replayed as two partitions at once, one a core:
# the wall time of both together, as events per second of the whole log.
two_partitions_rate() { # round
  local t0 t1
  t0=$(date +%s.%N)
  "$u" replay --config "$dir/config.json" --log "$replay_log" --run "$dir/run-p0-$1.db" \
    --partition 0/2 --quiet > /dev/null &
  local first=$!
  "$u" replay --config "$dir/config.json" --log "$replay_log" --run "$dir/run-p1-$1.db" \
    --partition 1/2 --quiet > /dev/null
  wait "$first"
  t1=$(date +%s.%N)
  awk -v n="$events" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", n / (b - a)}'
}
declare -a rp_two
for round in 1 2 3; do
  rp_two+=("$(two_partitions_rate "$round")")
done
printf 'replay from PostgreSQL as two partitions at once: %s events/s (one runner: %s)\n' \
  "$(median "${rp_two[@]}")" "$(median "${rp_pg[@]}")"
