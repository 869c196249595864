#!/usr/bin/env bash
# The cost of API keys and rate limits on the HTTP intake: the template pipeline served twice
# at once, without auth (template.yaml) and with it (template_auth.yaml: a ring of KEYS keys,
# the benchmark's key last, every key with a requests/s and a tokens/min bucket set high
# enough never to refuse, so both buckets are taken and charged on every request), and nginx
# (1 worker, fixed 200), under `wrk -t1 -c64 --latency`, alternating, ROUNDS rounds. Prints the
# medians, the ratio of the medians auth/no-auth and auth/nginx, and the median of the
# per-round ratios auth/no-auth (each round's pair runs back to back, so it shares the
# machine's state of the moment; this is the figure to quote). PIN=1 (the default where there
# are at least two CPUs) runs the servers on CPU SERVER_CPU (1) and wrk on CLIENT_CPU (0): on
# two cores an unpinned run flips between two modes (client and server sharing a core or not),
# which moved both servers by 25% from round to round.
#
#   bench/http/run_auth_bench.sh          # build dir: build-http (BUILD=... to change)
#   ROUNDS=5 DURATION=10s KEYS=100 SKIP_BUILD=1 BUILD=$PWD/build bench/http/run_auth_bench.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-http}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
KEYS=${KEYS:-100}
PLAIN_PORT=${PLAIN_PORT:-18080}
AUTH_PORT=${AUTH_PORT:-18082}
NGINX_PORT=${NGINX_PORT:-18081}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}
if [[ -z "${PIN:-}" ]]; then PIN=$([[ $(nproc) -ge 2 ]] && command -v taskset > /dev/null && echo 1 || echo 0); fi
ON_SERVER=() ON_CLIENT=()
if [[ $PIN == 1 ]]; then ON_SERVER=(taskset -c "$SERVER_CPU") ON_CLIENT=(taskset -c "$CLIENT_CPU"); fi

