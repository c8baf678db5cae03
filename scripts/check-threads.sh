#!/bin/sh
# check-threads.sh [SOURCE_DIR]: holds docs/threads.md's table of threads
# (one row a name, as `top -H` shows it) against the code, both ways, and
# fails naming each disagreement:
#   1. a row's "Named by" file names that thread: it holds the name as a
#      string ("ust-writer"), or builds it as "ust-%s" from a namespace
#      found as a string in src/ ("candidate"), or is the CMake file whose
#      add_executable() gives the process its name; a row named by a
#      library (not a file) names one the build links (PkgConfig::NAME);
#   2. every thread name in the code (a string "ust-..." in src/: the prefix
#      is kept for them) is a row, and a file building names with "ust-%s"
#      is some row's "Named by";
#   3. every file of src/ that starts or names a thread (pthread_create,
#      uv_thread_create, uv_queue_work, ust_name_thread) is mentioned on the
#      page, so a new thread, named or not, is documented where it starts.
# The names live threads show are checked by test_serve's census, which
# reads the same table. Exit 0 when they agree, 1 (a line each) when not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

# --self-test [SOURCE_DIR]: breaks a copy of the tree once per rule and
# checks that each breach is reported (ctest runs this as "threads_selftest").
if [ "${1:-}" = "--self-test" ]; then
    . "$here/selftest.sh"
    selftest_copy "$here/check-threads.sh" "${2:-$here/..}" src docs/threads.md
    sed -i '/^| `ust-writer` |/d' docs/threads.md
    sed -i '/^| `ust-runner` |/a | `ust-ghost` | `src/http/follower.c` | x | x | x | own |' docs/threads.md
    sed -i '/^| `ust-link` |/a | `zz-lib-thread` | zzlib | x | x | x | own |' docs/threads.md
    printf 'static const char *name = "ust-zz-%%s";\n' >src/util/zz_named.c
    printf 'static void f(void) { pthread_create(0, 0, 0, 0); }\n' >src/util/zz_thread.c
    selftest_reports "$here/check-threads.sh" "$tmp" \
        '"ust-writer" (src/http/writer.c) .*rule 2' \
        'ust-ghost.*src/http/follower.c does not name it.*rule 1' \
        'zz-lib-thread.*zzlib.*rule 1' \
        'src/util/zz_named.c builds .*rule 2' \
        'src/util/zz_thread.c starts or names a thread.*rule 3'
fi

root=${1:-$here/..}
cd "$root"
doc=docs/threads.md
status=0
fail() {
    echo "$*"
    status=1
}
[ -f "$doc" ] || { echo "$doc: missing"; exit 1; }

# The table's rows: "name<TAB>named-by cell".
rows=$(awk -F'|' '/^\| `/ { n = $2; gsub(/[ `]/, "", n); print n "\t" $3 }' "$doc")
names=$(printf '%s\n' "$rows" | cut -f1)

# Rule 1: each row against the file (or library) that names it.
while IFS='	' read -r name by; do
    path=$(printf '%s' "$by" | sed -n 's/^[^`]*`\([^`]*\)`.*/\1/p')
    if [ -n "$path" ] && [ -f "$path" ]; then
        if grep -qF "\"$name\"" "$path" ||
            grep -qE "add_executable\($name[ )]" "$path" ||
            { grep -qF '"ust-%s"' "$path" &&
                grep -rqF --include='*.c' "\"${name#ust-}\"" src; }; then
            continue
        fi
        fail "$doc: thread $name: $path does not name it (rule 1: a row names a thread the code names)"
    else
        lib=$(printf '%s' "$by" | awk '{ print toupper($1) }')
        grep -q "PkgConfig::$lib\b" src/CMakeLists.txt && continue
        fail "$doc: thread $name: named by \"$(echo $by)\", neither a file of the tree nor a library the build links (rule 1)"
    fi
done <<ROWS
$rows
ROWS

# Rule 2: every name the code gives is a row.
for f in $(grep -rlE --include='*.c' '"ust-[a-z0-9%-]+"' src | sort); do
    for lit in $(grep -ohE '"ust-[a-z0-9%-]+"' "$f" | sort -u); do
        name=$(printf '%s' "$lit" | tr -d '"')
        case "$name" in
        *%s*)
            printf '%s\n' "$rows" | cut -f2 | grep -qF "\`$f\`" ||
                fail "$f builds thread names with $lit: no row of $doc is named by it (rule 2)"
            ;;
        *)
            printf '%s\n' "$names" | grep -qxF "$name" ||
                fail "$doc: no row for thread $lit ($f) (rule 2: every name the code gives is a row)"
            ;;
        esac
    done
done

# Rule 3: every file that starts or names a thread is on the page.
for f in $(grep -rlE --include='*.c' \
    '\b(pthread_create|uv_thread_create|uv_queue_work|ust_name_thread) *\(' src | sort); do
    grep -qF "$f" "$doc" ||
        fail "$f starts or names a thread, and $doc does not mention it (rule 3)"
done
exit $status
