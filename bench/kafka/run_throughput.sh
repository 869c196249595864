#!/usr/bin/env bash
# Kafka-fed jobs: jobs/s through one and two `sluice worker` processes in one consumer group, and
# the CPU each job costs, split by thread (docs/benchmarks.md, "Kafka"). For each worker count:
# a fresh `sluice kafka-dev` (librdkafka's mock cluster on loopback TCP, 4 partitions), the
# workers started and owning partitions, then N OpenAI Batch lines produced with kcat, timed until
# the workers' sluice_kafka_jobs_total{outcome="completed"} reaches N. CPU: the time on CPU of every
# thread of the workers (/proc/PID/task/*/schedstat, ns), before the produce and after the last job,
# grouped by thread name: librdkafka's (rdk:*), Sluice's Kafka threads (sluice-kafka-c/-p), the
# graph's oneTBB workers (sluice-graph), and the rest (HTTP, timers). The graph is a `template`
# node answering at once, so what is timed is the Kafka path and the graph's overhead, not a
# model. Repeats REPS times; prints a table of
# medians and each run.
#   bench/kafka/run_throughput.sh SLUICE_BINARY [N=5000] [REPS=3]
#   KAFKA_PROPERTIES='"linger.ms=20", "fetch.min.bytes=65536"' adds librdkafka properties to the
#   source's (a YAML list's items, quoted)
#   RATE=5000 produces the lines at that many a second (paced in 10 ms slices through kcat's
#   stdin) instead of all at once, so the jobs arrive at that rate
set -euo pipefail
SLUICE=$(realpath "$1")
N=${2:-5000}
REPS=${3:-3}
fail() { echo "run_throughput: $*" >&2; exit 1; }
# wait_line, metric
source "$(dirname "$0")/../../tests/apps/lib.sh"
need_tools run_throughput kcat python3 curl
scratch_dir kafka-bench
cpu_by_group() {  # pids... -> "rdk sluice_kafka graph rest" CPU seconds of their threads
  python3 - "$@" << 'PY'
import glob, sys
groups = {"rdk": 0, "kafka": 0, "graph": 0, "rest": 0}
for pid in sys.argv[1:]:
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            comm = open(f"{task}/comm").read().strip()
            on_cpu_ns = int(open(f"{task}/schedstat").read().split()[0])  # ns, not 10 ms ticks
        except OSError:
            continue
        g = ("rdk" if comm.startswith("rdk:") else "kafka" if comm.startswith("sluice-kafka")
             else "graph" if comm.startswith("sluice-graph") else "rest")
        groups[g] += on_cpu_ns / 1e9
print(groups["rdk"], groups["kafka"], groups["graph"], groups["rest"])
PY
}

cat > "$DIR/p.yaml" << 'YAML'
name: kafka-throughput
runtime: {drain_timeout: 10s}
sources:
  - name: jobs
    kind: kafka
    config:
      bootstrap: ${SLUICE_KAFKA_BOOTSTRAP:-127.0.0.1:9092}
      group: kafka-throughput
      properties: ["session.timeout.ms=6000", "heartbeat.interval.ms=500"@EXTRA@]
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0"}
nodes:
  - {name: answer, kind: template, config: {text: "answered {{input}}", token_interval: 0s}}
edges:
  - {from: jobs, to: answer}
  - {from: api, to: answer}
YAML
extra=${KAFKA_PROPERTIES:+, $KAFKA_PROPERTIES}
sed -i "s|@EXTRA@|$extra|" "$DIR/p.yaml"
for ((i = 0; i < N; i++)); do
  printf '{"custom_id": "job-%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "sluice", "messages": [{"role": "user", "content": "question %d"}]}}\n' "$i" "$i"
done > "$DIR/batch.jsonl"

