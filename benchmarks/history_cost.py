"""What ``--history`` adds to a scan: the same window scanned as a whole ``cdc-monitor scan``
process with and without ``--history``, alternately, against a history seeded with 8 days of the
seasonal model (generator/seasonal.py; 20 tables on 4 servers, 5-minute intervals). Each
``--history`` run gets a fresh copy of the seeded history, so it reads the history and writes a
new batch (the costly case; a window already recorded only reads).

``python -m benchmarks.history_cost [--runs 3] [--intervals 3] [--scale 1.0]``: per variant the
median process time, the median pipeline time (``duration_seconds``: Spark's start-up excluded)
and its ``history`` phase, and the ratios. Target: at most 10% more (docs/history.md). Run it
alone on the machine (timings).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks import measure

PY = sys.executable


def seed(folder: Path, intervals: int, scale: float) -> tuple[Path, Path, int]:
    """The capture (``intervals`` of real events from a Monday 10:00, two weeks in) and the
    history before it (one committed batch), written in this process."""
    from cdc_monitor.checks.baseline import DAY_MS
    from cdc_monitor.generator.seasonal import SeasonalModel, event_lines, scaled_rows
    from cdc_monitor.history.store import write_batch
    from cdc_monitor.runtime.session import get_spark

    model = SeasonalModel(days=15, anomalies_per_kind=0)
    now = model.start_ms + 14 * DAY_MS + 10 * 3_600_000
    capture = folder / "window.jsonl"
    lines = event_lines(model, now, intervals, scale=scale)
    capture.write_text("\n".join(lines) + "\n")
    history = folder / "history-seed"
    spark = get_spark(None, {})
    write_batch(spark, str(history), "seed", [r for r in scaled_rows(model, scale, now) if r["interval_start_ms"] >= now - 8 * DAY_MS])
    spark.stop()
    return capture, history, len(lines)


def scan(capture: Path, report: Path, history: Path | None) -> dict:
    extra = ["--history", str(history)] if history is not None else []
    r = measure.run([PY, "-m", "cdc_monitor", "scan", str(capture), "--output", "json", "--report-file", str(report),
                     "--quiet", *extra])
    assert r.returncode in (0, 1), r.stderr[-2000:]
    got = json.loads(report.read_text())
    if history is not None:
        assert got["history"]["rows_written"] > 0 and got["history"]["history_rows_read"] > 0, got["history"]
    return {"seconds": round(r.seconds, 2), "pipeline_seconds": got["timings_seconds"] and round(
        sum(v for k, v in got["timings_seconds"].items() if k not in ("spark_jobs", "spark_stages")), 2),
        "history_seconds": got["timings_seconds"].get("history", 0.0), "spark_jobs": got["timings_seconds"]["spark_jobs"],
        "anomalies": got["summary"]["findings_by_check"].get("anomaly")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--intervals", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    folder = args.workdir or Path(tempfile.mkdtemp(prefix="cdc-history-cost-"))
    folder.mkdir(parents=True, exist_ok=True)
    capture, seeded, records = seed(folder, args.intervals, args.scale)
    runs: dict[str, list[dict]] = {"without": [], "with": []}
    for i in range(args.runs):
        runs["without"].append(scan(capture, folder / f"without-{i}.json", None))
        copy = folder / f"history-{i}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(seeded, copy)
        runs["with"].append(scan(capture, folder / f"with-{i}.json", copy))
    med = {v: {k: statistics.median(r[k] for r in rs) for k in ("seconds", "pipeline_seconds", "history_seconds")}
           for v, rs in runs.items()}
    out = {"records": records, "runs": runs, "median": med,
           "process_ratio": round(med["with"]["seconds"] / med["without"]["seconds"], 3),
           "pipeline_ratio": round(med["with"]["pipeline_seconds"] / med["without"]["pipeline_seconds"], 3),
           "cpus": os.cpu_count()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
