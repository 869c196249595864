#!/usr/bin/env bash
# Degradation under overload (docs/benchmarks.md): `sluice bench` at 2x the service_curve
# harness's capacity (and 1x) with the 20/30/50 P0/P1/P2 mix, against bench/admission/
# overload-budget.yaml with the harness's `degrade: shrink` (a request running late is answered
# after a quarter of its batch's time) and against the same file without it (DEGRADE=none). Keeps
# each run's JSON, text, plot and /metrics (sluice_degradations_total) in OUT_DIR.
# P0_SLO (default 2s) is both P0's class deadline and its goodput SLO: tighter than the 3s of
# run_overload.sh, which the router alone keeps at 2x, so that P0 requests queued behind a
# batch in service run late.
#   bench/admission/run_degrade.sh BUILD_DIR OUT_DIR [CAPACITY] [DURATION] [P0_SLO]
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; cap=${3:-100}; dur=${4:-10s}; p0=${5:-2s}
sluice=$build/apps/sluice
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rates="$(python3 -c "c=$cap; print(','.join(str(round(c*f)) for f in (1,2)))")"
slo="P0=$p0,P1=15s,P2=120s"
run() {  # name port [env...]
  local name=$1 port=$2; shift 2
  env "$@" P0_DEADLINE="$p0" SLUICE_LISTEN=127.0.0.1:$port "$sluice" run "$here/overload-budget.yaml" > "$out/$name.server.log" 2>&1 &
  local pid=$!
  sleep 1.5
  "$sluice" bench --target 127.0.0.1:$port --rates "$rates" --duration "$dur" --drain 40s --slo "$slo" \
    --label "$name" --json "$out/$name.json" --plot "$out/$name.png" | tee "$out/$name.txt"
  curl -s "127.0.0.1:$port/metrics" > "$out/$name.metrics.txt" || true
  grep '^sluice_degradations_total' "$out/$name.metrics.txt" || echo "(no degradations counted)"
  kill "$pid"; wait "$pid" || true
  sleep 1
}
run shrink 18095
run no-degrade 18096 DEGRADE=none
