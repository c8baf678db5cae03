#!/bin/sh
# The docs' generated tables from `understudy config doc`: the config's key
# tables (its rows, src/event/config*.c) and the event's field tables
# (UST_EVENT_FIELDS, src/event/fields_doc.c). In each page, every table
# between its "<!-- config doc: NAME -->" and "<!-- end config doc: NAME -->"
# lines is replaced, the prose around them kept; every table the command
# prints must be in one of the pages.
#   sh scripts/config-doc.sh BIN [PAGE...]          rewrites the pages
#   sh scripts/config-doc.sh --check BIN [PAGE...]  exit 1 when one differs
# The pages default to docs/config.md docs/interchange.md
# include/understudy/protocol.md.
set -eu
check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
bin=${1:?usage: config-doc.sh [--check] BIN [PAGE...]}
shift
if [ $# -eq 0 ]; then
    set -- docs/config.md docs/interchange.md include/understudy/protocol.md
fi
gen=$(mktemp)
new=$(mktemp)
seen=$(mktemp)
trap 'rm -f "$gen" "$new" "$seen"' EXIT
"$bin" config doc >"$gen"
status=0
for doc in "$@"; do
    awk -v gen="$gen" -v seen="$seen" '
    BEGIN {
        while ((getline line < gen) > 0) {
            if (line ~ /^<!-- config doc: /) name = line
            if (name != "") body[name] = body[name] line "\n"
            if (line ~ /^<!-- end config doc: /) name = ""
        }
    }
    /^<!-- config doc: / {
        if (!($0 in body)) { print "config-doc: " $0 " is no generated table" > "/dev/stderr"; bad = 1 }
        printf "%s", body[$0]; print $0 >> seen; skip = 1; next
    }
    skip { if ($0 ~ /^<!-- end config doc: /) skip = 0; next }
    { print }
    END { exit bad }' "$doc" >"$new" || status=1
    if [ "$check" = 1 ]; then
        if ! cmp -s "$doc" "$new"; then
            diff -u "$doc" "$new" | head -40 >&2 || true
            echo "config-doc: $doc differs from \`understudy config doc\`;" \
                "regenerate it with: sh scripts/config-doc.sh build/src/understudy" >&2
            status=1
        fi
    else
        cp "$new" "$doc"
    fi
done
grep '^<!-- config doc: ' "$gen" | while IFS= read -r marker; do
    if ! grep -qxF "$marker" "$seen"; then
        echo "config-doc: no page has $marker" >&2
        exit 1
    fi
done || status=1
exit $status
