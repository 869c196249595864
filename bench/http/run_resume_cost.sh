#!/usr/bin/env bash
# What resumable streams cost (docs/benchmarks.md, "Resumable streams"): the default pipeline with
# a model (every token an SSE event the source numbers and keeps), `sluice bench` closed loop,
# with resume on (the default: resume.grace 30s) and off (grace 0), alternating, a fresh server
# per run, ROUNDS rounds. Prints req/s and TTFT p50 of each run and the on/off ratios.
#   bench/http/run_resume_cost.sh SLUICE_BINARY MODEL [ROUNDS=5] [CONCURRENCY=8] [DURATION=8s]
set -euo pipefail
SLUICE=$(realpath "$1")
MODEL=$(realpath "$2")
ROUNDS=${3:-5}
CONCURRENCY=${4:-8}
DURATION=${5:-8s}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
source "$SRC/tests/apps/lib.sh"  # scratch_dir, wait_line
scratch_dir resume-bench
sed 's|^      default_priority: P0$|      default_priority: P0\n      resume: {grace: 0s}|' "$SRC/pipelines/default.yaml" > "$DIR/off.yaml"
grep -q "grace: 0s" "$DIR/off.yaml" || { echo "run_resume_cost: could not turn resume off" >&2; exit 1; }
cp "$SRC/pipelines/default.yaml" "$DIR/on.yaml"
export SLUICE_KB="$DIR/kb" SLUICE_MODEL="$MODEL"
"$SLUICE" ingest "$DIR/on.yaml" --source "$SRC/docs" > /dev/null
echo "# bench/http/run_resume_cost.sh $(basename "$SLUICE") $(basename "$MODEL") ROUNDS=$ROUNDS ($(date -u +%FT%TZ))"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | on: req/s, TTFT p50 ms | off: req/s, TTFT p50 ms | on / off |"
echo "| --- | --- | --- | --- |"
ratios=()
for ((r = 1; r <= ROUNDS; r++)); do
  declare -A rate ttft
  for mode in on off; do
    SLUICE_LISTEN=127.0.0.1:0 "$SLUICE" run "$DIR/$mode.yaml" 2> "$DIR/run.log" &
    pid=$!
    addr=$(wait_line "$DIR/run.log" "serving on" "$pid" "sluice run" | sed 's|.*http://||')
    line=$("$SLUICE" bench --target "$addr" --concurrency "$CONCURRENCY" --duration "$DURATION" --stream \
      --distinct-prompts --max-tokens 96 --temperature 0 --prompt "How does Sluice shed load when it is overloaded?" 2>&1 |
      awk '$1 == "P0" {print $4, $9}')
    rate[$mode]=${line% *}
    ttft[$mode]=${line#* }
    kill "$pid"
    wait "$pid" 2> /dev/null || true
  done
  ratio=$(awk -v a="${rate[on]}" -v b="${rate[off]}" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$ratio")
  echo "| $r | ${rate[on]}, ${ttft[on]} | ${rate[off]}, ${ttft[off]} | $ratio |"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print "median on/off: " a[int((NR + 1) / 2)]}'
