# Sourced by the demo scripts, never run: both start from the repository's
# top with the demo's secrets exported and $bin naming the built binary
# (the first argument, a build folder, defaults to build).
build=${1:-build}
cd "$(dirname "$0")/.."
bin=$build/src/understudy
set -a
. scenarios/demo.env
set +a
