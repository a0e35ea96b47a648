"""Many small captures in one process, as a gate over many topics runs them: `verbs.scan.run` once per
capture in one warm session.

`python -m benchmarks.many_small [--captures 50] [--events 500] [--baseline TREE]` generates the
captures (every flavour in turn, faults injected, 500 events each: ~1-2k records), scans one to warm
the session, then all of them, each a `verbs.scan.run`; prints the total and the median and largest
scan. With ``--baseline`` (an earlier revision's checkout), the same in a process of that revision.
The issue's target: 50 captures <= 60 s in all.
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
FLAVOURS = ("mysql", "postgresql", "sqlserver", "oracle", "mongodb", "yugabyte", "dtle")


def child(paths: list[str]) -> None:
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.sources.inputs import KafkaFlags
    from cdc_monitor.verbs import scan

    def one(path: str) -> float:
        started = time.perf_counter()
        scan.run(scan.Settings(paths=(path,), kafka=KafkaFlags(), config=ScanConfig())).result.release()
        return time.perf_counter() - started

    one(paths[0])  # the session started and warm
    started = time.perf_counter()
    seconds = [one(p) for p in paths]
    print(json.dumps({"total": round(time.perf_counter() - started, 1), "median": round(statistics.median(seconds), 2),
                      "max": round(max(seconds), 2)}))


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.many_small", description=__doc__.splitlines()[0])
    ap.add_argument("--captures", type=int, default=50)
    ap.add_argument("--events", type=int, default=500)
    ap.add_argument("--baseline", help="also measure this checkout (an earlier revision's worktree)")
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child is not None:
        child(opts.child)
        return
    folder = Path(opts.workdir) / f"small-{opts.captures}x{opts.events}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(opts.captures):
        path = folder / f"{i:03d}-{FLAVOURS[i % len(FLAVOURS)]}.jsonl"
        if not path.exists():
            subprocess.run([PY, "-m", "cdc_monitor", "generate", "--flavour", FLAVOURS[i % len(FLAVOURS)], "--events",
                            str(opts.events), "--seed", str(i), "--faults", "--output", str(path)],
                           check=True, capture_output=True)
        paths.append(str(path.resolve()))
    rows = measure.in_trees(__file__, ["--child", *paths], opts.baseline)
    print(f"\n{opts.captures} captures of {opts.events} events (faults injected), one warm process, verbs.scan.run each\n")
    print("| tree | in all (s) | median scan (s) | largest (s) |")
    print("| --- | ---: | ---: | ---: |")
    for name, r in rows.items():
        print(f"| {name} | {r['total']} | {r['median']} | {r['max']} |")


if __name__ == "__main__":
    main()
