#!/usr/bin/env bash
# The event log in PostgreSQL, on a server this test starts: the same JSONL
# imported into SQLite and into PostgreSQL exports the same rows and
# replays to byte-identical divergences; the log's own user cannot UPDATE,
# DELETE or TRUNCATE a row (the database refuses); a row changed behind the
# triggers' back (the superuser disables them) is named by `log verify`.
# usage: pg_log.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
. "$src/tests/integration/common.sh"
. "$src/tests/integration/pg_lib.sh"
pg_test_begin unused

demo_sample "$src"
legacy=$build/src/plugins/legacy/understudy-legacy.so
candidate=$build/src/plugins/candidate/understudy-candidate.so

"$bin" log import --config "$cfg" --log "$tmp/events.db" "$jsonl" > /dev/null \
  || fail "import into SQLite"
"$bin" log import --config "$cfg" --log "$url" "$jsonl" > "$tmp/import.txt" \
  || fail "import into PostgreSQL: $(cat "$tmp/import.txt")"
n=$(wc -l < "$jsonl")
grep -q "imported $n events" "$tmp/import.txt" || fail "import said: $(cat "$tmp/import.txt")"

# The same rows, derived fields included.
"$bin" log export --log "$tmp/events.db" --derived --out "$tmp/sqlite.jsonl"
"$bin" log export --log "$url" --derived --out "$tmp/pg.jsonl"
cmp -s "$tmp/sqlite.jsonl" "$tmp/pg.jsonl" || fail "the exports differ: $(diff "$tmp/sqlite.jsonl" "$tmp/pg.jsonl" | head -5)"

# A replay from each: byte-identical divergences (and some, or the
# comparison says nothing).
for log in "$tmp/events.db" "$url"; do
  name=$([ "$log" = "$url" ] && echo pg || echo sqlite)
  "$bin" replay --config "$cfg" --log "$log" --run "$tmp/run-$name.db" --legacy "$legacy" \
    --candidate "$candidate" --divergences "$tmp/div-$name.jsonl" --quiet \
    || fail "replay from $name"
done
[ -s "$tmp/div-sqlite.jsonl" ] || fail "the reference plugins diverged on nothing"
cmp -s "$tmp/div-sqlite.jsonl" "$tmp/div-pg.jsonl" \
  || fail "divergences differ: $(diff "$tmp/div-sqlite.jsonl" "$tmp/div-pg.jsonl" | head -5)"

# The report, the gate and show over each run read their log through it:
# the same coverage (counted by sorted scans of the log), the chain
# verified through the run's cursor, the same gate verdict, the same event
# shown (its story read by seq, its repeat searched newest first).
export SOURCE_DATE_EPOCH=1700000000
for name in sqlite pg; do
  "$bin" report --run "$tmp/run-$name.db" --out "$tmp/report-$name" --quiet > /dev/null \
    || fail "report over the run from $name"
  "$bin" gate --run "$tmp/run-$name.db" --triage "$src/scenarios/demo.triage.json" \
    --max-open 100 --require-coverage identical_redelivery,semantic_pair > "$tmp/gate-$name.txt" \
    || fail "gate --require-coverage over the run from $name: $(cat "$tmp/gate-$name.txt")"
  if "$bin" gate --run "$tmp/run-$name.db" --triage "$src/scenarios/demo.triage.json" \
    --max-open 100 --require-coverage api_after_ttl > "$tmp/gate-ttl-$name.txt"; then
    fail "gate passed a kind the traffic of $name lacks"
  fi
  for seq in 12 6; do
    "$bin" show --run "$tmp/run-$name.db" $seq >> "$tmp/show-$name.txt" 2>&1 \
      || fail "show --run over the run from $name: $(cat "$tmp/show-$name.txt")"
  done
done
python3 - "$tmp/report-sqlite/summary.json" "$tmp/report-pg/summary.json" "$n" <<'PY' \
  || fail "the reports over SQLite and PostgreSQL differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["coverage"] == b["coverage"], (a["coverage"], b["coverage"])
