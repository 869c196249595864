#!/usr/bin/env bash
# `sluice run` on one CPU: the real binary under `taskset -c 0` (as in a one-core container)
# serving pipelines/admission-demo.yaml (priority router, dynamic batcher, streamed template),
# 20 concurrent requests of mixed priority, each must answer 200 within 10 s. Regression test:
# the flow graph ran in oneTBB's default arena, whose one slot under a one-CPU affinity is
# reserved for the thread that built it, which then waits for a signal; no worker thread
# existed and every request waited forever (graph/pipeline_flow.h).
#   tests/apps/one_cpu_test.sh SLUICE_BINARY PIPELINE
set -euo pipefail
SLUICE=$1
PIPELINE=$2
command -v taskset > /dev/null || { echo "one_cpu_test: taskset (util-linux) is missing" >&2; exit 1; }
DIR=$(mktemp -d /tmp/sluice-one-cpu.XXXXXX)
PID=""
cleanup() {
  [[ -n "$PID" ]] && kill "$PID" 2> /dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "one_cpu_test: $*" >&2; echo "--- server log" >&2; cat "$DIR/log" >&2 || true; exit 1; }

SLUICE_LISTEN=127.0.0.1:0 SLUICE_TOKEN_INTERVAL=1ms taskset -c 0 "$SLUICE" run "$PIPELINE" 2> "$DIR/log" &
PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT=$(sed -n 's|.*serving on http://127.0.0.1:\([0-9]*\).*|\1|p' "$DIR/log")
  [[ -n "$PORT" ]] && break
  kill -0 "$PID" 2> /dev/null || fail "sluice run exited"
  sleep 0.1
done
[[ -n "$PORT" ]] || fail "no 'serving on' line"
[[ $(taskset -p "$PID" | sed 's/.*: //') == 1 ]] || fail "the server is not bound to CPU 0: $(taskset -p "$PID")"

for i in $(seq 1 20); do
  stream=$([[ $((i % 2)) == 0 ]] && echo true || echo false)
  curl -s -o "$DIR/body-$i" -w '%{http_code}' --max-time 10 -H "X-Priority: P$((i % 3))" \
    -d "{\"model\":\"sluice\",\"stream\":$stream,\"messages\":[{\"role\":\"user\",\"content\":\"question $i\"}]}" \
    "http://127.0.0.1:$PORT/v1/chat/completions" > "$DIR/code-$i" &
done
wait_all=0
for job in $(jobs -p); do [[ $job == "$PID" ]] || wait "$job" || wait_all=1; done
for i in $(seq 1 20); do
  code=$(cat "$DIR/code-$i" 2> /dev/null || echo none)
  [[ $code == 200 ]] || fail "request $i answered '$code' (000: no answer within 10 s)"
  if [[ $((i % 2)) == 0 ]]; then
    grep -q '^data: \[DONE\]' "$DIR/body-$i" || fail "stream $i did not end with [DONE]: $(tail -c 300 "$DIR/body-$i")"
  else
    grep -q "question $i" "$DIR/body-$i" || fail "request $i's answer lacks its question: $(head -c 300 "$DIR/body-$i")"
  fi
done
kill -TERM "$PID"
wait "$PID" || fail "sluice run exited with $? after SIGTERM"
PID=""
echo "one_cpu_test: 20 of 20 answered on one CPU"
