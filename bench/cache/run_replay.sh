#!/usr/bin/env bash
# The answer caches' effect of docs/benchmarks.md ("Answer caches: effect on a repeating
# workload"): the default pipeline with the model (stories260K unless SLUICE_MODEL names another)
# over the project's docs, replaying bench/cache/repeat_workload.jsonl (200 questions, 30% of
# them repeats: half verbatim, half reworded; 38 near-miss pairs that must not share an answer)
# with `sluice bench --workload`, closed loop at CONCURRENCY streams, temperature 0. Each round
# starts a fresh server (empty caches) twice, side by side: caches on (SLUICE_CACHE_STORE=memory)
# and off (SLUICE_CACHE_STORE=off: the same pipeline file, both cache nodes passing requests on).
# Per run: the bench's table and JSON (hits per tier and kind of line, false hits, end-to-end
# mean/p95), the server's /metrics (engine sequences: sluice_engine_ttft_seconds_count) and log.
# CACHE_STORE=redis runs the cached side with store: redis against SLUICE_REDIS_URL (a Redis you
# started; each run flushes it first), to measure the shared tier's cost.
#   bench/cache/run_replay.sh BUILD_DIR OUT_DIR [ROUNDS] [CONCURRENCY]
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; rounds=${3:-3}; concurrency=${4:-4}
sluice=$(cd "$build" && pwd)/apps/sluice
root=$(cd "$(dirname "$0")/../.." && pwd)
port=${PORT:-18210}
model=${SLUICE_MODEL:-$root/../shared/models/stories260K.gguf}
max_tokens=${MAX_TOKENS:-64}
cache_store=${CACHE_STORE:-memory}
mkdir -p "$out"
out=$(cd "$out" && pwd)
kb=$out/kb
rm -rf "$kb"
SLUICE_KB=$kb "$sluice" ingest "$root/pipelines/default.yaml" --source "$root/docs" > "$out/ingest.log" 2>&1

pid=
stop_server() {  # SIGTERM drains; give it 30 s, then make sure
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || { pid=; return 0; }; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  pid=
}
trap stop_server EXIT

run() {  # name store
  local name=$1 store=$2
  if [ "$store" = redis ]; then redis-cli -u "${SLUICE_REDIS_URL:-redis://127.0.0.1:6379}" FLUSHALL > /dev/null; fi
  SLUICE_KB=$kb SLUICE_MODEL=$model SLUICE_CACHE_STORE=$store SLUICE_LISTEN=127.0.0.1:$port \
    "$sluice" run "$root/pipelines/default.yaml" > "$out/$name.server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    curl -sf "127.0.0.1:$port/readyz" > /dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "server exited; see $out/$name.server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "load average before $name: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
  "$sluice" bench --target 127.0.0.1:$port --workload "$root/bench/cache/repeat_workload.jsonl" \
    --concurrency "$concurrency" --duration 600s --drain 120s --max-tokens "$max_tokens" --temperature 0 \
    --label "$name" --json "$out/$name.json" | tee "$out/$name.txt"
  curl -s "127.0.0.1:$port/metrics" > "$out/$name.metrics.txt"
  stop_server
}

for round in $(seq 1 "$rounds"); do
  run "cached-$round" "$cache_store"
  run "uncached-$round" off
done
python3 "$root/bench/cache/summarize_replay.py" "$out" "$rounds" | tee "$out/summary.txt"
