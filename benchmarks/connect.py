"""A small scan over a warm Spark Connect server, whole client process, against a bare Connect
client process running one trivial query on the same server, side by side.

Target (issue 64): ``cdc-monitor scan --remote`` of a ~800-record capture takes at most 1.5x a bare
client process (``spark.range(1000)`` sum over ``SparkSession.builder.remote``), both started cold
against one server that has already run a scan (warm), alternated so the machine's drift hits
both. The server is the suite's (tests/support/connect_server.py): local[2], loopback, without the
operator jar (each scan ships it as a session artifact, as a client of a shared server does).
Usage: python -m benchmarks.connect [--runs 5]
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

BARE = ("from pyspark.sql import SparkSession; import sys;"
        "s = SparkSession.builder.remote(sys.argv[1]).getOrCreate();"
        "print(s.range(1000).selectExpr('sum(id)').first()[0]); s.stop()")


def timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from tests.support.connect_server import ConnectServer
    from tests.support.spark_cluster import worker_environment

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        capture = root / "small.jsonl"
        written = write_capture(generate("mysql", events=480, seed=11), capture)
        server = ConnectServer(root / "server", worker_environment(root / "worker-env"))
        try:
            env_python = [sys.executable]
            scan = [*env_python, "-m", "cdc_monitor", "scan", str(capture), "--output", "json", "--remote", server.url]
            bare_cmd = [*env_python, "-c", BARE, server.url]
            timed(scan)  # warm: the server's JIT, its first session
            timed(bare_cmd)
            bare, scans = [], []
            for _ in range(args.runs):
                bare.append(timed(bare_cmd))
                scans.append(timed(scan))
        finally:
            server.stop()
    b, s = statistics.median(bare), statistics.median(scans)
    print(json.dumps({"records": written["records"], "cpus": os.cpu_count(),
                      "bare_connect_client_s": [round(x, 2) for x in bare], "scan_remote_s": [round(x, 2) for x in scans],
                      "ratio_median": round(s / b, 2), "target_ratio": 1.5}))


if __name__ == "__main__":
    main()
