#!/usr/bin/env bash
# P0 HTTP traffic beside a Kafka backlog (docs/benchmarks.md, "Kafka-fed jobs"): one `sluice
# worker` serves interactive P0 requests over HTTP and P2 jobs from Kafka through one
# priority_router, in front of the service_curve HARNESS (not a model: 4 slots, one request in
# 20 ms each, so capacity is 200 requests/s and nothing else competes for the 2 cores).
# `sluice bench` offers P0 at 0.8x and 2x of capacity for DURATION, twice per repetition:
#   baseline  the jobs topic is empty;
#   backlog   N P2 jobs were produced (kcat) before the worker started, so they wait on Kafka
#             and in the router while P0 runs.
# Reported per load: P0 p50/p99 end to end of the answered requests in both runs and their
# ratio, the share answered (at 2x the router refuses the excess with 429), the jobs completed per
# second while P0 ran (the spare capacity P2 used), and, after the last level, the seconds until
# every job of the backlog completed. Repeats REPS times, alternating; medians and each run.
# P2 leaves KEEP_FREE (default 2) of the 4 slots to P0 (the router's keep_free); KEEP_FREE=0 is
# the work-conserving router, where P0 finds all four slots taken by jobs and waits for one.
#   [KEEP_FREE=2] bench/kafka/run_backlog.sh SLUICE_BINARY [N=10000] [REPS=3] [DURATION=10s]
set -euo pipefail
SLUICE=$(realpath "$1")
N=${2:-10000}
REPS=${3:-3}
DURATION=${4:-10s}
CAPACITY=200
fail() { echo "run_backlog: $*" >&2; exit 1; }
# wait_line, metric
source "$(dirname "$0")/../../tests/apps/lib.sh"
need_tools run_backlog kcat python3 curl
scratch_dir kafka-backlog

cat > "$DIR/p.yaml" << 'YAML'
name: kafka-backlog
runtime: {drain_timeout: 10s, max_in_flight: 20000, default_deadline: 300s}
sources:
  - name: jobs
    kind: kafka
    config:
      bootstrap: ${SLUICE_KAFKA_BOOTSTRAP:-127.0.0.1:9092}
      group: kafka-backlog
      default_priority: P2
      properties: ["session.timeout.ms=6000", "heartbeat.interval.ms=500"]
  - name: api
    kind: http
    config: {listen: "127.0.0.1:0", default_priority: P0, max_connections: 20000, max_connections_per_ip: 0}
nodes:
  - name: admit
    kind: priority_router
    config:
      max_running: 4
      classes:
        - name: P2
          keep_free: ${KEEP_FREE:-2}
  - {name: harness, kind: service_curve, config: {base_time: 20ms, slots: 4}}
edges:
  - {from: jobs, to: admit}
  - {from: api, to: admit}
  - {from: admit, to: harness}
YAML
for ((i = 0; i < N; i++)); do
  printf '{"custom_id": "job-%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "sluice", "messages": [{"role": "user", "content": "question %d"}]}}\n' "$i" "$i"
done > "$DIR/batch.jsonl"
completed() { metric "$1" 'sluice_kafka_jobs_total{' 'outcome="completed"'; }

