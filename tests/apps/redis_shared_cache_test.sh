#!/usr/bin/env bash
# Two `sluice run` instances of one pipeline sharing the exact answer cache through one real
# redis-server (store: redis), end to end: an answer A made is a hit at B (counted as a Redis
# hit), also when streamed (SSE framing of a live answer: data chunks, then [DONE]); Redis
# killed with SIGKILL mid-test: both instances keep answering (200) and report
# sluice_cache_redis_up 0; Redis restarted on the same port: sharing resumes without restarting
# either instance. The graph is a `template` node (a test fixture): no model needed.
#   tests/apps/redis_shared_cache_test.sh SLUICE_BINARY
set -euo pipefail
SLUICE=$1
fail() {
  echo "redis_shared_cache_test: $*" >&2
  for log in a.log b.log; do [[ -f "$DIR/$log" ]] && { echo "--- $log" >&2; tail -n 30 "$DIR/$log" >&2; }; done
  exit 1
}
source "$(dirname "$0")/lib.sh"
need_tools redis_shared_cache_test redis-server curl python3
scratch_dir redis-cache

RPORT=$(restartable_port)
start_redis() {
  redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --logfile /dev/null &
  REDIS=$!
  for _ in $(seq 1 50); do (exec 3<> "/dev/tcp/127.0.0.1/$RPORT") 2> /dev/null && return 0; sleep 0.1; done
  fail "redis-server did not start on $RPORT"
}
start_redis
cat > "$DIR/p.yaml" <<YAML
name: shared
sources:
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0"}
nodes:
  - name: cache
    kind: response_cache
    config: {store: redis, redis_url: "redis://127.0.0.1:$RPORT", cache_sampled: true}
  - {name: answer, kind: template, config: {text: "The answer is in the operations guide."}}
edges:
  - {from: api, to: cache}
  - {from: cache, to: answer}
YAML
"$SLUICE" run "$DIR/p.yaml" 2> "$DIR/a.log" &
A_PID=$!
"$SLUICE" run "$DIR/p.yaml" 2> "$DIR/b.log" &
B_PID=$!
A=127.0.0.1:$(wait_line "$DIR/a.log" "serving on" "$A_PID" "instance A" | sed -n 's|.*127.0.0.1:\([0-9]*\).*|\1|p')
B=127.0.0.1:$(wait_line "$DIR/b.log" "serving on" "$B_PID" "instance B" | sed -n 's|.*127.0.0.1:\([0-9]*\).*|\1|p')

ask() {  # ask HOST QUESTION [STREAM]: prints the body; fails unless 200
  local body code
  body=$(printf '{"model":"sluice","stream":%s,"messages":[{"role":"user","content":"%s"}]}' "${3:-false}" "$2")
  code=$(curl -s -o "$DIR/out" -w '%{http_code}' --max-time 10 "http://$1/v1/chat/completions" \
    -H 'content-type: application/json' -d "$body")
  [[ $code == 200 ]] || fail "$1 answered $code to '$2': $(cat "$DIR/out")"
  cat "$DIR/out"
}

ask "$A" "How do I rotate the API keys?" > /dev/null
ask "$B" "How do I rotate the API keys?" | grep -q "operations guide" || fail "B's answer differs"
[[ $(metric "$B" sluice_cache_redis_hits_total tier=) == 1 ]] || fail "B did not answer from Redis: $(curl -s "http://$B/metrics" | grep -E "sluice_cache_(redis|lookups)" | grep -v "^#")"
# Streaming: a hit replays with the framing of a live answer.
ask "$A" "How do I drain a node?" true > /dev/null
ask "$B" "How do I drain a node?" true > "$DIR/sse"
grep -q '^data: {.*"delta"' "$DIR/sse" || fail "the replayed stream has no delta chunk: $(cat "$DIR/sse")"
[[ $(tail -n 2 "$DIR/sse" | head -1) == "data: [DONE]" ]] || fail "the replayed stream does not end with [DONE]"
[[ $(metric "$B" sluice_cache_redis_hits_total tier=) == 2 ]] || fail "B's streamed hit did not come from Redis"

# Redis killed: both keep answering from L1 / the pipeline.
kill -9 "$REDIS"
wait "$REDIS" 2> /dev/null || true
ask "$A" "What is the drain timeout?" > /dev/null
ask "$B" "What is the drain timeout?" > /dev/null
ask "$B" "How do I rotate the API keys?" > /dev/null  # B's L1 still has it
[[ $(metric "$A" sluice_cache_redis_up tier=) == 0 ]] || fail "A does not report Redis down"
grep -q "unreachable" "$DIR/a.log" || fail "A logged no warning for the outage"

# Redis back (empty, same port): sharing resumes without a restart.
start_redis
ok=""
for i in $(seq 1 50); do
  ask "$A" "Where are the metrics documented $i?" > /dev/null
  ask "$B" "Where are the metrics documented $i?" > /dev/null
  if [[ $(metric "$B" sluice_cache_redis_hits_total tier=) == 3 ]]; then ok=1; break; fi
  sleep 0.2
done
[[ -n $ok ]] || fail "sharing did not resume after Redis came back"
[[ $(metric "$A" sluice_cache_redis_up tier=) == 1 ]] || fail "A does not report Redis up"
kill -TERM "$A_PID" "$B_PID"
wait "$A_PID" || fail "A did not drain cleanly"
wait "$B_PID" || fail "B did not drain cleanly"
echo "redis_shared_cache_test: shared hits 3 (one streamed), both instances served through the outage, resumed after $i tries"
