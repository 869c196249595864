#!/usr/bin/env bash
# The overload benchmark of docs/benchmarks.md ("Admission and load shedding"): `sluice bench`
# at 0.5x, 1x, 2x and 4x of the service_curve harness's capacity with a 20/30/50 P0/P1/P2 mix,
# against (a) priority_router (P0 bounded by the token budget: target_ttft 2s x measured
# prefill rate) + continuous dynamic batching, (b) the same router with P0 bounded by a count
# of 100 instead (router-count), (c) one FIFO without priorities (same batching, no router),
# and (d) the router with batch size 1 at 4x. The server's /metrics after each run are kept
# (shedding level, batch sizes, the measured prefill rate), and the shedding level sampled
# twice a second during the run (NAME.levels.txt: seconds since the bench started, level).
#   bench/admission/run_overload.sh BUILD_DIR OUT_DIR [CAPACITY] [DURATION]
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; cap=${3:-100}; dur=${4:-10s}
sluice=$build/apps/sluice
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rates="$(python3 -c "c=$cap; print(','.join(str(round(c*f)) for f in (0.5,1,2,4)))")"
slo="P0=3s,P1=15s,P2=120s"
run() {  # name yaml port rates drain [env...]
  local name=$1 yaml=$2 port=$3 levels=$4 drain=$5; shift 5
  env "$@" SLUICE_LISTEN=127.0.0.1:$port "$sluice" run "$yaml" > "$out/$name.server.log" 2>&1 &
  local pid=$!
  sleep 1.5
  # The shedding level twice a second (seconds since the bench started, level), for the log.
  ( t0=$(date +%s.%N); while kill -0 "$pid" 2>/dev/null; do
      lv=$(curl -s "127.0.0.1:$port/metrics" | awk '/^sluice_shed_level/ {print $2}')
      awk -v a="$t0" -v b="$(date +%s.%N)" -v lv="${lv:-none}" 'BEGIN {printf "%.1f %s\n", b - a, lv}'; sleep 0.5
    done ) > "$out/$name.levels.txt" 2>/dev/null &
  "$sluice" bench --target 127.0.0.1:$port --rates "$levels" --duration "$dur" --drain "$drain" --slo "$slo" \
    --label "$name" --json "$out/$name.json" --plot "$out/$name.png" | tee "$out/$name.txt"
  curl -s "127.0.0.1:$port/metrics" > "$out/$name.metrics.txt" || true
  kill "$pid"; wait "$pid" || true
  sleep 1
}
run router "$here/overload-router.yaml" 18090 "$rates" 40s
run router-count "$here/overload-router.yaml" 18093 "$rates" 40s P0_MAX_QUEUE=100 TOKEN_BUDGET=false P0_TARGET_TTFT=0s
run fifo "$here/overload-fifo.yaml" 18091 "$rates" 40s
run batch1 "$here/overload-router.yaml" 18092 "$(python3 -c "print(round($cap*4))")" 10s BATCH_P0=1 BATCH_P1=1 BATCH_P2=1
