#!/usr/bin/env bash
# understudy config show through the real binary: the effective config with
# every default filled in, each secret by its variable's name and never its
# value (even with the variables set), and a refused file refused as every
# command refuses it.
set -euo pipefail
bin=$1 src=$2 build=$3
. "$src/tests/integration/common.sh"
fail() { echo "config_show: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

write_test_config "$src" "$build" "$tmp/base.json"
python3 - "$tmp/base.json" "$tmp/cfg.json" "$tmp/bad.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["limits"] = {"max_headers": 10}
cfg["retention"] = {"keep": "8d"}
cfg["capture"] = {"mask_key_env": "UST_SHOW_MASK_KEY"}
json.dump(cfg, open(sys.argv[2], "w"))
cfg["limits"] = {"max_body_bytes": 0}
json.dump(cfg, open(sys.argv[3], "w"))
PY

secrets=(whsec_show_secret_value_1 c2hvd19zZWNyZXRfdmFsdWVfMg==
         show_mask_key_value_0123456789)
export UNDERSTUDY_STRIPE_SECRET=${secrets[0]}
export UNDERSTUDY_STANDARD_SECRET=${secrets[1]}
export UST_SHOW_MASK_KEY=${secrets[2]}
"$bin" config show --config "$tmp/cfg.json" >"$tmp/out.json" 2>"$tmp/err" ||
    fail "refused a good config: $(cat "$tmp/err")"
for s in "${secrets[@]}"; do
    if grep -qF "$s" "$tmp/out.json"; then fail "a secret's value is shown"; fi
done
python3 - "$tmp/out.json" <<'PY' || fail "the effective config is not as expected"
import json, sys
c = json.load(open(sys.argv[1]))
want = {
    ("limits", "max_headers"): 10,               # given
    ("limits", "max_body_bytes"): 1048576,       # defaults filled in
    ("import", "max_line_bytes"): 13631488,      # derived from the body limit
    ("health", "max_lag_s"): 300,
    ("cache", "state_mb"): 64,
    ("coverage", "key_ttl_s"): 86400,
    ("retention", "keep"): "8d",
    ("retention", "every"): "1h",
    ("capture", "mask_key_env"): "UST_SHOW_MASK_KEY",
    ("capture", "mask_headers"): ["Authorization", "Cookie", "Proxy-Authorization"],
    ("partition_by",): ["intent", "identity"],
    ("plugins", "legacy", "isolate"): False,
    ("plugins", "candidate", "isolate"): True,
    ("plugins", "legacy", "timeout_ms"): 1000,
    ("plugins", "legacy", "max_rss_mb"): 512,
    ("routes", 0, "signature", "scheme"): "stripe",
    ("routes", 0, "signature", "secret_env"): "UNDERSTUDY_STRIPE_SECRET",
    ("routes", 0, "signature", "tolerance_s"): 300,
    ("routes", 0, "sample", "percent"): 100.0,
}
bad = 0
for path, v in want.items():
    got = c
    for p in path:
        got = got[p]
    if got != v:
        print("%s: %r, wanted %r" % (".".join(map(str, path)), got, v), file=sys.stderr)
        bad = 1
sys.exit(bad)
PY

if "$bin" config show --config "$tmp/bad.json" >"$tmp/out2" 2>"$tmp/err2"; then
    fail "a refused config was shown"
fi
grep -qF "understudy: $tmp/bad.json: limits.max_body_bytes: expected a positive integer" \
    "$tmp/err2" || fail "refused with: $(cat "$tmp/err2")"
[ ! -s "$tmp/out2" ] || fail "a refused config printed something"
echo "config_show: ok"
