#!/usr/bin/env bash
# Opens a report in headless Chromium and checks the page as rendered: a
# hostile payload shows as text and runs nothing, the chart is there, and an
# event under review shows its diff side by side and its headers as a table;
# then a class page the index links to, with its rows.
# usage: report_in_browser.sh UNDERSTUDY_BIN SOURCE_DIR BUILD_DIR
set -euo pipefail
bin=$1 src=$2 build=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium is not installed: run 'make test' (it installs it) or apt-get install chromium" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export UNDERSTUDY_STRIPE_SECRET=whsec_browser_test UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
# API requests without an Idempotency-Key diverge (legacy applies, candidate
# refuses), so their hostile order ids reach the report's examples.
cat > "$tmp/in.jsonl" <<'JSONL'
{"v":1,"received_at":"2026-11-29T10:00:00Z","remote":"203.0.113.9:1","method":"POST","target":"/payments","headers":[["X-Tenant-Id","t1"]],"body":"{\"order_id\":\"</script><img src=x onerror=alert(1)>\",\"amount\":100,\"currency\":\"eur\"}"}
{"v":1,"received_at":"2026-11-29T11:00:00Z","remote":"203.0.113.9:2","method":"POST","target":"/payments","headers":[["X-Tenant-Id","<b>t2</b>"]],"body":"{\"order_id\":\"<img src=x onerror=document.body.setAttribute('data-pwned','1')>\",\"amount\":200,\"currency\":\"eur\"}"}
JSONL
# A payment refunded, then paid again with a new event id (scenario 5),
# signed as Stripe signs it: the legacy moves it back to paid, the candidate
# keeps it refunded.
"$bin" drive --config "$src/tests/data/config.json" --render "$tmp/paid-after-refund.jsonl" \
  "$src/scenarios/05-paid-after-refund-new-id.json" > /dev/null
cat "$tmp/paid-after-refund.jsonl" >> "$tmp/in.jsonl"
"$bin" log import --config "$src/tests/data/config.json" --log "$tmp/events.db" "$tmp/in.jsonl"
"$bin" replay --config "$src/tests/data/config.json" --log "$tmp/events.db" --run "$tmp/run.db" \
  --legacy "$build/src/plugins/legacy/understudy-legacy.so" \
  --candidate "$build/src/plugins/candidate/understudy-candidate.so"
"$bin" report --run "$tmp/run.db" --out "$tmp/report"
# The DOM of page $1 as Chromium renders it, into $2.
dump_dom() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$tmp/profile" --virtual-time-budget=2000 \
    --dump-dom "file://$1" > "$2" 2>> "$tmp/chromium.log"
}
dump_dom "$tmp/report/index.html" "$tmp/dom.html"
fail() { echo "FAIL: $*" >&2; exit 1; }
# An event under review as Chromium rendered it (the DOM dumped to $1, an
# index or a class page): the paid-after-refunded divergence has the
# legacy's paid and the candidate's refunded in one row of its diff table,
# and the request's headers are a table.
check_event_dom() {
  local dom=$1
  grep -oP '<table class="diff">.*?</table>' "$dom" | sed 's#</tr>#</tr>\n#g' \
    | grep 'class="legacy"><code>"paid"</code>' \
    | grep -q 'class="candidate"><code>"refunded"</code>' \
    || fail "$dom: no row of a table.diff holds paid (legacy) and refunded (candidate)"
  grep -q '<table class="headers">' "$dom" || fail "$dom: the request's headers are not a table.headers"
}
[ -s "$tmp/dom.html" ] || fail "chromium rendered nothing: $(tail -3 "$tmp/chromium.log")"
grep -q 'understudy: divergence report' "$tmp/dom.html" || fail "the page did not render"
grep -qF '&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;' "$tmp/dom.html" \
  || fail "the hostile payload is not shown as text"
grep -qF '&lt;b&gt;t2&lt;/b&gt;' "$tmp/dom.html" || fail "a hostile header is not shown as text"
if grep -q '<img' "$tmp/dom.html"; then fail "a payload became an element"; fi
if grep -q '<b>t2' "$tmp/dom.html"; then fail "a header became markup"; fi
grep -o '<body[^>]*>' "$tmp/dom.html" | grep -q 'data-pwned' && fail "a payload's script ran"
grep -q '<svg id="chart"' "$tmp/dom.html" || fail "the chart is missing"
grep -q '<rect' "$tmp/dom.html" || fail "the chart has no bars"
check_event_dom "$tmp/dom.html"
# The class page the index links to: its rows, each with its anchor, and
# the same payloads shown as text.
grep -q '<a href="classes/0.html">2 of 2 shown</a>' "$tmp/dom.html" \
  || fail "the index does not link the class's page"
[ -s "$tmp/report/classes/0.html" ] || fail "the class page was not written"
dump_dom "$tmp/report/classes/0.html" "$tmp/class.html"
[ -s "$tmp/class.html" ] || fail "chromium rendered no class page: $(tail -3 "$tmp/chromium.log")"
grep -q '<tr id="seq-1"><td class="n"><a href="#seq-1">1</a>' "$tmp/class.html" \
  || fail "the class page has no row for seq 1 with its anchor"
grep -q '<tr id="seq-2">' "$tmp/class.html" || fail "the class page has no row for seq 2"
grep -qF '&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;' "$tmp/class.html" \
  || fail "the class page does not show the hostile payload as text"
if grep -q '<img' "$tmp/class.html"; then fail "a payload became an element on the class page"; fi
# The paid-after-refunded class's own page: the event under review there too.
page=$(grep -oP '<a href="#class-\d+">payment_intent.succeeded: applied [^<]* rejected</a>.*?<a href="\Kclasses/\d+\.html' "$tmp/dom.html" | head -1)
[ -n "$page" ] || fail "the index does not link the paid-after-refunded class's page"
dump_dom "$tmp/report/$page" "$tmp/paid.html"
check_event_dom "$tmp/paid.html"
echo "ok: report renders in $("$browser" --version 2>/dev/null | head -1); payloads inert, chart present, diff and headers tables, class page rows"
