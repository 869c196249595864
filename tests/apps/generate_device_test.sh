#!/usr/bin/env bash
# `sluice generate --device`: cpu generates; an unknown device is refused with exit 2 naming the
# flag; cuda either generates the same greedy text as the CPU (a GPU is usable) or is refused
# with exit 2 saying why (no CUDA backend in the build, or no usable GPU), never a crash.
#   tests/apps/generate_device_test.sh SLUICE_BINARY MODEL.gguf
set -euo pipefail
SLUICE=$1
MODEL=$2
fail() { echo "generate_device_test: $*" >&2; exit 1; }
[[ -f $MODEL ]] || { echo "generate_device_test: needs $MODEL (../shared)"; exit 77; }  # ctest: skipped
args=(generate --model "$MODEL" --prompt "Once upon a time" --max-tokens 40)
cpu=$("$SLUICE" "${args[@]}" --device cpu 2>/dev/null) || fail "--device cpu exited $?"
[[ -n $cpu ]] || fail "--device cpu printed nothing"
set +e
out=$("$SLUICE" "${args[@]}" --device tpu 2>&1); rc=$?
set -e
[[ $rc == 2 && $out == *"--device must be cpu or cuda, not 'tpu'"* ]] || fail "--device tpu: exit $rc, $out"
set +e
gpu=$("$SLUICE" "${args[@]}" --device cuda 2>/tmp/generate_device_test.$$); rc=$?
set -e
err=$(cat /tmp/generate_device_test.$$); rm -f /tmp/generate_device_test.$$
if [[ $rc == 0 ]]; then
  [[ $gpu == "$cpu" ]] || fail "--device cuda generated '$gpu', the CPU '$cpu'"
  echo "generate_device_test: cuda generated the CPU's greedy text"
else
  [[ $rc == 2 && $err == *"sluice generate: --device cuda: "* ]] || fail "--device cuda: exit $rc, $err"
  [[ $err == *"no usable CUDA device"* || $err == *"this build has no CUDA backend"* ]] || fail "--device cuda: $err"
  echo "generate_device_test: cuda refused as it must here: $err"
fi
