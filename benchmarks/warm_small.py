"""A small capture scanned in a running session, against reading it: what a long-lived process (a
notebook, a gate over many topics) pays per window beyond its bytes.

`python -m benchmarks.warm_small [--events 500] [--baseline TREE]` generates one faulty MySQL capture,
scans it 3 times to warm the session, then 5 times more, each followed by a warm
`spark.read.text(capture).count()`; prints the medians and their ratio, and the last scan's
timings. With ``--baseline`` (an earlier revision's checkout), the same in a process of that revision.
The issue's target: <= 10x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import measure

PY = sys.executable


def child(capture: str) -> None:
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    for _ in range(3):
        run_scan(read_capture(spark, [capture])).release()
    scans, reads, plans, findings = [], [], [], []
    for _ in range(5):
        started = time.perf_counter()
        result = run_scan(read_capture(spark, [capture]))
        scans.append(time.perf_counter() - started)
        timings = result.timings
        plans.append(timings["checks_plan_and_aggregates"])
        findings.append(timings["findings"])
        result.release()
        started = time.perf_counter()
        spark.read.text(capture).count()
        reads.append(time.perf_counter() - started)
    scan, read = statistics.median(scans), statistics.median(reads)
    print(json.dumps({"scan": round(scan, 3), "read": round(read, 3), "ratio": round(scan / read, 1),
                      "planning": statistics.median(plans), "findings": statistics.median(findings), "timings": timings}))


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.warm_small", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=500)
    ap.add_argument("--baseline", help="also measure this checkout (an earlier revision's worktree)")
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child is not None:
        child(opts.child)
        return
    capture = Path(opts.workdir) / f"warm-small-{opts.events}.jsonl"
    capture.parent.mkdir(parents=True, exist_ok=True)
    if not capture.exists():
        subprocess.run([PY, "-m", "cdc_monitor", "generate", "--flavour", "mysql", "--events", str(opts.events), "--seed", "5",
                        "--faults", "--output", str(capture)], check=True, capture_output=True)
    rows = measure.in_trees(__file__, ["--child", str(capture.resolve())], opts.baseline)
    records = sum(1 for line in capture.read_text().splitlines() if line.strip())
    print(f"\n{capture.name}: {records:,} records; medians of 5 warm runs\n")
    print("| tree | scan (s) | read (s) | scan / read | planning the checks (s) | findings job (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows.items():
        # (medians; a revision measured before they were printed: its last scan's)
        plan, found = r.get("planning", r["timings"]["checks_plan_and_aggregates"]), r.get("findings", r["timings"]["findings"])
        print(f"| {name} | {r['scan']} | {r['read']} | {r['ratio']}x | {plan} | {found} |")


if __name__ == "__main__":
    main()
