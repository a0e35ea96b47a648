"""The scan pipeline alone (no process start), in this process, from a given checkout: compare
commits on the same capture. Usage:
    git worktree add /tmp/base <commit>
    python -m benchmarks.pipeline CAPTURE... --checkout /tmp/base
    python -m benchmarks.pipeline CAPTURE...          # this checkout
Prints the seconds and the report's phase timings (and Spark jobs, where the checkout counts them)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--checkout", default=str(Path(__file__).resolve().parent.parent))
    args = ap.parse_args()
    sys.path.insert(0, args.checkout)
    import cdc_monitor

    if not cdc_monitor.__file__.startswith(str(Path(args.checkout).resolve())):
        raise SystemExit(f"imported {cdc_monitor.__file__}, not the checkout {args.checkout}")
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    started = time.perf_counter()
    result = run_scan(read_capture(spark, args.paths), ScanConfig())
    print(json.dumps({"checkout": args.checkout, "seconds": round(time.perf_counter() - started, 1),
                      "records": result.summary["records"], "timings": result.timings}))


if __name__ == "__main__":
    main()
