#!/usr/bin/env bash
# The sentence encoder beside its JavaScript reference, on the same 256 sentences of exactly
# 20 words (make_sentences.mjs), alternating the two in each round so load changes hit both:
#   bench/encoder/run_encoder_bench.sh [ROUNDS]        (default 3; results in docs/benchmarks.md)
# Per round: encoder_bench at batch 1, 16, 256 on 1 and 2 threads, then the reference at batch
# 1, 16 and 256 (one Node thread: TensorFlow.js's CPU backend). Prints every JSON line and then
# the medians over rounds, with Sluice's batch-256 / 2-thread rate over the reference's batch-256
# rate, measured in the same rounds. Needs build/ and scripts/setup-encoder.
#   LAYOUTS="f32 bf16" bench/encoder/run_encoder_bench.sh 3
# also runs Sluice with SLUICE_F32_LAYOUT=bf16 (BF16 weight panels, AVX-512 BF16 CPUs) in every
# round, beside the default F32 panels, as "sluice-bf16".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-3}
BIN=$ROOT/build/bench/encoder/encoder_bench
REF=$ROOT/tests/inference/encoder/reference
[[ -x $BIN ]] || { echo "build first: cmake --build build --target encoder_bench" >&2; exit 1; }
[[ -d $REF/node_modules/@energetic-ai/embeddings ]] || { echo "run scripts/setup-encoder first" >&2; exit 1; }
source "$ROOT/tests/apps/lib.sh"
scratch_dir encoder-bench
node "$ROOT/bench/encoder/make_sentences.mjs" 256 "$DIR/sentences.json"
lscpu | grep -E "Model name|^Flags" | sed 's/^Flags: */flags: /' | cut -c1-400 >&2
LAYOUTS=${LAYOUTS:-f32}
for r in $(seq 1 "$ROUNDS"); do
  for layout in $LAYOUTS; do
    who=sluice; env=()
    if [[ $layout == bf16 ]]; then who=sluice-bf16; env=(SLUICE_F32_LAYOUT=bf16); fi
    for t in 1 2; do
      for b in 1 16 256; do
        echo "$who round=$r $(env "${env[@]}" "$BIN" --sentences "$DIR/sentences.json" --threads "$t" --batch "$b" --repeat 3)"
      done
    done
  done
  for b in 1 16 256; do
    echo "reference round=$r $(SLUICE_REFERENCE_DIR=$REF node "$ROOT/bench/encoder/reference_rate.mjs" "$DIR/sentences.json" "$b" 1)"
  done
done | tee "$DIR/lines.txt"
python3 - "$DIR/lines.txt" <<'PY'
import json, sys, statistics, collections
rates = collections.defaultdict(list); p50 = collections.defaultdict(list)
for line in open(sys.argv[1]):
    who, rnd, js = line.split(" ", 2)
    j = json.loads(js)
    key = (who, j.get("threads", 1), j["batch"])
    rates[key].append(j["sentences_per_s"])
    if "batch_ms_p50" in j: p50[key].append(j["batch_ms_p50"])
print("\nwho        threads batch  sentences/s (median)  batch p50 ms")
for key in sorted(rates):
    m = statistics.median(rates[key])
    print(f"{key[0]:<10} {key[1]:>7} {key[2]:>5} {m:>21.1f} {statistics.median(p50[key]) if key in p50 else float('nan'):>13.2f}")
r = statistics.median(rates[("reference", 1, 256)])
for who in sorted({k[0] for k in rates if k[0] != "reference"}):
    s = statistics.median(rates[(who, 2, 256)])
    print(f"\n{who}: batch 256, 2 threads / reference batch 256: {s / r:.1f}x")
    print(f"{who}: batching gain, 2 threads: batch 256 / batch 1 = {s / statistics.median(rates[(who, 2, 1)]):.2f}x")
PY
