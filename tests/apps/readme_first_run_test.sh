#!/usr/bin/env bash
# The README's first run, as a new user does it without a model: `sluice ingest` of docs/ into
# the default pipeline's knowledge base, `sluice run pipelines/default.yaml`, then the README's
# own curl question (read from README.md, so the test follows the README). The answer must be
# the explanation the README promises: prose from docs/pipelines.md's shedding ladder (the
# answer names 429 and the class it sheds; only pages that explain shedding cited, not
# docs/benchmarks.md), no benchmark figures, no table rows, code or
# fragments, each sentence cited; streamed as SSE it is the same text.
#   tests/apps/readme_first_run_test.sh SLUICE_BINARY SOURCE_DIR
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
fail() { echo "readme_first_run_test: $*" >&2; for f in "$DIR"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done; exit 1; }
source "$(dirname "$0")/lib.sh"
need_tools readme_first_run_test curl python3
scratch_dir readme

QUESTION=$(grep -o '"content": "[^"]*"' "$SRC/README.md" | head -1 | sed 's/"content": "\(.*\)"/\1/')
[[ -n "$QUESTION" ]] || fail "no question in README.md's curl example"
echo "readme_first_run_test: asking \"$QUESTION\""

cd "$SRC"
SLUICE_KB="$DIR/kb" "$SLUICE" ingest pipelines/default.yaml --source docs > "$DIR/ingest.log" 2>&1 || fail "ingest failed"
SLUICE_KB="$DIR/kb" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="" "$SLUICE" run pipelines/default.yaml 2> "$DIR/run.log" &
RUN=$!
PORT=$(wait_line "$DIR/run.log" "serving on" "$RUN" "sluice run" | sed 's|.*http://||')
ask() {  # stream(true|false)
  curl -sf "http://$PORT/v1/chat/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"sluice\", \"stream\": $1, \"messages\": [{\"role\": \"user\", \"content\": \"$QUESTION\"}]}"
}
ask false > "$DIR/answer.json" || fail "the question was not answered 200"
ask true > "$DIR/answer.sse" || fail "the streamed question was not answered 200"
python3 - "$DIR/answer.json" "$DIR/answer.sse" << 'PY' || fail "the answer is not the README's"
import json, re, sys
answer = json.load(open(sys.argv[1]))
text = answer["choices"][0]["message"]["content"]
sources = [s["doc_id"] for s in answer.get("sluice_sources", [])]
print("readme_first_run_test: answer:", text)
print("readme_first_run_test: sources:", sources)
problems = []
explaining = {"pipelines.md", "operations.md", "architecture.md"}  # where shedding is explained
if not set(sources) <= explaining: problems.append("cites pages that do not explain shedding: %s" % (set(sources) - explaining))
if "pipelines.md" not in sources: problems.append("does not cite docs/pipelines.md, where the shedding ladder is explained")
if "429" not in text or "class" not in text: problems.append("does not say what is shed (429, the lowest class)")
sentences = [s for s in re.split(r" \[\d+\] ?", text) if s.strip()]
for s in sentences:
    if s.lstrip().startswith("|") or s.lstrip()[0].islower(): problems.append("quotes a table row or fragment: " + s)
    figures = re.findall(r"\b\d+(?:[.,-]\d+)+\b|\b\d+(?:\.\d+)?\s?(?:x|s|ms|%)(?=\W|$)", s)
    if len(figures) >= 3: problems.append("quotes a measurement: " + s)
if len(re.findall(r"\[\d+\]", text)) != len(sentences): problems.append("a sentence without its citation")
streamed = ""
for line in open(sys.argv[2]):
    if line.startswith("data: ") and line.strip() != "data: [DONE]":
        for choice in json.loads(line[6:]).get("choices", []):
            streamed += choice.get("delta", {}).get("content") or ""
if streamed.strip() != text.strip(): problems.append("the stream says something else: " + streamed)
for p in problems: print("readme_first_run_test:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
echo "readme_first_run_test: ok"
