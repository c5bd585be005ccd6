#!/usr/bin/env bash
# The runtime's stress tests at full size (CI runs the same tests smaller, as part of
# `cargo test`):
#   runtime/tests/stress.rs           a random DAG of 10^6 tasks with injected panics, then
#                                     a clean one; 10^6 tasks in 1000 graphs submitted from
#                                     4 threads, half with panics; gangs of every width from
#                                     4 threads on pools of 2 and 8 workers
#   runtime/tests/stress_shutdown.rs  400 rounds of dropping the runtime while graphs and a
#                                     pipeline are in flight: no hang (a watchdog aborts),
#                                     no leak (live heap bytes come back)
# One test at a time, so that each has the machine (and its memory) to itself; prints the
# wall time of each test binary and of the whole run.
#
# Usage: scripts/stress.sh [--help] [TEST_NAME_FILTER]
set -euo pipefail
case "${1:-}" in
    -h|--help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "$0: unknown option $1 (try --help)" >&2
        exit 2
        ;;
esac
cd "$(dirname "$0")/.."
filter=("$@")
cargo test --release -p taopipe-runtime --test stress --test stress_shutdown --no-run
export TAOPIPE_STRESS=full
total=$SECONDS
for test in stress stress_shutdown; do
    start=$SECONDS
    cargo test --release -p taopipe-runtime --test "$test" -- --test-threads=1 "${filter[@]}"
    echo "stress.sh: $test took $((SECONDS - start)) s"
done
echo "stress.sh: all took $((SECONDS - total)) s"
