"""Whole-process cost of a small scan against a bare PySpark process, side by side.

Target (issue: one engine, a window in seconds): ``cdc-monitor scan`` of a ~800-record capture
takes at most 1.5x a bare PySpark process running ``spark.range(1000)`` sum, both started cold,
alternated so the machine's drift hits both. Also prints the scan's Spark jobs (budget 12). The scan runs twice per round: as installed
(``scan_s``, with the JVM class archive when ``cdc-monitor warm-up`` wrote one) and with the
archive ignored (``scan_no_archive_s``, CDC_MONITOR_JVM_CACHE=off); ``scan_plain_s``: a capture of as
many records without transaction metadata (Debezium's default) and JSON without schemas, whose
scan plans no transaction or embedded-schema check.
Usage: python -m benchmarks.startup [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = ("import os; os.environ.setdefault('SPARK_LOCAL_IP', '127.0.0.1');"
        "from pyspark.sql import SparkSession;"
        "s = SparkSession.builder.master('local[*]').config('spark.ui.enabled', 'false').getOrCreate();"
        "s.sparkContext.setLogLevel('FATAL'); print(s.range(1000).selectExpr('sum(id)').first()[0]); s.stop()")


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.runtime.jvm import archive_path

    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "small.jsonl"
        written = write_capture(generate("mysql", events=480, seed=11), capture)
        plain_capture = Path(tmp) / "plain.jsonl"
        plain_written = write_capture(generate("mysql", events=760, seed=11, schemas=False, transaction_metadata=False),
                                      plain_capture)
        def scan_of(path: Path) -> list[str]:
            return [sys.executable, "-m", "cdc_monitor", "scan", str(path), "--output", "json"]

        scan_cmd = scan_of(capture)
        bare, scans, unarchived, jobs, plain = [], [], [], [], []
        no_archive = {**os.environ, "CDC_MONITOR_JVM_CACHE": "off"}
        for _ in range(args.runs):
            bare.append(timed([sys.executable, "-c", BARE])[0])
            elapsed, out = timed(scan_cmd)
            scans.append(elapsed)
            jobs.append(json.loads(out)["timings_seconds"]["spark_jobs"])
            unarchived.append(timed(scan_cmd, no_archive)[0])
            plain.append(timed(scan_of(plain_capture))[0])
    b, s = statistics.median(bare), statistics.median(scans)
    print(json.dumps({"records": written["records"], "archive": archive_path().is_file(),
                      "bare_pyspark_s": [round(x, 2) for x in bare], "scan_s": [round(x, 2) for x in scans],
                      "ratio_median": round(s / b, 2), "scan_no_archive_s": [round(x, 2) for x in unarchived],
                      "ratio_no_archive_median": round(statistics.median(unarchived) / b, 2),
                      "plain_records": plain_written["records"], "scan_plain_s": [round(x, 2) for x in plain],
                      "ratio_plain_median": round(statistics.median(plain) / b, 2),
                      "spark_jobs": jobs, "target_ratio": 1.5}))


if __name__ == "__main__":
    main()
