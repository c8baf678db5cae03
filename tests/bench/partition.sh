#!/usr/bin/env bash
# Replay of a generated week, whole, beside the same week as two partitions
# (replay --partition 0/2 and 1/2) run at once, one a core: wall time of
# each, median of ROUNDS (3). Both use the reference plugins as the config
# gives them (the candidate in its child process), each run a fresh run
# database; the two partitions' divergences, merged by seq, are checked to
# be the whole run's before any figure is printed.
# usage: tests/bench/partition.sh [BUILD_DIR] [EVENTS] [ROUNDS]
set -euo pipefail
build=${1:-build}
events=${2:-200000}
rounds=${3:-3}
cd "$(dirname "$0")/../.."
. tests/bench/times-lib.sh
bench_begin partition whsec_bench_partition

"$bin" gen --config "$cfg" --events "$events" --seed 7 --span 7d --out "$dir/week.jsonl" --quiet
"$bin" log import --config "$cfg" --log "$dir/events.db" --quiet "$dir/week.jsonl" > /dev/null

replay() { # RUN DIVERGENCES [--partition K/N]
  "$bin" replay --config "$cfg" --log "$dir/events.db" --run "$1" --divergences "$2" \
    --legacy "$legacy" --candidate "$candidate" --quiet "${@:3}"
}
both() {
  replay "$dir/p0.run" "$dir/p0.lines" --partition 0/2 &
  local p0=$!
  replay "$dir/p1.run" "$dir/p1.lines" --partition 1/2 &
  local p1=$!
  wait "$p0"
  wait "$p1"
}

load=$(cut -d' ' -f1-3 /proc/loadavg) # other work on the machine skews wall times
: > "$dir/whole.times"
: > "$dir/parts.times"
for r in $(seq "$rounds"); do
  rm -f "$dir"/*.run* "$dir"/*.lines
  measure replay "$dir/whole.run" "$dir/whole.lines" 3>> "$dir/whole.times"
  measure both 3>> "$dir/parts.times"
  # "seq" is the first member of every line: a numeric sort on it merges.
  sort -t: -k2,2n -s "$dir/p0.lines" "$dir/p1.lines" | cmp -s - "$dir/whole.lines" ||
    { echo "round $r: the partitions' divergences are not the whole run's" >&2; exit 1; }
done
report() { # NAME FILE
  local wall cpu
  wall=$(cut -d' ' -f1 "$2" | median)
  cpu=$(cut -d' ' -f2 "$2" | median)
  printf '%-30s %6.2f s wall %8.0f events/s   %6.2f s CPU   (wall of each: %s)\n' \
    "$1" "$wall" "$(echo "$events / $wall" | bc -l)" "$cpu" "$(cut -d' ' -f1 "$2" | tr '\n' ' ')"
}
echo "replay of $events generated events (seed 7, a week), $(nproc) cores, load average before: $load, median of $rounds"
report "whole log, one runner:" "$dir/whole.times"
report "two partitions, side by side:" "$dir/parts.times"
w=$(cut -d' ' -f1 "$dir/whole.times" | median)
p=$(cut -d' ' -f1 "$dir/parts.times" | median)
printf 'speed-up (wall): %.2fx; divergences: %s lines, the same in both\n' \
  "$(echo "$w / $p" | bc -l)" "$(wc -l < "$dir/whole.lines")"
