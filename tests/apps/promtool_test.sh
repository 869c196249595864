#!/usr/bin/env bash
# Prometheus accepts what Sluice exposes: `promtool check metrics` (Debian's prometheus package,
# installed by scripts/setup) on the live /metrics of (1) `sluice run` on the default pipeline
# with a model after chat, streaming, retrieval, ingest and error requests, so every family
# the requests touch has series, and (2) `sluice worker` on the Kafka pipeline beside
# `sluice kafka-dev` after a few jobs; then `promtool check rules` on docs/alerts.yaml.
#   tests/apps/promtool_test.sh SLUICE_BINARY SOURCE_DIR [MODEL]
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
MODEL=${3:-}
command -v promtool > /dev/null || { echo "promtool_test: promtool is missing (scripts/setup installs prometheus)" >&2; exit 1; }
fail() { echo "promtool_test: $*" >&2; for f in "$DIR"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done; exit 1; }
# wait_line, metric
source "$(dirname "$0")/lib.sh"
scratch_dir promtool
post() { curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d "$2" "http://$PORT$1"; }
check() {  # what
  curl -s "http://$PORT/metrics" > "$DIR/metrics.txt"
  [[ -s "$DIR/metrics.txt" ]] || fail "$1: empty /metrics"
  if ! promtool check metrics < "$DIR/metrics.txt" > "$DIR/promtool.out" 2>&1; then
    cat "$DIR/promtool.out" >&2
    fail "$1: promtool check metrics refused /metrics ($(wc -l < "$DIR/promtool.out") lines above)"
  fi
  echo "promtool_test: $1: $(grep -c '^# TYPE' "$DIR/metrics.txt") families pass promtool check metrics"
}

# (1) The default pipeline, with the model when there is one.
[[ -n "$MODEL" && ! -f "$MODEL" ]] && { echo "promtool_test: no $MODEL; checking without a model"; MODEL=""; }
SLUICE_KB="$DIR/kb" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="$MODEL" "$SLUICE" run "$SRC/pipelines/default.yaml" 2> "$DIR/run.log" &
RUN=$!
PORT=$(wait_line "$DIR/run.log" "serving on" "$RUN" "sluice run" | sed 's|.*http://||')
[[ $(post /v1/documents '{"documents":[{"id":"otters.md","text":"# Sea otters\n\nSea otters hold hands while they sleep."}]}') == 200 ]] ||
  fail "ingest failed"
[[ $(post /v1/chat/completions '{"model":"sluice","max_tokens":8,"messages":[{"role":"user","content":"Why do otters hold hands?"}]}') == 200 ]] ||
  fail "chat failed"
[[ $(post /v1/chat/completions '{"model":"sluice","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"otters"}]}') == 200 ]] ||
  fail "streaming chat failed"
[[ $(post /v1/retrieve '{"query":"otters"}') == 200 ]] || fail "retrieve failed"
[[ $(post /v1/chat/completions '{"model":"sluice","messages":"not a list"}') == 400 ]] || fail "a bad body was not 400"
check "sluice run pipelines/default.yaml${MODEL:+ with a model}"
kill -TERM "$RUN"
wait "$RUN" 2> /dev/null || true

# (2) The Kafka worker and its kafka-dev broker.
"$SLUICE" kafka-dev --port 0 "$SRC/pipelines/kafka-jobs.yaml" > "$DIR/dev.out" 2> "$DIR/dev.log" &
DEV=$!
BOOT=$(wait_line "$DIR/dev.out" . "$DEV" "sluice kafka-dev")
SLUICE_KAFKA_BOOTSTRAP=$BOOT SLUICE_KB="$DIR/kb" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="" \
  "$SLUICE" worker "$SRC/pipelines/kafka-jobs.yaml" 2> "$DIR/worker.log" &
WORKER=$!
PORT=$(wait_line "$DIR/worker.log" "serving on" "$WORKER" "sluice worker" | sed 's|.*http://||')
printf '%s\n' '{"custom_id":"j1","url":"/v1/chat/completions","body":{"model":"sluice","messages":[{"role":"user","content":"otters"}]}}' \
  'not json' | timeout 30 kcat -b "$BOOT" -q -P -t sluice.jobs
for _ in $(seq 1 300); do
  (($(metric "$PORT" 'sluice_kafka_records_total{') > 0)) && break
  sleep 0.1
done
check "sluice worker pipelines/kafka-jobs.yaml"

# (3) The alerting rules shipped in docs/.
promtool check rules "$SRC/docs/alerts.yaml" > "$DIR/rules.out" 2>&1 || { cat "$DIR/rules.out" >&2; fail "promtool check rules docs/alerts.yaml"; }
echo "promtool_test: docs/alerts.yaml: $(grep -o 'SUCCESS: [0-9]* rules found' "$DIR/rules.out")"
