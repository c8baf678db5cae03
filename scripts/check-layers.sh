#!/bin/sh
# check-layers.sh [SOURCE_DIR]: reads every #include in src/ and
# include/understudy/ against the module layering declared by the ust_module()
# lines of src/CMakeLists.txt, and fails naming the file, the include and the
# rule it breaks:
#   1. modules are declared lowest layer first: DEPS name modules
#      declared above (so module dependencies cannot form a cycle);
#   2. every public header belongs to exactly one module (its HEADERS);
#   3. a file includes public headers only of its own module and of the
#      modules it depends on, directly or through another (DEPS);
#   4. a file includes private headers ("module/file.h") only of its own
#      module;
#   5. no include cycle between files of different concepts (a concept: the
#      .c/.h pair of one name in one module folder; each public header is one
#      of its own);
#   6. the bundled plugins (src/plugins) include no understudy header but
#      plugin.h, as any third-party plugin.
# Exit 0 when the tree keeps every rule, 1 (with one line per breach) when not.
set -eu
here=$(cd "$(dirname "$0")" && pwd)

# --self-test [SOURCE_DIR]: breaks a copy of the tree once per rule and
# checks that each breach is reported, so the check cannot pass by missing
# them (ctest runs this as "layers_selftest").
if [ "${1:-}" = "--self-test" ]; then
    . "$here/selftest.sh"
    selftest_copy "$here/check-layers.sh" "${2:-$here/..}" src include
    sed -i 's/^ust_module(sig DEPS util/ust_module(sig DEPS event util/' src/CMakeLists.txt
    : >include/understudy/zz_unowned.h
    sed -i '1i #include <understudy/serve.h>' src/util/alloc.c
    sed -i '1i #include "runner/rundb.h"' src/log/append.c
    sed -i '1i #include "../http/http_internal.h"' src/drive/send.c
    sed -i '1i #include <understudy/log.h>' src/plugins/legacy/legacy.c
    printf '#include "plugin/link.h"\n' >>src/plugin/arena.h
    printf '#include "plugin/arena.h"\n' >>src/plugin/link.h
    # (the cycle is named from wherever the search met it: awk's order)
    selftest_reports "$here/check-layers.sh" "$tmp" \
        'ust_module(sig) DEPS event: .*rule 1' 'zz_unowned.h.*rule 2' \
        'src/util/alloc.c:1: #include <understudy/serve.h>.*module http.*rule 3' \
        'src/log/append.c:1: #include "runner/rundb.h".*rule 4' \
        'src/drive/send.c:1: .*\.\..*rule 4' \
        'src/plugins/legacy/legacy.c:1: .*rule 6' \
        'plugin/\(arena -> plugin/link -> plugin/arena\|link -> plugin/arena -> plugin/link\).*rule 5'
fi

root=${1:-$here/..}
cd "$root"

