#!/usr/bin/env bash
# The serving-engine benchmark over HTTP of docs/benchmarks.md ("Serving engine over HTTP"):
# `sluice run bench/generation/serve-engine.yaml` with the 110M Q8_0 synth model (written once
# to /tmp/sluice-synth when absent; SLUICE_MODEL overrides it), then `sluice bench` closed loop
# at 1, 4, 8 and 16 concurrent streams, each for DURATION, prompts of about 128 tokens, answers
# of up to 128 tokens, temperature 0: once with distinct prompts (OUT/serve-engine.*), once with
# one shared prompt (prefix reuse, OUT/serve-engine-prefix.*), each as text, JSON and PNG; also
# the server log, a usage probe (one non-streamed answer: its prompt and completion tokens),
# /metrics at the end, and the load average before and after.
#   bench/generation/run_http.sh BUILD_DIR OUT_DIR [DURATION] [LEVELS]
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; dur=${3:-30s}; levels=${4:-1,4,8,16}
sluice=$build/apps/sluice
here=$(cd "$(dirname "$0")" && pwd)
port=${PORT:-18100}
model=${SLUICE_MODEL:-/tmp/sluice-synth/synth-110m-q8_0.gguf}
max_tokens=${MAX_TOKENS:-128}
mkdir -p "$out"
if [ ! -f "$model" ]; then
  mkdir -p "$(dirname "$model")"
  "$sluice" model synth --preset 110m --type q8_0 "$model"
fi
# 132 prompt tokens with the synth model's vocabulary (English text falls back to byte pieces,
# about one token per character; the usage probe below reports the exact count).
prompt=${PROMPT:-"The quick brown fox jumps over the lazy dog while the farmer watches from the old wooden gate."}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/serve-engine.load.txt"
SLUICE_MODEL=$model SLUICE_LISTEN=127.0.0.1:$port "$sluice" run "$here/serve-engine.yaml" > "$out/serve-engine.server.log" 2>&1 &
pid=$!
stop_server() {  # SIGTERM drains; give it 30 s, then make sure
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
trap stop_server EXIT
for _ in $(seq 1 300); do  # up to 30 s for the model to map and the listener to come up
  if curl -sf "127.0.0.1:$port/readyz" > /dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "server exited; see $out/serve-engine.server.log" >&2; exit 1; fi
  sleep 0.1
done
curl -sf "127.0.0.1:$port/readyz" > /dev/null || { echo "server not ready after 30 s" >&2; exit 1; }

# One answer before measuring: warms the pages in and shows the real prompt/answer lengths.
curl -s "127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d "{\"model\":\"sluice\",\"max_tokens\":$max_tokens,\"temperature\":0,\"messages\":[{\"role\":\"user\",\"content\":\"$prompt\"}]}" \
  > "$out/serve-engine.probe.json"
echo

# (a) every prompt distinct ("<number>: " first): each request pays its whole prefill, as
#     unrelated users' prompts would; (b) the same prompt every time: the prefix cache serves
#     all but its last token from the second request on (TTFT is then about one decode step).
bench() {  # name [flags...]
  local name=$1; shift
  "$sluice" bench --target 127.0.0.1:$port --concurrency "$levels" --duration "$dur" --drain 180s \
    --max-tokens "$max_tokens" --temperature 0 --prompt "$prompt" "$@" \
    --label "$name" --json "$out/$name.json" --plot "$out/$name.png" | tee "$out/$name.txt"
  curl -s "127.0.0.1:$port/metrics" > "$out/$name.metrics.txt" || true  # counters since start
  echo "load average after $name: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/serve-engine.load.txt"
}
bench serve-engine --distinct-prompts
bench serve-engine-prefix
