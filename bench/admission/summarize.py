#!/usr/bin/env python3
"""Medians over repeated runs of bench/admission/run_overload.sh (or run_window.sh).

  bench/admission/summarize.py LABEL RUN_DIR [RUN_DIR ...]

Reads RUN_DIR/LABEL.json from each run and prints, per offered load and class, the median of
each figure with the runs' range in brackets where they differ: sent, ok, 429, 504, goodput
(answers within the SLO over requests sent) and end-to-end p50/p99 (seconds). Also the final
batcher's batch count, mean size and batch-wait p99 per class from RUN_DIR/LABEL.metrics.txt,
and the shedding level per offered load from RUN_DIR/LABEL.levels.txt when present (its highest, and
when it first reached 1, counted from the start of that load's arrivals).
"""
import json
import os
import re
import statistics
import sys


def fmt(values, pattern):
    med = statistics.median(values)
    text = pattern % med
    if min(values) != max(values):
        text += " [" + (pattern % min(values)) + "-" + (pattern % max(values)) + "]"
    return text


def batch_stats(metrics):
    """Per class: 'P0 n batches, mean size m, wait p99 <= w ms' from the Prometheus text."""
    count, total, buckets = {}, {}, {}
    for line in metrics.splitlines():
        m = re.match(r'sluice_batch_(size|wait_seconds)_(count|sum|bucket)\{[^}]*class="([^"]+)"(?:,le="([^"]+)")?\} (\S+)', line)
        if not m:
            continue
        kind, part, cls, le, value = m.groups()
        if kind == "size" and part == "count":
            count[cls] = float(value)
        elif kind == "size" and part == "sum":
            total[cls] = float(value)
        elif kind == "wait_seconds" and part == "bucket":
            buckets.setdefault(cls, []).append((float(le), float(value)))
    out = []
    for cls in sorted(count):
        if not count[cls]:
            continue
        waits = sorted(buckets.get(cls, []))
        n = waits[-1][1] if waits else 0
        p99 = next((le for le, c in waits if c >= 0.99 * n), float("nan")) if n else float("nan")
        out.append("%s %d batches, mean size %.1f, wait p99 <= %.3g ms" % (cls, count[cls], total[cls] / count[cls], 1000 * p99))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    label, dirs = sys.argv[1], sys.argv[2:]
    runs = []
    for d in dirs:
        path = os.path.join(d, label + ".json")
        with open(path) as f:
            runs.append(json.load(f))
    print(f"{label}: {len(runs)} runs")
    print("| load | class | sent | ok | 429 | 504 | goodput of sent | e2e p50 | e2e p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for li, level in enumerate(runs[0]["levels"]):
        for ci, cls in enumerate(level["classes"]):
            rows = [r["levels"][li]["classes"][ci] for r in runs]
            good = [100.0 * x["good"] / x["sent"] if x["sent"] else 0.0 for x in rows]
            print("| %g/s | %s | %s | %s | %s | %s | %s %% | %s s | %s s |" % (
                level["offered_rate"], cls["class"],
                fmt([x["sent"] for x in rows], "%d"), fmt([x["ok"] for x in rows], "%d"),
                fmt([x["rejected_429"] for x in rows], "%d"), fmt([x["timeout_504"] for x in rows], "%d"),
                fmt(good, "%.1f"), fmt([x["e2e"]["p50"] for x in rows], "%.3f"),
                fmt([x["e2e"]["p99"] for x in rows], "%.3f")))
    # The batcher's histograms per class (LABEL.metrics.txt, each run): batches, mean size and
    # the bucket bound under which 99% of the batch waits fell (first request to flush).
    for d in dirs:
        path = os.path.join(d, label + ".metrics.txt")
        if os.path.exists(path):
            print("batcher (%s): %s" % (d, "; ".join(batch_stats(open(path).read()))))
    # The shedding level sampled during the run (LABEL.levels.txt: seconds since the bench
    # started, level), cut into the bench's levels by their elapsed times (run back to back).
    for d, run in zip(dirs, runs):
        path = os.path.join(d, label + ".levels.txt")
        if not os.path.exists(path):
            continue
        samples = []
        for line in open(path):
            t, lv = line.split()
            if lv != "none":
                samples.append((float(t), float(lv)))
        begin, parts = 0.0, []
        for level in run["levels"]:
            end = begin + level["elapsed_seconds"]
            inside = [(t - begin, lv) for t, lv in samples if begin <= t < end]
            top = max((lv for _, lv in inside), default=0)
            first = next((t for t, lv in inside if lv >= 1), None)
            parts.append("%g/s: max %d%s" % (level["offered_rate"], top,
                                             "" if first is None else ", >=1 from %.1fs" % first))
            begin = end
        print("shedding level (%s): %s" % (d, "; ".join(parts)))


if __name__ == "__main__":
    main()
