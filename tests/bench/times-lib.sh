# Sourced by partition.sh, legacy_from.sh and pipeline.sh, never run: how
# they set up, time a command and take the median of their rounds, the same
# way in each so that their figures compare.

# bench_begin NAME STRIPE_SECRET (after build is set): bin, legacy, candidate
# and cfg (the build's binary, its reference plugins, the shipped config);
# dir, a fresh folder removed however the run ends; the signing secrets
# exported.
bench_begin() {
  bin=$build/src/understudy
  legacy=$build/src/plugins/legacy/understudy-legacy.so
  candidate=$build/src/plugins/candidate/understudy-candidate.so
  cfg=tests/data/config.json
  dir=$(mktemp -d "${TMPDIR:-/var/tmp}/understudy-$1-XXXXXX")
  trap 'rm -rf "$dir"' EXIT
  export UNDERSTUDY_STRIPE_SECRET=$2
  export UNDERSTUDY_STANDARD_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
}

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# measure COMMAND...: wall seconds, then CPU seconds (user + system, the
# plugins' children included) of the command, on fd 3.
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" ; } 2>&1 >/dev/null | awk 'END {printf "%s %.3f\n", $1, $2 + $3}' >&3
}
