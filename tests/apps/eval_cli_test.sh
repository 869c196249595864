#!/usr/bin/env bash
# `sluice eval` as a user runs it on a collection unlike Cranfield (CACM): the knowledge base's
# path agreement and which way the hybrid is led, the per-type rows, the worst queries, the
# tuned profile and whether it beats the default, and the same in --json; the profile file
# loads back through a pipeline (docs/retrieval.md, "Path agreement", "Fusion profiles").
#   tests/apps/eval_cli_test.sh SLUICE_BINARY SOURCE_DIR SHARED_DIR
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
CACM="$3/datasets/cacm"
fail() { echo "eval_cli_test: $*" >&2; [[ -f "$DIR/out.txt" ]] && tail -40 "$DIR/out.txt" >&2; exit 1; }
source "$(dirname "$0")/lib.sh"
need_tools eval_cli_test python3
if [[ ! -f "$CACM/corpus.jsonl" ]]; then echo "eval_cli_test: SKIPPED: no CACM at $CACM"; exit 0; fi
scratch_dir eval-cli

"$SLUICE" eval "$SRC/pipelines/default.yaml" --dataset "$CACM" --tune --worst 3 --json "$DIR/out.json" \
  --profile "$DIR/cacm.profile.json" > "$DIR/out.txt" 2>&1 || fail "sluice eval failed"
grep -q "path agreement on the knowledge base's own text (2[0-9][0-9] pseudo-queries" "$DIR/out.txt" || fail "no path agreement line"
grep -q "the hybrid is led by BM25 (min_path_agreement 0.64)" "$DIR/out.txt" || fail "CACM's hybrid is not led by BM25"
grep -q "the default ranks better here: held-out folds" "$DIR/out.txt" || fail "no profile recommendation"
grep -q "fusion profile written to" "$DIR/out.txt" || fail "no profile written"
python3 - "$DIR/out.json" <<'PY' || fail "the JSON report"
import json, sys
j = json.load(open(sys.argv[1]))
a = j["kb_path_agreement"]
assert 0.5 < a["overlap"] < 0.64 and a["samples"] >= 200, a
m = {x["name"]: x for x in j["methods"]}
hybrid, bm25 = m["hybrid"], m["bm25"]
assert hybrid["params"]["led_by"] == "bm25", hybrid["params"]
assert hybrid["metrics"]["ndcg@10"] >= bm25["metrics"]["ndcg@10"], (hybrid["metrics"], bm25["metrics"])
assert hybrid["metrics"]["recall@10"] >= bm25["metrics"]["recall@10"]
assert any(r["method"] == "hybrid" for r in j["per_type"]), "per-type rows"
assert len(j["worst_queries"]) == 3, "worst queries"
assert "path_agreement" in j and "top10_overlap" in j["path_agreement"], "the queries' own agreement"
PY
# The profile loads back: a pipeline naming it switches the path-agreement switch off and ranks
# with the profile's weights (CACM's in-sample figure, above the default's).
sed "s|      top_k: 10|      top_k: 10\n      profile: $DIR/cacm.profile.json|" "$SRC/pipelines/default.yaml" > "$DIR/with-profile.yaml"
grep -q "profile: $DIR/cacm.profile.json" "$DIR/with-profile.yaml" || fail "could not add the profile to the pipeline"
"$SLUICE" eval "$DIR/with-profile.yaml" --dataset "$CACM" --worst 0 > "$DIR/out.txt" 2>&1 || fail "eval with the profile failed"
grep -q "the hybrid is led by the configured weights (min_path_agreement 0.00)" "$DIR/out.txt" || fail "a profile did not turn the switch off"
echo "eval_cli_test: ok"