if [[ -z "${SKIP_BUILD:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja > /dev/null
  ninja -C "$BUILD" -j2 sluice > /dev/null
fi

RUN=$(mktemp -d /tmp/sluice-auth-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null && wait "$p" 2> /dev/null || true; done
}
trap cleanup EXIT
source "$ROOT/bench/http/bench_lib.sh"

for p in "$PLAIN_PORT" "$AUTH_PORT" "$NGINX_PORT"; do port_free "$p"; done

# The key ring: KEYS-1 other keys, then the benchmark's (the worst case for a first lookup).
echo "keys:" > "$RUN/keys.yaml"
for i in $(seq 1 $((KEYS - 1))); do
  hash=$("$BUILD/apps/sluice" keys new | sed -n 's/^hash: //p')
  printf '  - {id: other-%d, hash: "%s", scopes: [infer]}\n' "$i" "$hash" >> "$RUN/keys.yaml"
done
"$BUILD/apps/sluice" keys new > "$RUN/bench-key.txt"
export SLUICE_BENCH_KEY=$(sed -n 's/^key:  //p' "$RUN/bench-key.txt")
printf '  - {id: bench, hash: "%s", scopes: [infer], tenant: bench, requests_per_second: 1e9, burst: 1e9, tokens_per_minute: 1e12}\n' \
  "$(sed -n 's/^hash: //p' "$RUN/bench-key.txt")" >> "$RUN/keys.yaml"

sed -e "s|@RUN@|$RUN|g" -e "s|@PORT@|$NGINX_PORT|g" "$ROOT/bench/http/nginx.conf.in" > "$RUN/nginx.conf"
"${ON_SERVER[@]}" nginx -c "$RUN/nginx.conf" -p "$RUN" > /dev/null 2>&1 &
PIDS+=($!)
SLUICE_LISTEN=127.0.0.1:$PLAIN_PORT "${ON_SERVER[@]}" "$BUILD/apps/sluice" run "$ROOT/bench/http/template.yaml" > "$RUN/plain.log" 2>&1 &
PIDS+=($!)
SLUICE_LISTEN=127.0.0.1:$AUTH_PORT SLUICE_KEYS_FILE=$RUN/keys.yaml "${ON_SERVER[@]}" "$BUILD/apps/sluice" run \
  "$ROOT/bench/http/template_auth.yaml" > "$RUN/auth.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$NGINX_PORT/"
wait_http "http://127.0.0.1:$PLAIN_PORT/readyz"
wait_http "http://127.0.0.1:$AUTH_PORT/readyz"
code=$(curl -s -o /dev/null -w '%{http_code}' -d '{"model":"sluice","messages":[{"role":"user","content":"hi"}]}' \
  "http://127.0.0.1:$AUTH_PORT/v1/chat/completions")
[[ $code == 401 ]] || { echo "run_auth_bench: without a key the auth server answered $code, not 401" >&2; exit 1; }

echo "wrk -t1 -c64 -d$DURATION --latency, $ROUNDS rounds alternating, $KEYS keys, pinned: $PIN (rate req/s, p50 ms, p99 ms, non-2xx)"
for r in $(seq 1 "$ROUNDS"); do
  "${ON_CLIENT[@]}" wrk -t1 -c64 -d"$DURATION" --latency -s "$ROOT/bench/http/chat.lua" \
    "http://127.0.0.1:$PLAIN_PORT/v1/chat/completions" > "$RUN/wrk-plain-$r.txt"
  "${ON_CLIENT[@]}" wrk -t1 -c64 -d"$DURATION" --latency -s "$ROOT/bench/http/chat_auth.lua" \
    "http://127.0.0.1:$AUTH_PORT/v1/chat/completions" > "$RUN/wrk-auth-$r.txt"
  "${ON_CLIENT[@]}" wrk -t1 -c64 -d"$DURATION" --latency "http://127.0.0.1:$NGINX_PORT/" > "$RUN/wrk-nginx-$r.txt"
  echo "round $r: no-auth $(parse_wrk "$RUN/wrk-plain-$r.txt") | auth $(parse_wrk "$RUN/wrk-auth-$r.txt") | nginx $(parse_wrk "$RUN/wrk-nginx-$r.txt")"
  for who in plain auth; do
    if grep -q "Non-2xx" "$RUN/wrk-$who-$r.txt"; then
      echo "run_auth_bench: the $who server answered non-2xx responses; a rate of errors is not a result" >&2
      exit 1
    fi
  done
done
for who in plain auth nginx; do
  for r in $(seq 1 "$ROUNDS"); do parse_wrk "$RUN/wrk-$who-$r.txt"; done > "$RUN/$who.txt"
  printf "%s median: %s req/s, p50 %s ms, p99 %s ms\n" "$who" \
    "$(cut -d' ' -f1 "$RUN/$who.txt" | median)" "$(cut -d' ' -f2 "$RUN/$who.txt" | median)" \
    "$(cut -d' ' -f3 "$RUN/$who.txt" | median)"
done
awk -v a="$(cut -d' ' -f1 "$RUN/auth.txt" | median)" -v p="$(cut -d' ' -f1 "$RUN/plain.txt" | median)" \
  -v n="$(cut -d' ' -f1 "$RUN/nginx.txt" | median)" \
  'BEGIN { printf "ratio of medians auth/no-auth: %.3f; auth/nginx: %.2f\n", a / p, a / n }'
paste -d' ' "$RUN/auth.txt" "$RUN/plain.txt" | awk '{ print $1 / $5 }' | median |
  awk '{ printf "median per-round ratio auth/no-auth: %.3f (%.1f%% fewer requests/s with auth)\n", $1, 100 * (1 - $1) }'
curl -s -H "Authorization: Bearer $SLUICE_BENCH_KEY" "http://127.0.0.1:$AUTH_PORT/metrics" > /dev/null || true
