#!/usr/bin/env bash
# A long fuzzing session of one target (see README.md):
#   fuzz/run_long.sh BUILD_DIR TARGET SECONDS WORKERS
# New inputs go to BUILD_DIR/corpus-TARGET (kept between sessions), crashes to
# BUILD_DIR/fuzz-artifacts/. The seed corpus in fuzz/corpus/TARGET is read, never written.
set -euo pipefail
build=$1 target=${2:?"name a target: $(ls "$(dirname "$0")"/corpus | tr '\n' ' ')"} seconds=$3
workers=$4
here=$(cd "$(dirname "$0")" && pwd)
binary=$build/fuzz_$target
[ -x "$binary" ] || { echo "no such fuzz target: $binary" >&2; exit 2; }
work=$build/corpus-$target
artifacts=$build/fuzz-artifacts
mkdir -p "$work" "$artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$binary" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 -print_funcs=0 \
  -max_total_time="$seconds" -fork="$workers" \
  -artifact_prefix="$artifacts/$target-" "$work" "$here/corpus/$target"
