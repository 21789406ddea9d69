#!/usr/bin/env bash
# Job completion time and queueing delay under each queue policy (fifo, sjf, las), printed as
# Markdown tables: (a) sim gen traces with heavy-tailed (log-normal, sigma 1.9) durations at
# 70–95 % offered load on the 64-GPU lab cluster, several seeds, medians over the seeds;
# (b) the Alibaba openb default pod list as recorded, on the Alibaba GPU node list.
# Every job declares max_runtime = 2 × its duration (EASY backfill plans with it, nothing is
# stopped) and sjf reads users' estimates off by e^N(0, 0.5). Preempted jobs resume from a
# checkpoint taken every 10 minutes of work and spend 30 s restarting.
# Usage: bench/queue_policies.sh [GPUCLOUD] [SEEDS] [JOBS]   (defaults: build/gpucloud, 3, 20000)
set -euo pipefail
BIN=${1:-build/gpucloud}
SEEDS=${2:-3}
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

echo "## (a) heavy-tailed sim gen traces on $CLUSTER, $JOBS jobs, seeds 1..$SEEDS (medians)"
echo
echo "| load | policy | mean JCT (h) | p50 JCT (h) | p95 JCT (h) | mean delay (h) | p99 delay (h) | preemptions | mean JCT vs fifo |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for load in 0.7 0.8 0.9 0.95; do
  for seed in $(seq 1 "$SEEDS"); do
    "$BIN" sim gen --trace-like "$TRACES/openb_pod_list_default.csv" --jobs "$JOBS" \
      --load "$load" --cluster "$CLUSTER" --seed "$seed" --runtime-estimates 0.5 \
      --max-runtime-factor 2 > "$WORK/trace-$seed.csv" 2>/dev/null
    for q in fifo sjf las; do
      "$BIN" sim replay --cluster "$CLUSTER" --trace "$WORK/trace-$seed.csv" --queue-policy "$q" \
        $REPLAY_FLAGS > "$WORK/$q-$seed.json"
      figures "$WORK/$q-$seed.json" >> "$WORK/$q.txt"
    done
  done
  python3 - "$WORK" "$load" <<'PY'
import statistics, sys
work, load = sys.argv[1], sys.argv[2]
med = {}
for q in ("fifo", "sjf", "las"):
    rows = [list(map(float, l.split())) for l in open(f"{work}/{q}.txt")]
    med[q] = [statistics.median(col) for col in zip(*rows)]
for q in ("fifo", "sjf", "las"):
    m = med[q]
    ratio = 100 * (m[0] / med["fifo"][0] - 1)
    print(f"| {load} | {q} | {m[0]/3600:.2f} | {m[1]/3600:.3f} | {m[2]/3600:.2f} | "
          f"{m[3]/3600:.2f} | {m[4]/3600:.2f} | {m[5]:.0f} | {ratio:+.0f} % |")
PY
  rm -f "$WORK"/fifo.txt "$WORK"/sjf.txt "$WORK"/las.txt
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
