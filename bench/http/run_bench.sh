#!/usr/bin/env bash
# HTTP intake benchmark: `sluice run` on the template pipeline vs nginx (1 worker, fixed
# 200) under `wrk -t1 -c64 --latency`, side by side in one run, then 1,000 concurrent SSE
# streams with sse_load. Prints medians over ROUNDS alternating runs and the sluice/nginx ratio.
#
#   bench/http/run_bench.sh            # build dir: build-http (BUILD=... to change)
#   ROUNDS=5 DURATION=10s STREAMS=1000 bench/http/run_bench.sh
#   SKIP_BUILD=1 ...                   # use the binaries already in BUILD
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-http}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
STREAMS=${STREAMS:-1000}
SLUICE_PORT=${SLUICE_PORT:-18080}
NGINX_PORT=${NGINX_PORT:-18081}
SSE_TEXT=${SSE_TEXT:-"one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"}
SSE_INTERVAL=${SSE_INTERVAL:-50ms}

if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja > /dev/null
  ninja -C "$BUILD" -j2 sluice sse_load > /dev/null
fi

RUN=$(mktemp -d /tmp/sluice-http-bench.XXXXXX)
SLUICE_PID=""
NGINX_PID=""
cleanup() {
  [[ -n "$SLUICE_PID" ]] && kill "$SLUICE_PID" 2> /dev/null && wait "$SLUICE_PID" 2> /dev/null || true
  [[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2> /dev/null && wait "$NGINX_PID" 2> /dev/null || true
}
trap cleanup EXIT

source "$ROOT/bench/http/bench_lib.sh"

start_sluice() {  # token_interval text
  SLUICE_LISTEN=127.0.0.1:$SLUICE_PORT SLUICE_TOKEN_INTERVAL=$1 SLUICE_BENCH_TEXT=$2 \
    "$BUILD/apps/sluice" run "$ROOT/bench/http/template.yaml" > "$RUN/sluice.log" 2>&1 &
  SLUICE_PID=$!
  wait_http "http://127.0.0.1:$SLUICE_PORT/readyz"
  alive "$SLUICE_PID" sluice
}
stop_sluice() {
  kill "$SLUICE_PID"
  wait "$SLUICE_PID" 2> /dev/null || true
  SLUICE_PID=""
}

port_free "$SLUICE_PORT"
port_free "$NGINX_PORT"
sed -e "s|@RUN@|$RUN|g" -e "s|@PORT@|$NGINX_PORT|g" "$ROOT/bench/http/nginx.conf.in" > "$RUN/nginx.conf"
nginx -c "$RUN/nginx.conf" -p "$RUN" > /dev/null 2>&1 &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NGINX_PORT/"
alive "$NGINX_PID" nginx
start_sluice 0s "hello world"

echo "wrk -t1 -c64 -d$DURATION --latency, $ROUNDS rounds alternating (rate req/s, p50 ms, p99 ms, non-2xx)"
for r in $(seq 1 "$ROUNDS"); do
  wrk -t1 -c64 -d"$DURATION" --latency -s "$ROOT/bench/http/chat.lua" \
    "http://127.0.0.1:$SLUICE_PORT/v1/chat/completions" > "$RUN/wrk-sluice-$r.txt"
  wrk -t1 -c64 -d"$DURATION" --latency "http://127.0.0.1:$NGINX_PORT/" > "$RUN/wrk-nginx-$r.txt"
  echo "round $r: sluice $(parse_wrk "$RUN/wrk-sluice-$r.txt") | nginx $(parse_wrk "$RUN/wrk-nginx-$r.txt")"
  if grep -q "Non-2xx" "$RUN/wrk-sluice-$r.txt"; then
    echo "run_bench: sluice answered non-2xx responses; a rate of errors is not a result" >&2
    curl -s -d '{"model":"sluice","messages":[{"role":"user","content":"hi"}]}' \
      "http://127.0.0.1:$SLUICE_PORT/v1/chat/completions" >&2
    exit 1
  fi
done
for who in sluice nginx; do
  for r in $(seq 1 "$ROUNDS"); do parse_wrk "$RUN/wrk-$who-$r.txt"; done > "$RUN/$who.txt"
  printf "%s median: %s req/s, p50 %s ms, p99 %s ms\n" "$who" \
    "$(cut -d' ' -f1 "$RUN/$who.txt" | median)" "$(cut -d' ' -f2 "$RUN/$who.txt" | median)" \
    "$(cut -d' ' -f3 "$RUN/$who.txt" | median)"
done
awk -v s="$(cut -d' ' -f1 "$RUN/sluice.txt" | median)" -v n="$(cut -d' ' -f1 "$RUN/nginx.txt" | median)" \
  'BEGIN { printf "ratio sluice/nginx: %.2f\n", s / n }'
stop_sluice

echo
echo "SSE: $STREAMS concurrent streams, 20 tokens each, token_interval $SSE_INTERVAL"
start_sluice "$SSE_INTERVAL" "$SSE_TEXT"
echo "server_rss_mib idle $(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' /proc/$SLUICE_PID/status)"
"$BUILD/bench/http/sse_load" --port "$SLUICE_PORT" --streams "$STREAMS" --pid "$SLUICE_PID" --timeout 120
stop_sluice
