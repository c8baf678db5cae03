#!/bin/sh
# docs/config.md's key tables from the config's rows (`understudy config doc`,
# src/event/config*.c): each table between its "<!-- config doc: NAME -->"
# and "<!-- end config doc: NAME -->" lines is replaced, the prose around
# them kept.
#   sh scripts/config-doc.sh BIN [DOC]          rewrites DOC (docs/config.md)
#   sh scripts/config-doc.sh --check BIN [DOC]  exit 1 when DOC differs
set -eu
check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
bin=${1:?usage: config-doc.sh [--check] BIN [DOC]}
doc=${2:-docs/config.md}
gen=$(mktemp)
new=$(mktemp)
trap 'rm -f "$gen" "$new"' EXIT
"$bin" config doc >"$gen"
awk -v gen="$gen" '
BEGIN {
    while ((getline line < gen) > 0) {
        if (line ~ /^<!-- config doc: /) name = line
        if (name != "") body[name] = body[name] line "\n"
        if (line ~ /^<!-- end config doc: /) name = ""
    }
}
/^<!-- config doc: / {
    if (!($0 in body)) { print "config-doc: " $0 " is no table of the rows" > "/dev/stderr"; bad = 1 }
    printf "%s", body[$0]; seen[$0] = 1; skip = 1; next
}
skip { if ($0 ~ /^<!-- end config doc: /) skip = 0; next }
{ print }
END {
    for (n in body) if (!(n in seen)) { print "config-doc: no " n " in the page" > "/dev/stderr"; bad = 1 }
    exit bad
}' "$doc" >"$new"
if [ "$check" = 1 ]; then
    if ! cmp -s "$doc" "$new"; then
        diff -u "$doc" "$new" | head -40 >&2 || true
        echo "config-doc: $doc differs from \`understudy config doc\`;" \
            "regenerate it with: sh scripts/config-doc.sh build/src/understudy $doc" >&2
        exit 1
    fi
    exit 0
fi
cp "$new" "$doc"