run() {  # workers -> "seconds cpu_rdk cpu_kafka cpu_graph cpu_rest"
  local workers=$1 dev boot pids=() ports=() i t0 t1 done_now
  "$SLUICE" kafka-dev --partitions 4 --port 0 "$DIR/p.yaml" > "$DIR/dev.out" 2> "$DIR/dev.log" &
  dev=$!
  boot=$(wait_line "$DIR/dev.out" . "$dev" "sluice kafka-dev")
  for ((i = 0; i < workers; i++)); do
    SLUICE_KAFKA_BOOTSTRAP=$boot "$SLUICE" worker "$DIR/p.yaml" 2> "$DIR/w$i.log" &
    pids+=($!)
  done
  for ((i = 0; i < workers; i++)); do
    ports+=("$(wait_line "$DIR/w$i.log" "serving on" "${pids[i]}" "worker $i" | sed 's|.*http://||')")
  done
  for _ in $(seq 1 300); do
    local all=1
    for p in "${ports[@]}"; do
      (($(metric "$p" 'sluice_kafka_assigned_partitions{source="jobs"}') > 0)) || all=0
    done
    ((all)) && break
    sleep 0.1
  done
  read -r r0 k0 g0 o0 <<< "$(cpu_by_group "${pids[@]}")"
  t0=$(date +%s.%N)
  if [[ -n ${RATE:-} ]]; then
    # Paced: RATE lines a second, written to kcat's stdin in slices of 10 ms.
    python3 - "$DIR/batch.jsonl" "$RATE" << 'PY' | timeout 300 kcat -b "$boot" -q -P -t sluice.jobs -X sticky.partitioning.linger.ms=0 ||
import sys, time
lines = open(sys.argv[1], "rb").readlines()
rate = float(sys.argv[2])
per_slice = max(1, int(rate / 100))
t0 = time.perf_counter()
out = sys.stdout.buffer
for i in range(0, len(lines), per_slice):
    due = t0 + i / rate
    while (now := time.perf_counter()) < due:
        time.sleep(due - now)
    out.write(b"".join(lines[i:i + per_slice]))
    out.flush()
PY
      fail "kcat -P failed"
  else
    timeout 60 kcat -b "$boot" -q -P -t sluice.jobs -X sticky.partitioning.linger.ms=0 -l "$DIR/batch.jsonl" ||
      fail "kcat -P failed"
  fi
  while :; do
    done_now=0
    for p in "${ports[@]}"; do
      done_now=$((done_now + $(metric "$p" 'sluice_kafka_jobs_total{' 'outcome="completed"')))
    done
    ((done_now >= N)) && break
    python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $t0 < 300 else 1)" || fail "300 s and $done_now of $N done"
    sleep 0.05
  done
  t1=$(date +%s.%N)
  read -r r1 k1 g1 o1 <<< "$(cpu_by_group "${pids[@]}")"
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
  kill -TERM "$dev" 2> /dev/null || true
  wait "$dev" 2> /dev/null || true
  python3 -c "print($t1 - $t0, $r1 - $r0, $k1 - $k0, $g1 - $g0, $o1 - $o0)"
}

echo "# bench/kafka/run_throughput.sh $(basename "$SLUICE") N=$N REPS=$REPS  ($(date -u +%FT%TZ))"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for workers in 1 2; do
  for ((r = 0; r < REPS; r++)); do
    echo "$workers $(run "$workers")" >> "$DIR/runs"
  done
done
python3 - "$N" "$DIR/runs" << 'PY'
import statistics, sys
n = int(sys.argv[1])
rows = {}
for line in open(sys.argv[2]):
    w, s, rdk, kafka, graph, rest = line.split()
    rows.setdefault(int(w), []).append((float(s), float(rdk), float(kafka), float(graph), float(rest)))
print("| workers | jobs/s (median; each run) | CPU µs per job: librdkafka threads | Sluice Kafka threads | graph workers | rest | total | librdkafka's share (each run) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
base = None
for w, runs in sorted(rows.items()):
    rates = [n / r[0] for r in runs]
    med = statistics.median(rates)
    base = base or med
    us = lambda i: statistics.median(r[i] for r in runs) / n * 1e6
    total = statistics.median(sum(r[1:]) for r in runs) / n * 1e6
    each = ", ".join(f"{x:.0f}" for x in rates)
    shares = [r[1] / sum(r[1:]) for r in runs]
    share_each = ", ".join(f"{100 * x:.1f}%" for x in shares)
    print(f"| {w} | {med:.0f} ({each}; {med / base:.2f}x) | {us(1):.1f} | {us(2):.1f} | {us(3):.1f} | {us(4):.1f} | {total:.1f} | "
          f"{100 * statistics.median(shares):.1f}% ({share_each}) |")
PY
