#!/usr/bin/env bash
# A PostgreSQL log of every earlier format (pg-log-1, with the field
# columns it was created with) opens as it is, its later fields read as
# NULL, and verifies with its old head; a writing open adds the later
# fields' columns (src/log/fields.c), the head unchanged. The SQLite half
# is test_fields.
# usage: pg_fields.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
. "$src/tests/integration/common.sh"
. "$src/tests/integration/pg_lib.sh"
pg_test_begin unused

demo_sample "$src"
n=$(wc -l < "$jsonl")

# The field columns of format pg-log-1, as that version created them: the
# schema a PostgreSQL log of that format has, whatever this version adds.
pg1_fields="route provider event_id identity request_sha256 signature config_hash
event_type transaction_id target_status amount currency intent idem_key tenant"
pg1_other="stream stream_seq received_at remote method target headers body
prev_hash hash response_status response_headers response_body"

head_of_stream_1() {
  "$bin" log verify --log "$url" --json > "$tmp/verify.json" || fail "verify: $(cat "$tmp/verify.json")"
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); s=v["streams"][0]; print("%d:%s" % (s["head_seq"], s["head_hash"]))' "$tmp/verify.json"
}
columns() {
  PG_ADMIN_DB=ustlog pg_admin -At -c "SELECT column_name FROM information_schema.columns
    WHERE table_schema = 'understudy' AND table_name = 'events' ORDER BY 1"
}

"$bin" log import --config "$cfg" --log "$url" "$jsonl" > /dev/null || fail "import"
old_head=$(head_of_stream_1)
"$bin" log export --log "$url" --derived --out "$tmp/before.jsonl"

# Back to format pg-log-1: every column that version did not create dropped.
for c in $(columns); do
  case " $(echo $pg1_fields $pg1_other) " in
    *" $c "*) ;;
    *) PG_ADMIN_DB=ustlog pg_admin -c "ALTER TABLE understudy.events DROP COLUMN $c" ;;
  esac
done

# Read as it is (verify and export open it read-only): the same head, the
# same rows.
[ "$(head_of_stream_1)" = "$old_head" ] || fail "the old log's head changed read-only"
"$bin" log export --log "$url" --derived --out "$tmp/old.jsonl" || fail "export of the old log"
cmp -s "$tmp/before.jsonl" "$tmp/old.jsonl" || fail "the old log exports otherwise"

# A writing open upgrades it: every column this version has, the old rows'
# later fields NULL, the head of what was there unchanged.
"$bin" log import --config "$cfg" --log "$url" "$jsonl" > /dev/null || fail "import into the old log"
"$bin" log verify --log "$url" > "$tmp/verify.txt" || fail "verify after the upgrade: $(cat "$tmp/verify.txt")"
[ "$(head_of_stream_1)" = "$old_head" ] || fail "the upgrade changed the old head"
grep -q "^ok: $((2 * n)) events verified" "$tmp/verify.txt" || fail "verify said: $(cat "$tmp/verify.txt")"
"$bin" log export --log "$url" --derived --out "$tmp/after.jsonl"
cmp -s <(head -n "$n" "$tmp/after.jsonl") "$tmp/before.jsonl" || fail "the old rows export otherwise after the upgrade"
echo "ok: a pg-log-1 log read as it is and upgraded, head $old_head kept"
