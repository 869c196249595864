#!/usr/bin/env bash
# What a BM25-led hybrid saves by not running the dense branch (nodes/retrieval/node/
# dense_demand.h; docs/benchmarks.md, "Retrieval: a BM25-led hybrid skips the dense branch").
# One knowledge base from DATASET's corpus.jsonl (BEIR), then one `sluice run` per setting, in
# alternating rounds, each answering every query of DATASET's queries.jsonl over /v1/retrieve
# REPS times, one at a time (one client, keep-alive):
#   skip    the fuse node below the path-agreement bar at low_agreement_bm25_weight 1 (the
#           default): no fuse node reads the dense path, so embed and dense skip the work;
#   dense   the same at weight 0.999: the fuse node reads the dense hits, so the branch runs
#           (the ranking is BM25's either way on a collection whose agreement is below the bar).
# Prints per setting and round: client latency p50 and p99 (ms), and the embed and dense stages'
# mean service time (us) from /metrics. The collection must be BM25-led (CACM is: path
# agreement 0.56 against the bar 0.64); the script says so from the run's log.
#   bench/retrieval/run_bm25_led.sh SLUICE_BINARY DATASET_DIR [REPS=20] [ROUNDS=3]
set -euo pipefail
SLUICE=$(realpath "$1")
DATASET=$(realpath "$2")
REPS=${3:-20}
ROUNDS=${4:-3}
fail() { echo "run_bm25_led: $*" >&2; exit 1; }
source "$(dirname "$0")/../../tests/apps/lib.sh"
need_tools run_bm25_led python3 curl
scratch_dir bm25-led

pipeline() {  # name weight
  cat > "$DIR/$1.yaml" << YAML
name: bm25-led-$1
sources:
  - {name: api, kind: http, config: {listen: "127.0.0.1:0"}}
nodes:
  - {name: embed, kind: embed, config: {knowledge_base: $DIR/kb}}
  - {name: bm25, kind: bm25, config: {knowledge_base: $DIR/kb, candidates: 100}}
  - {name: dense, kind: dense, config: {knowledge_base: $DIR/kb, candidates: 100}}
  - {name: fuse, kind: fuse, config: {knowledge_base: $DIR/kb, top_k: 10, low_agreement_bm25_weight: $2}}
  - {name: answer, kind: answer, config: {knowledge_base: $DIR/kb}}
edges:
  - {from: api, to: embed}
  - {from: embed, to: bm25}
  - {from: embed, to: dense}
  - {from: bm25, to: fuse}
  - {from: dense, to: fuse}
  - {from: fuse, to: answer}
YAML
}
pipeline skip 1
pipeline dense 0.999
"$SLUICE" ingest "$DIR/skip.yaml" --source "$DATASET/corpus.jsonl" > "$DIR/ingest.log" 2>&1 || fail "ingest failed: $(tail -3 "$DIR/ingest.log")"

run() {  # setting -> one line of figures
  local log=$DIR/$1.log pid port
  "$SLUICE" run "$DIR/$1.yaml" 2> "$log" &
  pid=$!
  port=$(wait_line "$log" "serving on" "$pid" "sluice run $1" | sed 's|.*http://127.0.0.1:||')
  grep -q "led by BM25" "$log" || fail "$1: the hybrid is not led by BM25 on this collection: $(grep agreement "$log")"
  python3 - "$port" "$DATASET/queries.jsonl" "$REPS" "$1" << 'PY'
import http.client, json, sys, time, urllib.request
port, queries, reps, name = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
qs = [json.loads(l)["text"] for l in open(queries) if l.strip()]
conn = http.client.HTTPConnection("127.0.0.1", port)
lat = []
for _ in range(reps):
    for q in qs:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/retrieve", json.dumps({"query": q}), {"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        lat.append(time.perf_counter() - t0)
        if r.status != 200:
            sys.exit(f"{name}: HTTP {r.status}: {body[:200]}")
lat.sort()
metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
def mean_us(stage):
    s = c = 0.0
    for line in metrics.splitlines():
        if line.startswith(f'sluice_stage_service_time_seconds_sum{{stage="{stage}"'): s = float(line.split()[-1])
        if line.startswith(f'sluice_stage_service_time_seconds_count{{stage="{stage}"'): c = float(line.split()[-1])
    return 1e6 * s / c if c else float("nan")
print(f"{name:6} requests {len(lat):5}  p50 {1e3*lat[len(lat)//2]:.3f} ms  p99 {1e3*lat[int(len(lat)*0.99)]:.3f} ms  "
      f"embed {mean_us('embed'):.1f} us  dense {mean_us('dense'):.1f} us  bm25 {mean_us('bm25'):.1f} us  fuse {mean_us('fuse'):.1f} us")
PY
  kill "$pid"
  wait "$pid" 2> /dev/null || true
}
for ((round = 1; round <= ROUNDS; round++)); do
  echo "round $round"
  run skip
  run dense
done
