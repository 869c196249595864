#!/usr/bin/env bash
# Peak memory of `sluice run pipelines/default.yaml` serving POST /v1/embeddings: VmHWM after
# ROUNDS requests of 256 twenty-word sentences, with the encoder and without it
# (SLUICE_ENCODER pointing nowhere: the embeddings node is off), beside the model file's size.
#   bench/encoder/embeddings_rss.sh [ROUNDS=5]     (results in docs/benchmarks.md)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
source "$ROOT/tests/apps/lib.sh"
scratch_dir embeddings-rss
node "$ROOT/bench/encoder/make_sentences.mjs" 256 "$DIR/sentences.json"
python3 -c 'import json,sys; print(json.dumps({"model":"use-lite","input":json.load(open(sys.argv[1]))}))' "$DIR/sentences.json" > "$DIR/body.json"
measure() {  # LABEL [ENV...]
  local label=$1; shift
  env "$@" SLUICE_KB="$DIR/kb-$label" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL= "$ROOT/build/apps/sluice" run "$ROOT/pipelines/default.yaml" 2> "$DIR/$label.log" &
  local pid=$!
  local port
  port=$(wait_line "$DIR/$label.log" "serving on" "$pid" "sluice run" | sed 's|.*http://||')
  local idle
  idle=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  for _ in $(seq 1 "$ROUNDS"); do
    curl -s -o /dev/null -w '%{http_code} ' -H 'Content-Type: application/json' --data-binary @"$DIR/body.json" "http://$port/v1/embeddings"
  done
  echo
  echo "$label: RSS after start ${idle} KiB, peak (VmHWM) $(awk '/VmHWM/ {print $2}' "/proc/$pid/status") KiB"
  kill "$pid"; wait "$pid" 2> /dev/null || true
}
measure with-encoder
measure without-encoder SLUICE_ENCODER=/nonexistent/use-lite.gguf
model=${SLUICE_ENCODER:-${SLUICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}/models/use-lite.gguf}
echo "model file: $(( $(stat -c %s "$model") / 1024 )) KiB"
