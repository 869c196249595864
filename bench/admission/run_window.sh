#!/usr/bin/env bash
# The batching-window measurement of docs/benchmarks.md ("Admission and load shedding"): P0
# latency at 0.5x load with and without the dynamic_batcher's batching, on a harness whose
# single request takes 20ms (bench/admission/batching-window.yaml; 0.5x of its capacity
# without batching, 400/s, is 200/s), with the 20/30/50 P0/P1/P2 mix:
#   batched      the batcher at its defaults (window 10ms, adaptive, max_batch 8/32/128)
#   unbatched    max_batch 1 for every class: each request leaves the batcher alone at once
#   non-adaptive the batcher waiting out every window (adaptive: false)
# The server's /metrics after each run hold the batcher's sluice_batch_wait_seconds per class.
#   bench/admission/run_window.sh BUILD_DIR OUT_DIR [RATE] [DURATION]
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; rate=${3:-200}; dur=${4:-20s}
sluice=$build/apps/sluice
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
run() {  # name port [env...]
  local name=$1 port=$2; shift 2
  env "$@" SLUICE_LISTEN=127.0.0.1:$port "$sluice" run "$here/batching-window.yaml" > "$out/$name.server.log" 2>&1 &
  local pid=$!
  sleep 1.5
  "$sluice" bench --target 127.0.0.1:$port --rates "$rate" --duration "$dur" --drain 10s --slo P0=1s,P1=5s,P2=30s \
    --label "$name" --json "$out/$name.json" | tee "$out/$name.txt"
  curl -s "127.0.0.1:$port/metrics" > "$out/$name.metrics.txt" || true
  kill "$pid"; wait "$pid" || true
  sleep 1
}
run batched 18095
run unbatched 18096 MAX_BATCH_P0=1 MAX_BATCH_P1=1 MAX_BATCH_P2=1
run non-adaptive 18097 ADAPTIVE=false
