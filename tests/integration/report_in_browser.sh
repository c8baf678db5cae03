#!/usr/bin/env bash
# Opens a report in headless Chromium and checks the page as rendered: a
# hostile payload shows as text and runs nothing, and the chart is there;
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
"$bin" log import --config "$src/tests/data/config.json" --log "$tmp/events.db" "$tmp/in.jsonl"
"$bin" replay --config "$src/tests/data/config.json" --log "$tmp/events.db" --run "$tmp/run.db" \
  --legacy "$build/src/plugins/legacy/understudy-legacy.so" \
  --candidate "$build/src/plugins/candidate/understudy-candidate.so"
"$bin" report --run "$tmp/run.db" --out "$tmp/report"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --virtual-time-budget=2000 \
  --dump-dom "file://$tmp/report/index.html" > "$tmp/dom.html" 2> "$tmp/chromium.log"
fail() { echo "FAIL: $*" >&2; exit 1; }
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
# The class page the index links to: its rows, each with its anchor, and
# the same payloads shown as text.
grep -q '<a href="classes/0.html">2 of 2 shown</a>' "$tmp/dom.html" \
  || fail "the index does not link the class's page"
[ -s "$tmp/report/classes/0.html" ] || fail "the class page was not written"
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --virtual-time-budget=2000 \
  --dump-dom "file://$tmp/report/classes/0.html" > "$tmp/class.html" 2>> "$tmp/chromium.log"
[ -s "$tmp/class.html" ] || fail "chromium rendered no class page: $(tail -3 "$tmp/chromium.log")"
grep -q '<tr id="seq-1"><td class="n"><a href="#seq-1">1</a>' "$tmp/class.html" \
  || fail "the class page has no row for seq 1 with its anchor"
grep -q '<tr id="seq-2">' "$tmp/class.html" || fail "the class page has no row for seq 2"
grep -qF '&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;' "$tmp/class.html" \
  || fail "the class page does not show the hostile payload as text"
if grep -q '<img' "$tmp/class.html"; then fail "a payload became an element on the class page"; fi
echo "ok: report renders in $("$browser" --version 2>/dev/null | head -1); payloads inert, chart present, class page rows"
