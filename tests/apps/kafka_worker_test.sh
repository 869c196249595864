#!/usr/bin/env bash
# Kafka-fed jobs end to end on the real binaries: `sluice kafka-dev` (4 partitions), kcat as an
# independent Kafka client, two `sluice worker` processes in one consumer group, one killed with
# SIGKILL mid-run. A batch input file of N jobs (custom_id job-0..job-N-1) plus a poison line
# (invalid JSON) and a job with an unknown url is produced with `kcat -P -l`. Checks:
#  - zero lost: every job-i has a result line (OpenAI Batch output: custom_id, status_code 200,
#    keyed by its id, the template's answer to its own question); duplicates (a job redone
#    after the kill, same custom_id) are allowed by at-least-once and counted;
#  - exactly two records dead-lettered (distinct by source offset; a dead letter the killed
#    worker wrote but did not commit may be written again), invalid_json and unknown_endpoint,
#    each with its original bytes and an error line on the results topic;
#  - a job produced with a traceparent header (kcat -H) gets a result record carrying it;
#  - the surviving worker drains on SIGTERM, exits 0 and prints its summary; kafka-dev exits 0.
# The graph is a `template` node (a test fixture), so no model or knowledge base is needed;
# PIPELINE arguments (files, or directories whose kafka pipelines are taken) are only validated,
# so the shipped Kafka pipelines stay loadable. Prints one line of counts at the end.
#   tests/apps/kafka_worker_test.sh SLUICE_BINARY [PIPELINE_OR_DIR...]
# Environment: KAFKA_TEST_JOBS (N, default 2000), KEEP_SCRATCH=1 keeps the temp dir (logs).
set -euo pipefail
SLUICE=$1
shift
N=${KAFKA_TEST_JOBS:-2000}
START=$SECONDS
DEV="" A="" B=""
fail() {
  echo "kafka_worker_test: $*" >&2
  for log in dev.log a.log b.log; do
    [[ -f "$DIR/$log" ]] && { echo "--- $log (last 40 lines)" >&2; tail -n 40 "$DIR/$log" >&2; }
  done
  exit 1
}
# wait_line, metric
source "$(dirname "$0")/lib.sh"
need_tools kafka_worker_test kcat python3 curl
scratch_dir kafka-worker

