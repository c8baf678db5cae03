#!/usr/bin/env bash
# File to report: `log import` + `replay` (the config's plugins, the
# candidate isolated as shipped) + `report` of a generated week, beside the
# issue's baseline measured in the same run: a python3 sqlite3 script that
# stores the same JSONL lines (executemany, one transaction, WAL,
# synchronous=FULL) and reads them back, json.loads-ing each. Wall seconds
# and peak RSS of each step, medians of ROUNDS (default 1), each round on a
# fresh log and run database; the order of understudy and baseline
# alternates between rounds. The load average beside each round says how
# shared the machine was.
# usage: [ROUNDS=3] tests/bench/pipeline.sh [BUILD_DIR] [EVENTS]
set -euo pipefail
build=${1:-build}
events=${2:-1000000}
rounds=${ROUNDS:-1}
cd "$(dirname "$0")/../.."
. tests/bench/times-lib.sh
bench_begin pipeline whsec_bench_partition
export SOURCE_DATE_EPOCH=1764547200 # the report's bytes do not depend on the hour

# The same generator, seed and span as partition.sh.
"$bin" gen --config "$cfg" --events "$events" --seed 7 --span 7d --out "$dir/week.jsonl" --quiet

cat > "$dir/baseline.py" << 'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[2], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY, line TEXT NOT NULL)")
with open(sys.argv[1], encoding="utf-8") as f:
    db.execute("BEGIN")
    db.executemany("INSERT INTO events (line) VALUES (?)", ((l,) for l in f))
    db.execute("COMMIT")
n = 0
for (line,) in db.execute("SELECT line FROM events ORDER BY seq"):
    json.loads(line)
    n += 1
print(n)
EOF

# Runs a step under /usr/bin/time: appends "wall_s peak_kib" to $dir/NAME.
step() { # NAME COMMAND...
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$dir/$name.one" "$@" > /dev/null 2> "$dir/$name.err" ||
    { echo "$name failed:" >&2; cat "$dir/$name.err" >&2; exit 1; }
  cat "$dir/$name.one" >> "$dir/$name"
}
pipeline() {
  rm -f "$dir"/events.db* "$dir"/run.db* && rm -rf "$dir/out"
  step import "$bin" log import --config "$cfg" --log "$dir/events.db" --quiet "$dir/week.jsonl"
  step replay "$bin" replay --config "$cfg" --log "$dir/events.db" --run "$dir/run.db" \
    --legacy "$legacy" --candidate "$candidate" --quiet
  step report "$bin" report --run "$dir/run.db" --out "$dir/out" --quiet
}
baseline() {
  rm -f "$dir"/baseline.db*
  step baseline python3 "$dir/baseline.py" "$dir/week.jsonl" "$dir/baseline.db"
}

col() { cut -d' ' -f"$2" "$dir/$1" | median; } # NAME COLUMN: the median

echo "file to report: $events generated events (seed 7, a week, $(du -m "$dir/week.jsonl" | cut -f1) MiB of JSONL), $(nproc) cores, median of $rounds"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then pipeline; baseline; else baseline; pipeline; fi
  echo "round $r: load average after it $(cut -d' ' -f1-3 /proc/loadavg)"
done
total=0
for s in import replay report; do
  t=$(col "$s" 1)
  total=$(echo "$total + $t" | bc -l)
  printf '%-8s %8.2f s  %7.0f events/s  peak RSS %6d MiB   (each: %s)\n' "$s" "$t" \
    "$(echo "$events / $t" | bc -l)" $(($(col "$s" 2) / 1024)) "$(cut -d' ' -f1 "$dir/$s" | tr '\n' ' ')"
done
printf '%-8s %8.2f s  (sum of the medians)\n' total "$total"
b=$(col baseline 1)
printf '%-8s %8.2f s  peak RSS %6d MiB   (python3 sqlite3 store + json.loads read; each: %s)\n' \
  baseline "$b" $(($(col baseline 2) / 1024)) "$(cut -d' ' -f1 "$dir/baseline" | tr '\n' ' ')"
# The ratio of each round (its own total over its own baseline), then their median.
ratios=$(paste -d' ' "$dir/import" "$dir/replay" "$dir/report" "$dir/baseline" |
  awk '{printf "%.2f\n", ($1 + $3 + $5) / $7}')
printf 'ratio: file to report = %.2fx the baseline, median of the rounds (each: %s; target: at most 2x)\n' \
  "$(echo "$ratios" | median)" "$(echo "$ratios" | tr '\n' ' ')"
