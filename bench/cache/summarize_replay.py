#!/usr/bin/env python3
"""Summarises bench/cache/run_replay.sh: per round, caches on against off (generation calls,
hits per tier and per kind of line, false hits, end-to-end mean and p95), then the medians of
the rounds and the on/off ratios.
  summarize_replay.py OUT_DIR ROUNDS"""
import json
import statistics
import sys


def engine_sequences(path):
    """Sequences the serving engine started (its TTFT histogram's count)."""
    with open(path) as f:
        for line in f:
            if line.startswith("sluice_engine_ttft_seconds_count"):
                return int(float(line.split()[-1]))
    return 0


def read(out, name):
    level = json.load(open(f"{out}/{name}.json"))["levels"][0]
    cls = level["classes"][0]
    w = level.get("workload", {})
    by = w.get("answered_by", {})
    kinds = w.get("kinds", {})
    return {
        "ok": cls["ok"],
        "errors": cls["sent"] - cls["ok"],
        "exact": by.get("cache", 0),
        "semantic": by.get("recall", 0),
        "generated": by.get("generate", 0),
        "engine": engine_sequences(f"{out}/{name}.metrics.txt"),
        "false": w.get("false_hits_unasked", 0) + w.get("false_hits_other_text", 0),
        "kinds": {k: f"{v['hits']}/{v['answers']}" for k, v in sorted(kinds.items())},
        "mean": cls["e2e"]["mean"],
        "p95": cls["e2e"]["p95"],
    }


def main():
    out, rounds = sys.argv[1], int(sys.argv[2])
    rows = []
    print("round  run       ok err  exact semantic generated engine false  e2e mean  p95 (s)  hits by kind")
    for r in range(1, rounds + 1):
        on, off = read(out, f"cached-{r}"), read(out, f"uncached-{r}")
        rows.append((on, off))
        for label, x in (("cached", on), ("uncached", off)):
            print(f"{r:5}  {label:8} {x['ok']:4} {x['errors']:3} {x['exact']:6} {x['semantic']:8} {x['generated']:9} "
                  f"{x['engine']:6} {x['false']:5}  {x['mean']:8.3f} {x['p95']:8.3f}  {x['kinds']}")
    med = lambda f, i: statistics.median(f(row[i]) for row in rows)
    calls_on, calls_off = med(lambda x: x["engine"], 0), med(lambda x: x["engine"], 1)
    print(f"medians of {rounds} rounds: generation calls {calls_on:g} cached vs {calls_off:g} uncached "
          f"({100 * (1 - calls_on / calls_off):.1f}% fewer); false hits {med(lambda x: x['false'], 0):g}; "
          f"e2e mean {med(lambda x: x['mean'], 0):.3f} vs {med(lambda x: x['mean'], 1):.3f} s "
          f"(ratio {statistics.median(on['mean'] / off['mean'] for on, off in rows):.2f}), "
          f"p95 {med(lambda x: x['p95'], 0):.3f} vs {med(lambda x: x['p95'], 1):.3f} s "
          f"(ratio {statistics.median(on['p95'] / off['p95'] for on, off in rows):.2f})")


if __name__ == "__main__":
    main()
