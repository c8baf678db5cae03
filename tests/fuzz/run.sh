#!/usr/bin/env bash
# The libFuzzer targets of a fuzz tree (cmake -DUST_FUZZ=ON, see
# docs/fuzzing.md), in one of two modes:
#   run.sh fuzz BUILD SECONDS [TARGET...]   fuzz each target for SECONDS
#   run.sh regress BUILD [TARGET...]        replay each target's corpus once
# TARGET is a name without fuzz_ (import_line, ...); none means all of them.
# `fuzz` never writes into the source tree: the new inputs a target finds go
# to BUILD/fuzz-work/<target>/corpus (the seed corpus is read, not written)
# and a crash to BUILD/fuzz-work/<target>/crash-*. It prints, per target, the
# inputs run (libFuzzer's stat::number_of_executed_units) and fails when a
# target crashed. `regress` runs every file of tests/fuzz/corpus/<target>/
# and fails on the first crash, leak or sanitizer report.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode="${1:?usage: run.sh fuzz BUILD SECONDS [TARGET...] | run.sh regress BUILD [TARGET...]}"
build="${2:?build directory}"
shift 2
seconds=0
if [ "$mode" = fuzz ]; then
  seconds="${1:?seconds per target}"
  shift
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$here"/fuzz_*.c; do
    n="$(basename "$f" .c)"
    targets+=("${n#fuzz_}")
  done
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

status=0
summary=""
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  seeds="$here/corpus/$t"
  if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
    echo "run.sh: no target $t (want $bin and $seeds)" >&2
    exit 2
  fi
  case "$mode" in
  regress)
    files=("$seeds"/*)
    if "$bin" "${files[@]}" >"$build/fuzz-regress-$t.log" 2>&1; then
      echo "fuzz-regress $t: ${#files[@]} input(s), no crash"
    else
      echo "fuzz-regress $t: FAILED; see $build/fuzz-regress-$t.log" >&2
      tail -n 40 "$build/fuzz-regress-$t.log" >&2
      status=1
    fi
    ;;
  fuzz)
    work="$build/fuzz-work/$t"
    mkdir -p "$work/corpus"
    log="$work/fuzz.log"
    # A dictionary the build made (from the code's tables) before a kept one.
    dict=()
    if [ -f "$build/tests/fuzz/$t.dict" ]; then
      dict=(-dict="$build/tests/fuzz/$t.dict")
    elif [ -f "$here/$t.dict" ]; then
      dict=(-dict="$here/$t.dict")
    fi
    echo "fuzz $t: ${seconds}s (log $log)"
    rc=0
    "$bin" -max_total_time="$seconds" -print_final_stats=1 -timeout=25 \
      -artifact_prefix="$work/" "${dict[@]}" "$work/corpus" "$seeds" >"$log" 2>&1 || rc=$?
    units="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    found="$(find "$work/corpus" -type f | wc -l)"
    if [ "$rc" -eq 0 ]; then
      line="$t: ${units:-?} inputs run in ${seconds}s, no crash ($found inputs in $work/corpus)"
    else
      line="$t: CRASH after ${units:-?} inputs; see $log and $work/crash-*"
      status=1
    fi
    echo "fuzz $line"
    summary+="  $line"$'\n'
    ;;
  *)
    echo "run.sh: unknown mode $mode" >&2
    exit 2
    ;;
  esac
done
if [ "$mode" = fuzz ]; then
  printf 'fuzz summary:\n%s' "$summary"
fi
exit "$status"
