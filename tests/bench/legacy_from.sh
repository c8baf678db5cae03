#!/usr/bin/env bash
# The iteration loop's replay: a full replay of a generated week beside
# `replay --legacy-from` of that same run (the legacy's decisions read back,
# the candidate alone deciding), wall time of each, median of ROUNDS (3).
# Three configs: as shipped (the candidate isolated in its child process,
# the legacy in process), the legacy isolated too (a legacy that costs as
# much as the candidate), and both in process (the host's own share).
# Each round is a fresh run database; the divergences of --legacy-from are
# checked to be the full replay's, byte for byte, before any figure.
# usage: tests/bench/legacy_from.sh [BUILD_DIR] [EVENTS] [ROUNDS]
set -euo pipefail
build=${1:-build}
events=${2:-200000}
rounds=${3:-3}
cd "$(dirname "$0")/../.."
. tests/bench/times-lib.sh
bench_begin legacy-from whsec_bench_legacy_from
# Each config is the shipped one but for isolate (plugin paths come from
# the flags), with a log imported under it: a replay reads the derived
# fields of a log imported under its own config instead of deriving again.
variant() { # NAME [SED]
  sed -E "${2:-}" tests/data/config.json > "$dir/$1.json"
  [ -z "${2:-}" ] || ! cmp -s tests/data/config.json "$dir/$1.json" ||
    { echo "$1: the config did not change" >&2; exit 1; }
  "$bin" log import --config "$dir/$1.json" --log "$dir/$1.db" --quiet "$dir/week.jsonl" > /dev/null
}
"$bin" gen --config tests/data/config.json --events "$events" --seed 7 --span 7d \
  --out "$dir/week.jsonl" --quiet
variant as_shipped
variant both_isolated 's/"legacy": +\{"path"/"legacy": {"isolate": true, "path"/'
variant in_process 's/"candidate": \{"path"/"candidate": {"isolate": false, "path"/'

replay() { # VARIANT RUN DIVERGENCES [--legacy-from EARLIER]
  "$bin" replay --config "$dir/$1.json" --log "$dir/$1.db" --run "$2" --divergences "$3" \
    --legacy "$legacy" --candidate "$candidate" --quiet "${@:4}"
}
report() { # NAME FILE
  printf '  %-24s %6.2f s wall %8.0f events/s   %6.2f s CPU   (wall of each: %s)\n' \
    "$1" "$(cut -d' ' -f1 "$2" | median)" \
    "$(echo "$events / $(cut -d' ' -f1 "$2" | median)" | bc -l)" \
    "$(cut -d' ' -f2 "$2" | median)" "$(cut -d' ' -f1 "$2" | tr '\n' ' ')"
}

load=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine skews wall times
echo "replay of $events generated events (seed 7, a week), $(nproc) cores, load average before: $load, median of $rounds"
for mode in as_shipped both_isolated in_process; do
  : > "$dir/full.times"
  : > "$dir/from.times"
  for r in $(seq "$rounds"); do
    rm -f "$dir"/*.run* "$dir"/*.lines
    measure replay "$mode" "$dir/full.run" "$dir/full.lines" 3>> "$dir/full.times"
    measure replay "$mode" "$dir/from.run" "$dir/from.lines" --legacy-from "$dir/full.run" \
      3>> "$dir/from.times"
    cmp -s "$dir/full.lines" "$dir/from.lines" ||
      { echo "round $r ($mode): --legacy-from's divergences are not the full replay's" >&2; exit 1; }
  done
  echo "plugins ${mode/_/ }:"
  report "full replay:" "$dir/full.times"
  report "--legacy-from:" "$dir/from.times"
  f=$(cut -d' ' -f1 "$dir/full.times" | median)
  l=$(cut -d' ' -f1 "$dir/from.times" | median)
  printf '  --legacy-from costs %.0f%% of a full replay (target: at most 60%%); divergences: %s lines, the same in both\n' \
    "$(echo "100 * $l / $f" | bc -l)" "$(wc -l < "$dir/full.lines")"
done
