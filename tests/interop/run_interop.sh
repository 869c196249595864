#!/usr/bin/env bash
# Stock OpenAI clients against a live server: `sluice run pipelines/default.yaml` with the model
# (stories260K from ../shared when present, else extractive answers), a document ingested, then
# tests/interop/openai_clients.test.mjs under `node --test` with the official `openai` SDK and
# LangChain JS as pinned in tests/interop/package.json (installed by scripts/setup-interop).
# Afterwards the server's /metrics must show the aborted stream as a 499 (with the model).
#   tests/interop/run_interop.sh SLUICE_BINARY SOURCE_DIR [MODEL]
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
MODEL=${3:-}
HERE="$SRC/tests/interop"
[[ -d "$HERE/node_modules/openai" ]] || { echo "run_interop: $HERE/node_modules is missing: run scripts/setup-interop" >&2; exit 1; }
fail() { echo "run_interop: $*" >&2; echo "--- server log" >&2; tail -30 "$DIR/run.log" >&2; exit 1; }
source "$SRC/tests/apps/lib.sh"  # wait_line, metric
scratch_dir interop

[[ -n "$MODEL" && ! -f "$MODEL" ]] && { echo "run_interop: no $MODEL; the answers are extractive"; MODEL=""; }
# SLUICE_MAX_TOKENS 300: the aborted stream (openai_clients.test.mjs) asks for that many, so it
# is still being generated when the client closes (96 tokens take stories260K about 20 ms here,
# which a loaded machine's client could outlast, and the answer would then be a whole 200).
SLUICE_MAX_TOKENS=300 SLUICE_KB="$DIR/kb" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="$MODEL" "$SLUICE" run "$SRC/pipelines/default.yaml" 2> "$DIR/run.log" &
RUN=$!
PORT=$(wait_line "$DIR/run.log" "serving on" "$RUN" "sluice run" | sed 's|.*http://||')
code=$(curl -s -o "$DIR/ingest.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"documents":[{"id":"otters.md","text":"# Sea otters\n\nSea otters hold hands while they sleep so they do not drift apart."}]}' \
  "http://$PORT/v1/documents")
[[ $code == 200 ]] || fail "ingest answered $code: $(cat "$DIR/ingest.json")"
(cd "$HERE" && SLUICE_BASE_URL="http://$PORT/v1" SLUICE_INTEROP_MODEL=$([[ -n "$MODEL" ]] && echo 1 || echo 0) node --test --test-reporter=spec openai_clients.test.mjs) || fail "the client tests failed"
# An extractive answer is written before the client can abort it: only a generated one is cut.
[[ -n "$MODEL" ]] && for _ in $(seq 1 50); do  # the abort reaches the server as a closed connection
  (($(metric "$PORT" 'sluice_http_requests_total{' 'code="499"' | cut -d. -f1) >= 1)) && break
  sleep 0.1
done
[[ -z "$MODEL" ]] || (($(metric "$PORT" 'sluice_http_requests_total{' 'code="499"' | cut -d. -f1) >= 1)) ||
  fail "the aborted stream was not counted as 499"
echo "run_interop: stock clients passed against $([[ -n "$MODEL" ]] && echo "the model" || echo "extractive answers")"
