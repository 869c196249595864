#!/usr/bin/env bash
# OpenTelemetry over OTLP/HTTP against a receiver Sluice did not write: `sluice run` on the
# default pipeline (SLUICE_OTLP_ENDPOINT set, every request sampled) sends the spans of a RAG
# request to tests/interop/otlp_receiver.mjs, which decodes them with OpenTelemetry's generated
# code. Checked: one trace, the root a child of the incoming traceparent's span, a span for
# every stage the request passed, each a child of the root and inside its time, the GenAI
# attributes on generate (with the model), and the response's traceparent naming the root.
#   tests/interop/run_otlp.sh SLUICE_BINARY SOURCE_DIR [MODEL]
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
MODEL=${3:-}
HERE="$SRC/tests/interop"
[[ -d "$HERE/node_modules/@opentelemetry/otlp-transformer" ]] ||
  { echo "run_otlp: $HERE/node_modules is missing: run scripts/setup-interop" >&2; exit 1; }
fail() { echo "run_otlp: $*" >&2; echo "--- server log" >&2; tail -30 "$DIR/run.log" >&2; exit 1; }
source "$SRC/tests/apps/lib.sh"  # wait_line
scratch_dir otlp
[[ -n "$MODEL" && ! -f "$MODEL" ]] && { echo "run_otlp: no $MODEL; the answers are extractive"; MODEL=""; }

(cd "$HERE" && node otlp_receiver.mjs "$DIR/spans.jsonl") > "$DIR/receiver.log" 2>&1 &
RECEIVER=$!
OTLP_PORT=$(wait_line "$DIR/receiver.log" "listening on" "$RECEIVER" "the OTLP receiver" | sed 's|.* ||')
SLUICE_OTLP_ENDPOINT="http://127.0.0.1:$OTLP_PORT/v1/traces" SLUICE_TRACE_SAMPLE=1 SLUICE_KB="$DIR/kb" \
  SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="$MODEL" "$SLUICE" run "$SRC/pipelines/default.yaml" 2> "$DIR/run.log" &
RUN=$!
PORT=$(wait_line "$DIR/run.log" "serving on" "$RUN" "sluice run" | sed 's|.*http://||')
code=$(curl -s -o "$DIR/ingest.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"documents":[{"id":"otters.md","text":"# Sea otters\n\nSea otters hold hands while they sleep so they do not drift apart."}]}' \
  "http://$PORT/v1/documents")
[[ $code == 200 ]] || fail "ingest answered $code"
PARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
code=$(curl -s -D "$DIR/headers" -o "$DIR/answer.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  -H "traceparent: $PARENT" \
  -d '{"model":"sluice","max_tokens":16,"messages":[{"role":"user","content":"Why do otters hold hands?"}]}' \
  "http://$PORT/v1/chat/completions")
[[ $code == 200 ]] || fail "the question answered $code: $(cat "$DIR/answer.json")"
RESPONSE_TP=$(grep -i '^traceparent:' "$DIR/headers" | tr -d '\r' | sed 's/^[^:]*: //')
[[ -n "$RESPONSE_TP" ]] || fail "the response has no traceparent header"

# The request's spans: the trace of PARENT (the ingest has its own).
for _ in $(seq 1 100); do
  (($(grep -c '"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"' "$DIR/spans.jsonl" 2> /dev/null || echo 0) >= 2)) && break
  sleep 0.1
done
sleep 0.3  # spans of one request go out in one batch; this is margin, not a guess at the batch
node - "$DIR/spans.jsonl" "$PARENT" "$RESPONSE_TP" "$([[ -n "$MODEL" ]] && echo 1 || echo 0)" <<'JS' || fail "the span tree is wrong (spans in $DIR/spans.jsonl)"
const [file, parent, responseTp, withModel] = process.argv.slice(2);
const lines = require('fs').readFileSync(file, 'utf8').trim().split('\n').map(JSON.parse);
const bad = lines.filter((l) => l.decodeError);
if (bad.length) throw new Error('undecodable export: ' + bad[0].decodeError);
const [, traceId, parentSpan] = parent.split('-');
const spans = lines.filter((s) => s.traceId === traceId);
const roots = spans.filter((s) => s.parentSpanId === parentSpan);
const check = (ok, what) => { if (!ok) throw new Error(what + '\n' + JSON.stringify(spans, null, 1)); };
check(roots.length === 1, 'one root under the incoming span');
const root = roots[0];
check(root.name === 'default' && root.kind === 2 && root.service === 'sluice' && root.scope === 'sluice', 'the root names the pipeline');
check(root.attributes['sluice.status'] === 'ok' && root.attributes['sluice.priority_class'] === 'P0', 'root attributes');
check(responseTp === `00-${traceId}-${root.spanId}-01`, `the response traceparent ${responseTp} names the root`);
const stages = spans.filter((s) => s !== root);
const names = new Set(stages.map((s) => s.name));
// With the model generate answers and answer never runs; without it answer does.
for (const stage of ['admit', 'cache', 'batch', 'embed', 'bm25', 'dense', 'fuse', 'prompt', 'generate', ...(withModel === '1' ? [] : ['answer'])]) {
  check(names.has(stage), `a span for stage ${stage}`);
}
for (const s of stages) {
  check(s.parentSpanId === root.spanId, `${s.name} is a child of the root`);
  check(BigInt(s.start) >= BigInt(root.start) && BigInt(s.end) <= BigInt(root.end) && BigInt(s.start) <= BigInt(s.end), `${s.name} inside the root's time`);
  check(s.events.includes('service.start'), `${s.name} marks where its service began`);
}
if (withModel === '1') {
  const g = stages.find((s) => s.name === 'generate');
  check(g.attributes['gen_ai.operation.name'] === 'chat' && g.attributes['gen_ai.request.model'] === 'sluice', 'GenAI request attributes');
  check(Number(g.attributes['gen_ai.usage.output_tokens']) > 0 && Number(g.attributes['gen_ai.usage.input_tokens']) > 0, 'GenAI usage');
}
console.log(`run_otlp: ${spans.length} spans in one tree: ${[...names].join(', ')}`);
JS
echo "run_otlp: OpenTelemetry's decoder accepts the spans of a RAG request"
