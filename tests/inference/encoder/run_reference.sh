#!/usr/bin/env bash
# Runs the JavaScript reference of USE-lite (tests/inference/encoder/reference, installed by
# scripts/setup-encoder) on sentences.json, then the encoder tests against what it wrote, so
# CI checks parity with the reference itself and not only with the committed reference.json.
#   run_reference.sh ENCODER_TEST_BINARY
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../../apps/lib.sh"
scratch_dir encoder-reference
if [[ ! -d $HERE/reference/node_modules/@energetic-ai/embeddings ]]; then
  if [[ -n ${CI:-} ]]; then echo "CI: the reference is not installed (scripts/setup-encoder)" >&2; exit 1; fi
  echo "skipped: the reference is not installed (scripts/setup-encoder)"
  exit 0
fi
(cd "$HERE/reference" && node make_reference.mjs "$HERE/sentences.json" "$DIR/reference.json")
SLUICE_ENCODER_REFERENCE=$DIR/reference.json "$1" --gtest_filter='*MatchesTheReference*'
