# What the integration tests share. Sourced.

# fail MESSAGE...: the test stops, saying what went wrong.
fail() { echo "FAIL: $*" >&2; exit 1; }

# Waits (bounded, for a broken run only) until a command succeeds; on
# failure says what did not happen and shows the end of that part's log.
wait_for() {
  local what=$1 log=$2; shift 2
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  fail "$what: $(tail -5 "$log" 2>/dev/null)"
}

# tests/data/config.json with the reference plugins of BUILD, and without
# its "log" and "run": a test names them on the command line, in its own
# temporary folder.
write_test_config() { # SOURCE_DIR BUILD_DIR OUT
  python3 - "$1/tests/data/config.json" "$2" "$3" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
b = sys.argv[2]
cfg["plugins"]["legacy"]["path"] = b + "/src/plugins/legacy/understudy-legacy.so"
cfg["plugins"]["candidate"]["path"] = b + "/src/plugins/candidate/understudy-candidate.so"
del cfg["log"], cfg["run"]
json.dump(cfg, open(sys.argv[3], "w"))
PY
}

# The demo's sample: its secrets exported (scenarios/demo.env), its config
# in cfg and its recorded callbacks in jsonl.
demo_sample() { # SOURCE_DIR
  set -a
  . "$1/scenarios/demo.env"
  set +a
  cfg=$1/scenarios/demo.config.json
  jsonl=$1/scenarios/sample.jsonl
}
