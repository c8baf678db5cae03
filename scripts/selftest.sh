# The checks' --self-test modes share this (check-layers.sh,
# check-threads.sh); it is sourced, not run.
#
# selftest_copy CHECK SRC PATH...: copies PATH... of the source tree SRC
# into a new folder ($tmp, removed on exit), checks that CHECK passes there
# while nothing is broken, and leaves the shell in it.
selftest_copy() {
    check=$1 src=$2
    shift 2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$src" && tar cf - "$@") | tar xf - -C "$tmp"
    sh "$check" "$tmp" >"$tmp/clean.out" ||
        { echo "self-test: the unbroken tree does not pass:"; cat "$tmp/clean.out"; exit 1; }
    cd "$tmp"
}

# selftest_reports CHECK TREE WANT...: runs the check on TREE, a copy of the
# source tree broken once per rule, and exits: 0 when the check fails and its
# output matches every WANT (a grep pattern), 1 naming each one missed.
selftest_reports() {
    check=$1 tree=$2
    shift 2
    if sh "$check" "$tree" >"$tree/broken.out"; then
        echo "self-test: a broken tree passed"
        exit 1
    fi
    status=0
    for want in "$@"; do
        grep -q -- "$want" "$tree/broken.out" || { echo "self-test: not reported: $want"; status=1; }
    done
    [ $status = 0 ] || cat "$tree/broken.out"
    exit $status
}