# One line per include: FILE<TAB>LINE<TAB>include text (<...> or "...").
includes() {
    for f in "$@"; do
        awk -v f="$f" '
            /^[ \t]*#[ \t]*include[ \t]*[<"]/ {
                s = $0
                sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
                sub(/[ \t]*(\/[\/*].*)?$/, "", s)
                print f "\t" FNR "\t" s
            }' "$f"
    done
}

{
    grep -E '^ust_module\(' src/CMakeLists.txt | sed 's/^/MODULE\t/'
    ls include/understudy/*.h | sed 's/^/PUBLIC\t/'
    includes $(find src include/understudy -name '*.[ch]' | sort)
} | awk -F'\t' '
function fail(msg) { print msg; bad = 1 }
# Module of a file path, or "" when it is not in a module folder.
function module_of(path,   p) {
    if (path ~ /^include\/understudy\//) {
        p = path; sub(/^include\/understudy\//, "", p)
        return (p in owner) ? owner[p] : ""
    }
    if (path ~ /^src\/plugins\//) return "plugins"
    if (path ~ /^src\/[^\/]+\//) {
        p = path; sub(/^src\//, "", p); sub(/\/.*/, "", p)
        return (p in declared) ? p : ""
    }
    return ""
}
function concept_of(path,   b) {
    b = path; sub(/.*\//, "", b); sub(/\.[ch]$/, "", b)
    if (path ~ /^include\//) return "<understudy/" b ".h>"
    return module_of(path) "/" b
}
function allowed_list(m,   s, d) {
    s = ""
    for (d in declared) if (d != m && (m SUBSEP d) in reach) s = s " " d
    return s == "" ? " (none)" : s
}
# Depth-first search of the concept graph; on a back edge, prints the cycle.
function dfs(c,   i, n, d, k, cyc) {
    state[c] = 1
    stack[++depth] = c
    n = nout[c]
    for (i = 1; i <= n; i++) {
        d = out[c, i]
        if (state[d] == 1) {
            cyc = ""
            for (k = depth; k >= 1 && stack[k] != d; k--) ;
            for (; k <= depth; k++)
                cyc = cyc stack[k] " -> "
            cyc = cyc d
            files = ""
            for (k = depth; k >= 1 && stack[k] != d; k--) ;
            for (; k < depth; k++) files = files why[stack[k], stack[k + 1]] "; "
            files = files why[c, d]
            if (!(cyc in seen_cycle)) {
                seen_cycle[cyc] = 1
                fail("include cycle between concepts: " cyc " (" files \
                     "; rule 5: files of different concepts must not include each other in a circle)")
            }
        } else if (state[d] == 0) {
            dfs(d)
        }
    }
    depth--
    state[c] = 2
}
$1 == "MODULE" {
    line = $2
    sub(/^ust_module\(/, "", line); sub(/\).*$/, "", line)
    n = split(line, w, /[ \t]+/)
    name = w[1]; declared[name] = ++order; reach[name, name] = 1
    key = ""
    for (i = 2; i <= n; i++) {
        if (w[i] ~ /^(DEPS|HEADERS|LIBS)$/) { key = w[i]; continue }
        if (key == "DEPS") {
            if (!(w[i] in declared)) {
                fail("src/CMakeLists.txt: ust_module(" name ") " key " " w[i] \
                     ": " w[i] " is not declared above it (rule 1: modules are listed lowest layer first)")
                continue
            }
            # What w[i] reaches, name reaches too (w[i] is complete already).
            for (d in declared) if ((w[i] SUBSEP d) in reach) reach[name, d] = 1
        } else if (key == "HEADERS") {
            if (w[i] in owner)
                fail("src/CMakeLists.txt: " w[i] " is in the HEADERS of both " owner[w[i]] \
                     " and " name " (rule 2: a public header belongs to one module)")
            owner[w[i]] = name; listed[w[i]] = 1
        }
    }
    next
}
$1 == "PUBLIC" {
    h = $2; sub(/^include\/understudy\//, "", h)
    if (!(h in owner))
        fail($2 ": no ust_module() in src/CMakeLists.txt lists " h " in its HEADERS" \
             " (rule 2: every public header belongs to one module)")
    exists[h] = 1
    next
}
{
    file = $1; lineno = $2; inc = $3; where = file ":" lineno ": #include " inc
    m = module_of(file)
    if (m == "") next                 # not a module folder (e.g. a new one): not judged
    target = ""
    if (inc ~ /^<understudy\//) {
        h = inc; sub(/^<understudy\//, "", h); sub(/>$/, "", h)
        target = "include/understudy/" h
        if (m == "plugins") {
            if (h != "plugin.h")
                fail(where ": a bundled plugin includes no understudy header but plugin.h" \
                     " (rule 6: plugins build as a third party would)")
        } else if (!(h in owner)) {
            fail(where ": " h " belongs to no module (rule 2: list it in the HEADERS of its" \
                 " module in src/CMakeLists.txt)")
        } else if (!((m SUBSEP owner[h]) in reach)) {
            fail(where ": " h " belongs to module " owner[h] ", which " m " does not depend on" \
                 " (rule 3: a module includes headers of its own and of its DEPS only, never of" \
                 " a higher layer; " m " may use:" allowed_list(m) ")")
        }
    } else if (inc ~ /^"/) {
        q = inc; gsub(/"/, "", q)
        if (q ~ /(^|\/)\.\.\//) {
            fail(where ": a path with .. (rule 4: a private header is named \"module/file.h\"" \
                 " and read by its own module only)")
        } else if (q ~ /\//) {
            pm = q; sub(/\/.*/, "", pm)
            target = "src/" q
            if (file ~ /^include\//)
                fail(where ": a public header includes a private one (rule 4)")
            else if (pm in declared && pm != m)
                fail(where ": a private header of module " pm " (rule 4: private headers are" \
                     " read by their own module only; use " pm "'"'"'s public header in include/understudy/)")
        } else {
            target = file; sub(/[^\/]*$/, q, target)   # same folder
        }
    }
    if (target != "") {
        a = concept_of(file); b = concept_of(target)
        if (a != b && !((a SUBSEP b) in edge)) {
            edge[a, b] = 1; out[a, ++nout[a]] = b; nodes[a] = 1; nodes[b] = 1
            why[a, b] = file " includes " inc
        }
    }
}
END {
    for (h in listed)
        if (!(h in exists))
            fail("src/CMakeLists.txt: HEADERS of " owner[h] " lists " h \
                 ", which is not in include/understudy/ (rule 2)")
    for (c in nodes) if (state[c] == 0) dfs(c)
    exit bad
}'
