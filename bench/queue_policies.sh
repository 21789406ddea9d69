#!/usr/bin/env bash
# Job completion time and queueing delay under each queue policy (fifo, sjf, las), printed as
# Markdown tables: (a) sim gen traces with heavy-tailed (log-normal, sigma 1.9) durations at
# 70–95 % offered load on the 64-GPU lab cluster, several seeds (medians, and medians of each
# seed's ratio to fifo);
# (b) the Alibaba openb default pod list as recorded, on the Alibaba GPU node list.
# Every job declares max_runtime = 2 × its duration (EASY backfill plans with it, nothing is
# stopped) and sjf reads users' estimates off by e^N(0, 0.5). Preempted jobs resume from a
# checkpoint taken every 10 minutes of work and spend 30 s restarting.
# Usage: bench/queue_policies.sh [GPUCLOUD] [SEEDS] [JOBS]   (defaults: build/gpucloud, 5, 20000)
set -euo pipefail
BIN=${1:-build/gpucloud}
SEEDS=${2:-5}
JOBS=${3:-20000}
TRACES=${TRACES:-../shared/traces/alibaba-gpu-v2023}
CLUSTER=deploy/sim/lab-64.yaml
REPLAY_FLAGS="--checkpoint-interval 10m --restart-cost 30s --json"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

figures() {  # JSON report -> "mean p50 p95 jct, mean p99 delay, preemptions"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c, w = d["completion_time_s"], d["queueing_delay_s"]
print(c["mean"], c["p50"], c["p95"], w["mean"], w["p99"], d["jobs"]["preemptions"])' "$1"
}

echo "## (a) heavy-tailed sim gen traces on $CLUSTER, $JOBS jobs, seeds 1..$SEEDS"
echo
echo "Figures are medians over the seeds; the ratios are the medians of each seed's ratio to fifo"
echo "on the same trace (the spread between seeds is large: a few very long jobs decide a trace)."
echo
echo "| load | policy | mean JCT (h) | p50 JCT (h) | p95 JCT (h) | mean delay (h) | p99 delay (h) | preemptions | mean JCT ÷ fifo | p99 delay ÷ fifo |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for load in 0.7 0.8 0.9 0.95; do
  for seed in $(seq 1 "$SEEDS"); do
    "$BIN" sim gen --trace-like "$TRACES/openb_pod_list_default.csv" --jobs "$JOBS" \
      --load "$load" --cluster "$CLUSTER" --seed "$seed" --runtime-estimates 0.5 \
      --max-runtime-factor 2 > "$WORK/trace.csv" 2>/dev/null
    for q in fifo sjf las; do
      "$BIN" sim replay --cluster "$CLUSTER" --trace "$WORK/trace.csv" --queue-policy "$q" \
        $REPLAY_FLAGS > "$WORK/$q-$seed.json"
    done
  done
  python3 - "$WORK" "$load" "$SEEDS" <<'PY'
import json, statistics, sys
work, load, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def figures(q, seed):
    d = json.load(open(f"{work}/{q}-{seed}.json"))
    c, w = d["completion_time_s"], d["queueing_delay_s"]
    return [c["mean"], c["p50"], c["p95"], w["mean"], w["p99"], d["jobs"]["preemptions"]]
def ratio(a, b):
    return a / b if b > 0 else (1.0 if a == 0 else float("inf"))
for q in ("fifo", "sjf", "las"):
    rows = [figures(q, s) for s in range(1, seeds + 1)]
    base = [figures("fifo", s) for s in range(1, seeds + 1)]
    m = [statistics.median(col) for col in zip(*rows)]
    jct = statistics.median(ratio(r[0], b[0]) for r, b in zip(rows, base))
    p99 = statistics.median(ratio(r[4], b[4]) for r, b in zip(rows, base))
    print(f"| {load} | {q} | {m[0]/3600:.2f} | {m[1]/3600:.3f} | {m[2]/3600:.2f} | "
          f"{m[3]/3600:.2f} | {m[4]/3600:.2f} | {m[5]:.0f} | {jct:.2f} | {p99:.2f} |")
PY
done

echo
echo "## (b) the Alibaba openb default pod list on the Alibaba GPU node list"
echo
echo "| policy | mean JCT (h) | p50 JCT (h) | p95 JCT (h) | mean delay (h) | p99 delay (h) | preemptions |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for q in fifo sjf las; do
  "$BIN" sim replay --cluster "$TRACES/openb_node_list_gpu_node.csv" \
    --trace "$TRACES/openb_pod_list_default.csv" --queue-policy "$q" $REPLAY_FLAGS > "$WORK/b-$q.json"
  figures "$WORK/b-$q.json" | python3 -c '
import sys
m = list(map(float, sys.stdin.read().split()))
print(f"| '"$q"' | {m[0]/3600:.2f} | {m[1]/3600:.3f} | {m[2]/3600:.2f} | {m[3]/3600:.3f} | {m[4]/3600:.2f} | {m[5]:.0f} |")'
done