assert a["coverage"]["identical_redelivery"] > 0, a["coverage"]
chain = b["report"]["log_chain"]
assert chain["verified"] and chain["through_seq"] == int(sys.argv[3]), chain
# Each backend chains its rows from its own genesis: only the hash differs.
for s in (a, b):
    del s["report"]["log_chain"]["sha256"]
assert a == b, (a, b)
PY
for f in gate gate-ttl show; do
  cmp -s "$tmp/$f-sqlite.txt" "$tmp/$f-pg.txt" \
    || fail "$f differs over PostgreSQL: $(diff "$tmp/$f-sqlite.txt" "$tmp/$f-pg.txt" | head -5)"
done
grep -q "^semantic duplicate of stripe:pi_2 (seq 5, " "$tmp/show-pg.txt" \
  || fail "show did not find the repeat in the PostgreSQL log: $(cat "$tmp/show-pg.txt")"
grep -q "^request headers" "$tmp/show-pg.txt" || fail "show did not read the request from PostgreSQL"
grep -q "api_after_ttl" "$tmp/gate-ttl-pg.txt" || fail "gate did not name the missing kind: $(cat "$tmp/gate-ttl-pg.txt")"

"$bin" log verify --log "$url" > "$tmp/verify.txt" || fail "verify: $(cat "$tmp/verify.txt")"
grep -q "^ok: $n events verified, head seq $n" "$tmp/verify.txt" || fail "verify said: $(cat "$tmp/verify.txt")"
grep -q "^stream 1 (.*): $n events, head seq $n" "$tmp/verify.txt" \
  || fail "verify does not report the stream's head: $(cat "$tmp/verify.txt")"

# A second import is a second stream, after the first in the global order.
"$bin" log import --config "$cfg" --log "$url" "$jsonl" > /dev/null || fail "second import"
"$bin" log verify --log "$url" --json > "$tmp/verify.json" || fail "verify after the second import"
python3 - "$tmp/verify.json" "$n" <<'PY' || fail "two streams, each verified to its head"
import json, sys
v, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert v["ok"] and v["head_seq"] == 2 * n, v
heads = [(s["stream"], s["events"], s["head_seq"]) for s in v["streams"]]
assert heads == [(1, n, n), (2, n, 2 * n)], heads
PY

"$bin" log stats --log "$url" > "$tmp/stats.txt" || fail "stats"
grep -q "^events: *$((2 * n)) (seq 1..$((2 * n)))" "$tmp/stats.txt" || fail "stats said: $(cat "$tmp/stats.txt")"
[ "$(grep -c "^  [12] .* $n events, opened " "$tmp/stats.txt")" = 2 ] \
  || fail "stats does not list the two streams: $(cat "$tmp/stats.txt")"

# An anchor (a global seq and its hash, kept elsewhere) is checked there.
anchor=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); s=v["streams"][0]; print("%d:%s" % (s["head_seq"], s["head_hash"]))' "$tmp/verify.json")
"$bin" log verify --log "$url" --anchor "$anchor" > "$tmp/anchor.txt" || fail "verify --anchor $anchor: $(cat "$tmp/anchor.txt")"
wrong="${anchor%:*}:$(printf '0%.0s' $(seq 64))"
if "$bin" log verify --log "$url" --anchor "$wrong" > "$tmp/anchor.txt"; then fail "verify passed a wrong anchor"; fi
grep -q "^TAMPERED: seq ${anchor%:*}: the chain does not pass through the anchor" "$tmp/anchor.txt" \
  || fail "a wrong anchor: $(cat "$tmp/anchor.txt")"

# The log's user: the database itself refuses to change a row.
as_user() { psql -X -q -v ON_ERROR_STOP=1 -h "$PG_HOST" -p "$PG_PORT" -U ustlog -d ustlog -c "$1" 2>&1; }
for sql in "UPDATE understudy.events SET body = 'x' WHERE stream_seq = 3" \
           "DELETE FROM understudy.events WHERE stream_seq = 3" \
           "TRUNCATE understudy.events" \
           "DELETE FROM understudy.commits" \
           "UPDATE understudy.streams SET label = 'x'"; do
  if out=$(as_user "$sql"); then fail "the log's user could run: $sql"; fi
  grep -q "append-only" <<< "$out" || fail "$sql: refused, but not by the log: $out"
