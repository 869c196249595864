#!/usr/bin/env bash
# The reference chat page (GET /ui) end to end in headless Chromium (Debian's `chromium`,
# driven by playwright-core from npm with the system browser): `sluice run` on the default
# pipeline with the model, the page loaded through a TCP relay that can cut a connection
# (tests/interop/ui_chat.test.mjs). Checked: the page streams an answer with its sources; a
# connection cut after 3 events is resumed from the last event id and ends with the same text
# as an uninterrupted answer; a 429 is shown and retried after its Retry-After. A screenshot of
# the finished answer is kept as ARTEFACTS/ui-chat-resumed.png.
#   tests/interop/run_ui.sh SLUICE_BINARY SOURCE_DIR MODEL ARTEFACTS
set -euo pipefail
SLUICE=$(realpath "$1")
SRC=$(realpath "$2")
MODEL=${3:-}
ARTEFACTS=${4:-$PWD/artefacts}
HERE="$SRC/tests/interop"
[[ -d "$HERE/node_modules/playwright-core" ]] ||
  { echo "run_ui: $HERE/node_modules is missing: run scripts/setup-interop" >&2; exit 1; }
BROWSER=/usr/lib/chromium/chromium  # the binary behind Debian's /usr/bin/chromium wrapper
[[ -x $BROWSER ]] || { echo "run_ui: no $BROWSER: scripts/setup installs Debian's chromium" >&2; exit 1; }
[[ -f "$MODEL" ]] || { echo "run_ui: no model $MODEL (../shared/models)" >&2; exit 1; }
fail() { echo "run_ui: $*" >&2; echo "--- server log" >&2; tail -30 "$DIR/run.log" >&2; exit 1; }
source "$SRC/tests/apps/lib.sh"  # wait_line, scratch_dir
scratch_dir ui
mkdir -p "$ARTEFACTS"

# Two API keys: one unlimited (infer, admin), one held to a request every 4 s (the 429).
KEY_A=sk-sluice-ui-test-unlimited-0000000000000000000000000000
KEY_B=sk-sluice-ui-test-limited-00000000000000000000000000000
cat > "$DIR/keys.yaml" <<KEYS
keys:
  - id: page
    hash: "$(printf %s "$KEY_A" | "$SLUICE" keys hash)"
    scopes: [infer, admin, "documents:write"]
  - id: slow
    hash: "$(printf %s "$KEY_B" | "$SLUICE" keys hash)"
    scopes: [infer]
    requests_per_second: 0.25
    burst: 1
KEYS
# The default pipeline with the page on and those keys.
sed -e "s|^      default_priority: P0$|      default_priority: P0\n      auth: {keys_file: $DIR/keys.yaml}|" \
  "$SRC/pipelines/default.yaml" > "$DIR/pipeline.yaml"
grep -q "keys_file: $DIR/keys.yaml" "$DIR/pipeline.yaml" || fail "could not add the keys to the pipeline"
SLUICE_UI=true SLUICE_KB="$DIR/kb" SLUICE_LISTEN=127.0.0.1:0 SLUICE_MODEL="$MODEL" \
  "$SLUICE" run "$DIR/pipeline.yaml" 2> "$DIR/run.log" &
RUN=$!
PORT=$(wait_line "$DIR/run.log" "serving on" "$RUN" "sluice run" | sed 's|.*http://||')
code=$(curl -s -o "$DIR/ingest.json" -w '%{http_code}' -H "Authorization: Bearer $KEY_A" -H 'Content-Type: application/json' \
  -d '{"documents":[{"id":"otters.md","title":"Sea otters","text":"# Sea otters\n\nSea otters hold hands while they sleep so they do not drift apart."},{"id":"https://example.org/volcanoes","title":"Volcanoes","text":"# Volcanoes\n\nA volcano erupts when magma rises through the crust and gas pressure pushes it out."}]}' \
  -X POST "http://$PORT/v1/documents")
[[ $code == 200 ]] || fail "ingest answered $code: $(cat "$DIR/ingest.json")"
(cd "$HERE" && node ui_chat.test.mjs "$PORT" "$BROWSER" "$ARTEFACTS" "$KEY_A" "$KEY_B") || fail "the page test failed"
echo "run_ui: ok (screenshot: $ARTEFACTS/ui-chat-resumed.png)"