# The shipped pipelines named on the command line must validate.
for arg in "$@"; do
  if [[ -d "$arg" ]]; then files=$(grep -l 'kind: kafka' "$arg"/*.yaml || true); else files=$arg; fi
  for f in $files; do "$SLUICE" validate "$f" > /dev/null 2> "$DIR/validate.log" || fail "$f does not validate: $(cat "$DIR/validate.log")"; done
done

# The source's defaults (max_in_flight 256, commit_interval 1s); a 5 ms token interval (3 words)
# keeps the kill mid-run. session.timeout.ms 6000 (librdkafka's default is 45 s): how long the
# group waits for the killed member before its partitions move.
cat > "$DIR/p.yaml" << 'YAML'
name: kafka-worker-test
runtime: {drain_timeout: 10s}
sources:
  - name: jobs
    kind: kafka
    config:
      bootstrap: ${SLUICE_KAFKA_BOOTSTRAP:-127.0.0.1:9092}
      group: kafka-worker-test
      properties: ["session.timeout.ms=6000", "heartbeat.interval.ms=500"]
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0"}
nodes:
  - {name: answer, kind: template, config: {text: "answered {{input}}", token_interval: 5ms}}
edges:
  - {from: jobs, to: answer}
  - {from: api, to: answer}
YAML

"$SLUICE" kafka-dev --partitions 4 --port 0 "$DIR/p.yaml" > "$DIR/dev.out" 2> "$DIR/dev.log" &
DEV=$!
BOOT=$(wait_line "$DIR/dev.out" . "$DEV" "sluice kafka-dev")
kc() { timeout 20 kcat -b "$BOOT" -q "$@"; }  # no kcat call may hang the test
read_topic() { kc -C -t "$1" -e -o beginning -f '%k\t%s\n'; }  # key TAB value, one a line

worker() {  # log
  SLUICE_KAFKA_BOOTSTRAP=$BOOT "$SLUICE" worker "$DIR/p.yaml" 2> "$DIR/$1" &
}
worker a.log
A=$!
worker b.log
B=$!
wait_line "$DIR/a.log" "consuming from Kafka" "$A" "worker a" > /dev/null
wait_line "$DIR/b.log" "consuming from Kafka" "$B" "worker b" > /dev/null
PORT_A=$(wait_line "$DIR/a.log" "serving on" "$A" "worker a" | sed 's|.*http://||')
PORT_B=$(wait_line "$DIR/b.log" "serving on" "$B" "worker b" | sed 's|.*http://||')
# Each worker owns partitions before anything is produced: otherwise the first member to join
# can take every job before the group's rebalance gives the second any (seen on a 2-core CI).
assigned() { metric "$1" 'sluice_kafka_assigned_partitions{source="jobs"}'; }  # host:port
for _ in $(seq 1 300); do
  (($(assigned "$PORT_A") > 0 && $(assigned "$PORT_B") > 0)) && break
  sleep 0.1
done
(($(assigned "$PORT_A") > 0 && $(assigned "$PORT_B") > 0)) ||
  fail "after 30 s the group has not given both workers partitions (a: $(assigned "$PORT_A"), b: $(assigned "$PORT_B"))"
echo "kafka_worker_test: $((SECONDS - START)) s: kafka-dev at $BOOT, two workers consuming, each owning partitions"

# The batch input file: job-i asks "question i"; the poison and the unknown url in the middle.
for ((i = 0; i < N; i++)); do
  if ((i == N / 2)); then
    echo '{"custom_id": "poison", "url": "/v1/chat/completions", "body": {'
    echo '{"custom_id": "bad-url", "method": "POST", "url": "/v1/nowhere", "body": {}}'
  fi
  printf '{"custom_id": "job-%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "sluice", "messages": [{"role": "user", "content": "question %d"}]}}\n' "$i" "$i"
done > "$DIR/batch.jsonl"
SENT=$(wc -l < "$DIR/batch.jsonl")
# sticky.partitioning.linger.ms=0: unkeyed lines go to a random partition each; with librdkafka's
# default (10 ms of one partition) a fast kcat can put the whole file on one worker's partition.
kc -P -t sluice.jobs -X sticky.partitioning.linger.ms=0 -l "$DIR/batch.jsonl" || fail "kcat -P failed"
echo "kafka_worker_test: $((SECONDS - START)) s: produced $SENT records"

# Once a fifth of the jobs are answered and both workers have taken records (the group split
# the partitions), SIGKILL the one that has taken the most.
records() { metric "$1" 'sluice_kafka_records_total{source="jobs"}'; }  # host:port
RA=0 RB=0 done_now=0
deadline=$((SECONDS + 40))
while ((SECONDS < deadline)); do
  done_now=$(read_topic sluice.results | wc -l)
  RA=$(records "$PORT_A") RB=$(records "$PORT_B")
  ((done_now >= N / 5 && RA > 0 && RB > 0)) && break
  ((done_now < N)) || fail "every job was answered before both workers took records (a: $RA, b: $RB)"
  sleep 0.1
done
((done_now >= N / 5 && RA > 0 && RB > 0)) || fail "after 40 s: $done_now results, records taken a: $RA, b: $RB"
if ((RA >= RB)); then VICTIM=$A SURVIVOR=$B SLOG=b.log; else VICTIM=$B SURVIVOR=$A SLOG=a.log; fi
{ kill -9 "$VICTIM" && wait "$VICTIM"; } 2> /dev/null || true  # (bash's "Killed" notice is expected)
echo "kafka_worker_test: $((SECONDS - START)) s: SIGKILL to worker $([[ $VICTIM == "$A" ]] && echo a || echo b) at $done_now results (records taken: a $RA, b $RB)"

# Until every job-i has a result and both bad records a dead letter (the survivor takes over
# the killed worker's partitions after the session timeout and redoes what it had not committed).
check() {  # mode: "wait" (exit 1 while incomplete) or "final" (print counts, fail on any error)
  python3 - "$1" "$N" "$DIR/results" "$DIR/dlq" << 'PY'
import json, re, sys
mode, n, results_file, dlq_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
problems, ok_lines, answered, error_lines = [], 0, set(), []
for line in open(results_file, encoding="utf-8"):
    key, _, value = line.rstrip("\n").partition("\t")
    try:
        r = json.loads(value)
    except ValueError as e:
        problems.append(f"a result line is not JSON ({e}): {value[:200]}")
        continue
    if r.get("id") != key:
        problems.append(f"result keyed {key!r} has id {r.get('id')!r}")
    if r.get("response") is None:
        error_lines.append(r)
        continue
    cid, resp = r.get("custom_id"), r["response"]
    m = re.fullmatch(r"job-(\d+)", cid or "")
    if not m or int(m.group(1)) >= n:
        problems.append(f"unexpected custom_id {cid!r}")
        continue
    if resp.get("status_code") != 200 or r.get("error") is not None:
        problems.append(f"{cid}: status_code {resp.get('status_code')}, error {r.get('error')}")
    content = resp.get("body", {}).get("choices", [{}])[0].get("message", {}).get("content", "")
    if content.strip() != f"answered question {m.group(1)}":
        problems.append(f"{cid} answered {content!r}")
    ok_lines += 1
    answered.add(cid)
letters, sources = [], set()
for line in open(dlq_file, encoding="utf-8"):
    key, _, value = line.rstrip("\n").partition("\t")
    try:
        d = json.loads(value)
    except ValueError as e:
        problems.append(f"a dead letter is not JSON ({e}): {value[:200]}")
        continue
    letters.append(d)
    src = d.get("source", {})
    sources.add((src.get("topic"), src.get("partition"), src.get("offset"), d["reason"]["code"], d.get("original")))
    if d["reason"]["code"] == "unknown_endpoint" and (d.get("custom_id"), d.get("id")) != ("bad-url", "bad-url"):
        problems.append(f"the unknown_endpoint dead letter has custom_id {d.get('custom_id')!r} and id {d.get('id')!r}, not 'bad-url'")
lost = n - len(answered)
if mode == "wait":
    sys.exit(0 if lost == 0 and len(sources) >= 2 else 1)
codes = sorted(s[3] for s in sources)
if codes != ["invalid_json", "unknown_endpoint"]:
    problems.append(f"dead letters (distinct by source offset) have codes {codes}, not [invalid_json, unknown_endpoint]")
originals = {s[3]: s[4] for s in sources}
if "poison" not in (originals.get("invalid_json") or "") or "/v1/nowhere" not in (originals.get("unknown_endpoint") or ""):
    problems.append(f"dead letters do not carry the original records: {originals}")
if any(s[0] != "sluice.jobs" for s in sources):
    problems.append(f"dead letters name another source topic: {sources}")
error_codes = sorted({e.get("error", {}).get("code") for e in error_lines})
if error_codes != ["invalid_json", "unknown_endpoint"] or len(error_lines) != len(letters):
    problems.append(f"{len(error_lines)} error result lines with codes {error_codes} for {len(letters)} dead letters")
if lost:
    missing = sorted(set(f"job-{i}" for i in range(n)) - answered, key=lambda c: int(c[4:]))
    problems.append(f"{lost} jobs lost, e.g. {missing[:10]}")
for p in problems[:20]:
    print("PROBLEM", p)
print(f"{ok_lines} {ok_lines - len(answered)} {len(sources)} {len(letters) - len(sources)} {lost}")
sys.exit(1 if problems else 0)
PY
}
complete=""
deadline=$((SECONDS + 90))
while ((SECONDS < deadline)); do
  read_topic sluice.results > "$DIR/results" || true
  read_topic sluice.dlq > "$DIR/dlq" || true
  if check wait; then complete=yes; break; fi
  kill -0 "$SURVIVOR" 2> /dev/null || fail "the surviving worker exited"
  sleep 0.2
done
echo "kafka_worker_test: $((SECONDS - START)) s: $( [[ -n $complete ]] && echo "every job answered" || echo "gave up waiting")"
read_topic sluice.results > "$DIR/results" || fail "kcat -C sluice.results failed"
read_topic sluice.dlq > "$DIR/dlq" || fail "kcat -C sluice.dlq failed"
counts=$(check final) || fail "results are wrong ($( [[ -n $complete ]] || echo "incomplete after 90 s; ")$(wc -l < "$DIR/results") result lines):
$counts"
read -r COMPLETED DUPLICATED DEAD DEAD_DUP LOST <<< "$counts"

# W3C trace context over Kafka, with kcat on both sides: a job produced with a traceparent
# header gets a result whose record carries it on (tracing is off in this pipeline: as it came).
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
echo '{"custom_id": "traced", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "sluice", "messages": [{"role": "user", "content": "traced"}]}}' |
  kc -P -t sluice.jobs -k traced -H "traceparent=$TP" || fail "kcat -P with a header failed"
traced=""
for _ in $(seq 1 100); do
  traced=$(kc -C -t sluice.results -e -o beginning -f '%k\t%h\n' | grep -m1 '^traced' || true)
  [[ -n $traced ]] && break
  sleep 0.1
done
[[ $traced == *"traceparent=$TP"* ]] || fail "the traced job's result record has headers '${traced#*$'\t'}', not traceparent=$TP"
echo "kafka_worker_test: $((SECONDS - START)) s: a traceparent header came back on the result record"

echo "kafka_worker_test: $((SECONDS - START)) s: SIGTERM to the surviving worker"
kill -TERM "$SURVIVOR"
status=0
wait "$SURVIVOR" || status=$?
((status == 0)) || fail "the surviving worker exited $status after SIGTERM"
summary=$(grep "kafka source 'jobs':" "$DIR/$SLOG" || true)
[[ $summary =~ :\ ([0-9]+)\ records,\ ([0-9]+)\ answered,\ 0\ retried,\ ([0-9]+)\ dead-lettered,\ ([0-9]+)\ handed\ back\;\ left\ the\ group ]] ||
  fail "no summary line from the surviving worker: '$summary'"
((BASH_REMATCH[2] > 0)) || fail "the surviving worker answered nothing: $summary"
grep -q "0 abandoned" "$DIR/$SLOG" || fail "the surviving worker abandoned requests at drain"
echo "kafka_worker_test: $((SECONDS - START)) s: SIGTERM to kafka-dev"
kill -TERM "$DEV"
status=0
wait "$DEV" || status=$?
((status == 0)) || fail "sluice kafka-dev exited $status after SIGTERM"

echo "kafka_worker_test: survivor: ${summary#sluice: }"
echo "kafka_worker_test: ok in $((SECONDS - START)) s: sent $SENT, completed $COMPLETED, duplicated $DUPLICATED," \
  "dead-lettered $DEAD (+$DEAD_DUP duplicate letters), lost $LOST"