done
"$bin" log verify --log "$url" > /dev/null || fail "verify after the refused changes"

# The superuser changes row 5 of stream 2 (global seq n + 5) with the
# triggers off: verify names it.
PG_ADMIN_DB=ustlog pg_admin -c "ALTER TABLE understudy.events DISABLE TRIGGER USER" \
  -c "UPDATE understudy.events SET body = convert_to('{\"forged\":1}', 'UTF8') WHERE stream = 2 AND stream_seq = 5" \
  -c "ALTER TABLE understudy.events ENABLE TRIGGER USER" || fail "tamper as the superuser"
if "$bin" log verify --log "$url" > "$tmp/tampered.txt"; then fail "verify passed a changed row"; fi
bad=$((n + 5))
grep -q "^TAMPERED: seq $bad: stream 2 row 5: content does not match its hash" "$tmp/tampered.txt" \
  || fail "verify did not name seq $bad: $(cat "$tmp/tampered.txt")"
# The report checks the chain only through its run's cursor (seq n): the
# row changed after it is not read, and the hash there is stream 1's head.
chain_of() { python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["report"]["log_chain"]; print(c["verified"], c.get("through_seq"), c.get("sha256") or c.get("reason"))' "$1"; }
"$bin" report --run "$tmp/run-pg.db" --out "$tmp/report-after" --quiet > /dev/null || fail "report after the change"
head1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["streams"][0]["head_hash"])' "$tmp/verify.json")
[ "$(chain_of "$tmp/report-after/summary.json")" = "True $n $head1" ] \
  || fail "the report's bounded check: $(chain_of "$tmp/report-after/summary.json")"

# A deleted commit record (the order of a whole batch) is named too.
PG_ADMIN_DB=ustlog pg_admin -c "SET session_replication_role = replica" \
  -c "DELETE FROM understudy.commits WHERE first_seq = 1" > /dev/null || fail "delete a commit record"
if "$bin" log verify --log "$url" > "$tmp/tampered2.txt"; then fail "verify passed a deleted commit record"; fi
grep -q "^TAMPERED: seq 1: commit records" "$tmp/tampered2.txt" \
  || fail "verify did not name the missing commit record: $(cat "$tmp/tampered2.txt")"
# ... inside the run's reach, the report's check names it too.
"$bin" report --run "$tmp/run-pg.db" --out "$tmp/report-cut" --quiet > /dev/null || fail "report after the delete"
chain_of "$tmp/report-cut/summary.json" | grep -q "^False None seq 1: commit records" \
  || fail "the report's bounded check passed a deleted commit record: $(chain_of "$tmp/report-cut/summary.json")"

# The newest rows cut off with their commit records (a suffix: every chain
# still holds) are named by the head their writer recorded at its close.
cut=$(pg_make_log cutlog) || fail "cannot make a second log"
for i in 1 2; do "$bin" log import --config "$cfg" --log "$cut" "$jsonl" > /dev/null || fail "import $i"; done
PG_ADMIN_DB=cutlog pg_admin -c "SET session_replication_role = replica" \
  -c "DELETE FROM understudy.commits WHERE stream = 2" \
  -c "DELETE FROM understudy.events WHERE stream = 2" > /dev/null || fail "cut off stream 2"
if "$bin" log verify --log "$cut" > "$tmp/cut.txt"; then fail "verify passed a log cut off: $(cat "$tmp/cut.txt")"; fi
grep -q "^TAMPERED: seq $((n + 1)): stream 2 held row $n when its writer closed, but ends at row 0" "$tmp/cut.txt" \
  || fail "verify did not name the cut: $(cat "$tmp/cut.txt")"

# What the PostgreSQL log leaves to the database's tools is refused plainly.
if out=$("$bin" log backup --log "$url" --out "$tmp/copy.db" 2>&1); then fail "log backup of a PostgreSQL log"; fi
grep -q "pg_dump" <<< "$out" || fail "log backup said: $out"
echo "ok: $n events in SQLite and PostgreSQL: same export, same divergences;" \
  "UPDATE/DELETE/TRUNCATE refused to the log's user; a changed row named at seq $bad"
