#!/usr/bin/env bash
# Runs one fuzz target for ctest (see README.md).
#   run_fuzz.sh corpus TARGET CORPUS_DIR        every seed once: a regression test
#   run_fuzz.sh run TARGET CORPUS_DIR SECONDS   fuzz for SECONDS, new inputs to a temp folder
# Fails on a crash, a sanitizer report, an input slower than 10 s (a hang), more than 2 GiB of
# memory, or a broken invariant (the targets abort). A failing input is kept under
# $FUZZ_ARTIFACTS (default: ./fuzz-artifacts in the build folder) for reproduction:
#   TARGET fuzz-artifacts/<target>-crash-<sha1>
set -euo pipefail
mode=$1 target=$2 corpus=$3
name=$(basename "$target")
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}
mkdir -p "$artifacts"
common=(-timeout=10 -rss_limit_mb=2048 -max_len=262144 -artifact_prefix="$artifacts/$name-"
        -print_final_stats=1)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$log" "$work"' EXIT
case $mode in
  corpus)
    set +e
    "$target" "${common[@]}" -runs=0 "$corpus" >"$log" 2>&1
    rc=$?
    set -e
    ;;
  run)
    seconds=$4
    set +e
    "$target" "${common[@]}" -max_total_time="$seconds" "$work" "$corpus" >"$log" 2>&1
    rc=$?
    set -e
    ;;
  *)
    echo "usage: $0 corpus|run TARGET CORPUS_DIR [SECONDS]" >&2
    exit 2
    ;;
esac
if [ "$rc" -ne 0 ]; then
  tail -n 60 "$log"
  echo "$name: FAILED (exit $rc); the input is under $artifacts" >&2
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
seeds=$(ls "$corpus" | wc -l)
echo "$name $mode: ${runs:-?} executions in ${secs:-0} s, ${cov:-cov: ?}, $seeds seeds, no crash"
