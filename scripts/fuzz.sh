#!/usr/bin/env bash
# Fuzzes taopipe's input parsers with cargo-fuzz (libFuzzer, nightly), then minimises the
# corpus that is checked in. The targets' bodies are in fuzz-targets/ (stable); CI replays
# fuzz/{seeds,corpus,regressions}/ through them as an ordinary test, without a fuzzer.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: scripts/fuzz.sh [--runs N] [--time SECONDS] [--workers W] [--sanitizer NAME] [--no-cmin] [TARGET...]

Runs each TARGET (default: all of `cargo fuzz list`) until N executions or SECONDS,
whichever comes first; default 10000000 runs, stopping at 1800 s (30 minutes). Giving
--time alone lifts the run limit; giving --runs alone keeps the 30-minute stop.
Then prints the executions each target did, and minimises its corpus (`cargo fuzz cmin`)
so the checked-in fuzz/corpus/TARGET stays small.

  --runs N          stop a target after N executions (libFuzzer -runs)
  --time SECONDS    stop a target after SECONDS (libFuzzer -max_total_time)
  --workers W       run W fuzzer processes per target on one shared corpus, each to N/W
                    executions (default 1); the executions printed are their sum
  --sanitizer NAME  address (default, cargo-fuzz's), leak, memory, thread or none
  --no-cmin         keep the corpus as the run left it
  -h, --help        this text

Inputs: fuzz/corpus/TARGET (grows, minimised after), fuzz/seeds/TARGET (hand-made by
fuzz/seeds.py, read only) and fuzz/regressions/TARGET (past crashes, read only). Inputs
are at most 4096 bytes; one taking over 10 s is a failure (a hang), as is a panic or
more than 2 GB of memory. A failing input is saved under fuzz/artifacts/TARGET/; the
script goes on with the next target and exits 1 at the end. Fix the bug, add a unit test
beside the parser, and move the input to fuzz/regressions/TARGET/. Logs: fuzz/target/logs/.

Installs cargo-fuzz (`cargo install cargo-fuzz --locked`) and the nightly toolchain
(rustup) if missing.

Examples:
  scripts/fuzz.sh                          every target, 10^7 runs or 30 min each
  scripts/fuzz.sh --time 600 cpu_list      one target for 10 minutes
  scripts/fuzz.sh --runs 100000 --no-cmin  a quick pass over all targets
  scripts/fuzz.sh --workers 2 --sanitizer none   the README's run (2 processes a target)
USAGE
}

runs="" time="" workers=1 sanitizer=address cmin=1 targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --runs) runs=${2:?--runs needs a number}; shift 2 ;;
        --time) time=${2:?--time needs seconds}; shift 2 ;;
        --workers) workers=${2:?--workers needs a number}; shift 2 ;;
        --sanitizer) sanitizer=${2:?--sanitizer needs a name}; shift 2 ;;
        --no-cmin) cmin=0; shift ;;
        -*) echo "$0: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
case "$runs$time$workers" in *[!0-9]*) echo "$0: --runs, --time and --workers take whole numbers" >&2; exit 2 ;; esac
[ "$workers" -ge 1 ] || { echo "$0: --workers must be at least 1, not $workers" >&2; exit 2; }
if [ -n "$time" ] && [ -z "$runs" ]; then runs=-1; fi
runs=${runs:-10000000}
time=${time:-1800}

cd "$(dirname "$0")/.."
if ! rustup run nightly cargo --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
# `-a`: debug assertions and overflow checks on, so arithmetic that wraps is a crash too.
build_flags=(-a --sanitizer "$sanitizer")
all=$(cargo +nightly fuzz list)
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$(echo $all)"
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all" || { echo "$0: no target $t (targets: $(echo $all))" >&2; exit 2; }
done
cargo +nightly fuzz build "${build_flags[@]}"

logs=fuzz/target/logs
mkdir -p "$logs"
summary=() failed=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    dirs=("fuzz/corpus/$t")
    for extra in "fuzz/seeds/$t" "fuzz/regressions/$t"; do
        [ -d "$extra" ] && dirs+=("$extra")
    done
    each=$runs
    [ "$runs" -lt 0 ] || each=$(( (runs + workers - 1) / workers ))
    echo "== $t: $workers x -runs=$each -max_total_time=$time (logs: $logs/$t.*.log)"
    start=$(date +%s)
    status=ok
    pids=()
    for w in $(seq 1 "$workers"); do
        # The first directory gets the new inputs; -reload (on by default) shares them.
        cargo +nightly fuzz run "${build_flags[@]}" "$t" "${dirs[@]}" -- \
            -runs="$each" -max_total_time="$time" -max_len=4096 -timeout=10 \
            -print_final_stats=1 >"$logs/$t.$w.log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=FAILED; done
    seconds=$(( $(date +%s) - start ))
    execs=0
    for w in $(seq 1 "$workers"); do
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.$w.log" | tail -1)
        execs=$(( execs + ${n:-0} ))
        if [ "$status" = FAILED ]; then
            grep -E "^(==[0-9]+== ERROR|thread .* panicked|.*deadly signal|.*Test unit written to)" "$logs/$t.$w.log" | head -5 || true
        fi
    done
    [ "$status" = ok ] || failed=1
    summary+=("$(printf '%-20s %12s executions %6s s  %s' "$t" "$execs" "$seconds" "$status")")
    echo "${summary[-1]}"
    if [ "$cmin" = 1 ] && [ "$status" = ok ]; then
        cargo +nightly fuzz cmin "${build_flags[@]}" "$t" >"$logs/$t.cmin.log" 2>&1
        echo "   corpus minimised: $(ls "fuzz/corpus/$t" | wc -l) files, $(cat "fuzz/corpus/$t"/* | wc -c) bytes"
    fi
done
echo "== summary (-runs=$runs over $workers process(es) a target, -max_total_time=$time, sanitizer $sanitizer)"
printf '%s\n' "${summary[@]}"
exit $failed
