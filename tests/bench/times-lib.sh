# Sourced by partition.sh, legacy_from.sh and pipeline.sh, never run: how
# they time a command and take the median of their rounds, the same way in
# each so that their figures compare.

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# measure COMMAND...: wall seconds, then CPU seconds (user + system, the
# plugins' children included) of the command, on fd 3.
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" ; } 2>&1 >/dev/null | awk 'END {printf "%s %.3f\n", $1, $2 + $3}' >&3
}