run() {  # mode(baseline|backlog) rep -> lines "mode load p50 p99 jobs_per_s" and "mode drain seconds"
  local mode=$1 rep=$2 dev boot pid port load rate c0 c1 t0 t1
  "$SLUICE" kafka-dev --partitions 4 --port 0 "$DIR/p.yaml" > "$DIR/dev.out" 2> "$DIR/dev.log" &
  dev=$!
  boot=$(wait_line "$DIR/dev.out" . "$dev" "sluice kafka-dev")
  if [[ $mode == backlog ]]; then
    timeout 60 kcat -b "$boot" -q -P -t sluice.jobs -X sticky.partitioning.linger.ms=0 -l "$DIR/batch.jsonl" ||
      fail "kcat -P failed"
  fi
  SLUICE_KAFKA_BOOTSTRAP=$boot "$SLUICE" worker "$DIR/p.yaml" 2> "$DIR/w.log" &
  pid=$!
  port=$(wait_line "$DIR/w.log" "serving on" "$pid" "worker" | sed 's|.*http://||')
  for _ in $(seq 1 300); do
    (($(metric "$port" 'sluice_kafka_assigned_partitions{source="jobs"}') > 0)) && break
    sleep 0.1
  done
  if [[ $mode == backlog ]]; then  # the backlog is flowing before P0 starts
    for _ in $(seq 1 300); do
      (($(completed "$port") > 0)) && break
      sleep 0.1
    done
  fi
  for load in 0.8 2; do
    rate=$(python3 -c "print(round($CAPACITY * $load))")
    c0=$(completed "$port")
    t0=$(date +%s.%N)
    "$SLUICE" bench --target "$port" --rate "$rate" --mix P0=1 --duration "$DURATION" --drain 60s \
      --json "$DIR/$mode-$load-$rep.json" > "$DIR/$mode-$load-$rep.txt" 2>&1 || fail "sluice bench failed: $(tail -3 "$DIR/$mode-$load-$rep.txt")"
    t1=$(date +%s.%N)
    c1=$(completed "$port")
    python3 - "$DIR/$mode-$load-$rep.json" "$mode" "$load" "$c0" "$c1" "$t0" "$t1" << 'PY'
import json, sys
path, mode, load, c0, c1, t0, t1 = sys.argv[1:]
doc = json.load(open(path))
levels = doc["levels"] if isinstance(doc, dict) and "levels" in doc else doc if isinstance(doc, list) else [doc]
p0 = [c for lv in levels for c in lv["classes"] if c["class"] == "P0"][0]
print(mode, load, p0["e2e"]["p50"], p0["e2e"]["p99"], (float(c1) - float(c0)) / (float(t1) - float(t0)),
      p0["ok"], p0["sent"])
PY
  done
  if [[ $mode == backlog ]]; then
    t0=$(date +%s.%N)
    while (($(completed "$port") < N)); do
      python3 -c "import sys; sys.exit(0 if $(date +%s.%N) - $t0 < 300 else 1)" ||
        fail "300 s after the overload and $(completed "$port") of $N jobs done"
      sleep 0.2
    done
    echo "backlog drain $(python3 -c "print($(date +%s.%N) - $t0)")"
  fi
  kill -TERM "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  kill -TERM "$dev" 2> /dev/null || true
  wait "$dev" 2> /dev/null || true
}

echo "# KEEP_FREE=${KEEP_FREE:-2} bench/kafka/run_backlog.sh $(basename "$SLUICE") N=$N REPS=$REPS DURATION=$DURATION  ($(date -u +%FT%TZ))"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < REPS; r++)); do
  run baseline "$r" >> "$DIR/runs"
  run backlog "$r" >> "$DIR/runs"
done
python3 - "$N" "$DIR/runs" << 'PY'
import statistics, sys
n = int(sys.argv[1])
rows, drains = {}, []
for line in open(sys.argv[2]):
    f = line.split()
    if f[1] == "drain":
        drains.append(float(f[2]))
        continue
    rows.setdefault((f[1], f[0]), []).append((float(f[2]) * 1e3, float(f[3]) * 1e3, float(f[4]), int(f[5]) / int(f[6])))
med = lambda xs: statistics.median(xs)
print("| P0 load | P0 p50 ms: no backlog / backlog | P0 p99 ms: no backlog / backlog (each run) | p99 ratio | P0 answered (rest 429): no backlog / backlog | P2 jobs/s while P0 ran |")
print("| --- | --- | --- | --- | --- | --- |")
for load in sorted({k[0] for k in rows}, key=float):
    b, k = rows[(load, "baseline")], rows[(load, "backlog")]
    each = ", ".join(f"{x[1]:.1f}/{y[1]:.1f}" for x, y in zip(b, k))
    ratio = med([y[1] / x[1] for x, y in zip(b, k)])
    print(f"| {load}x | {med([x[0] for x in b]):.1f} / {med([x[0] for x in k]):.1f} | "
          f"{med([x[1] for x in b]):.1f} / {med([x[1] for x in k]):.1f} ({each}) | {ratio:.2f} | "
          f"{med([x[3] for x in b]):.1%} / {med([x[3] for x in k]):.1%} | {med([x[2] for x in k]):.0f} |")
print(f"\nEvery one of the {n} jobs completed, {med(drains):.1f} s (median; each: "
      + ", ".join(f"{d:.1f}" for d in drains) + ") after the 2x level ended.")
PY
