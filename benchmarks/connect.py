"""A small scan over a warm Spark Connect server, whole client process, against a bare Connect
client process running one trivial query on the same server, side by side.

Target (issue 64): ``cdc-monitor scan --remote`` of a ~800-record capture takes at most 1.5x a bare
client process (``spark.range(1000)`` sum over ``SparkSession.builder.remote``), both started cold
against one server that has already run a scan (warm), alternated so the machine's drift hits
both. The server is the suite's (tests/support/connect_server.py): local[2], loopback, without the
operator jar (each scan ships it as a session artifact, as a client of a shared server does).
Also measured, the same scan in local mode: a whole ``cdc-monitor scan`` process (its JVM started
cold, what a CI runner with Java pays), alternated with the others; and the median of warm scans
in one long-lived local session (``pipeline.run_scan``, after one to warm up), what the server
itself spends on it. Each is a candidate denominator for the target (the issue's question).
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

WARM_LOCAL = ("import json, statistics, sys, time;"
              "from cdc_monitor.pipeline import run_scan; from cdc_monitor.runtime.session import get_spark;"
              "from cdc_monitor.sources.capture import read_capture;"
              "spark = get_spark(); seconds = []\n"
              "for i in range(int(sys.argv[2]) + 1):\n"
              "    t = time.perf_counter(); r = run_scan(read_capture(spark, [sys.argv[1]])); r.release()\n"
              "    seconds.append(time.perf_counter() - t)\n"
              "print(json.dumps(seconds[1:]))")
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
            local_cmd = [*env_python, "-m", "cdc_monitor", "scan", str(capture), "--output", "json"]
            timed(scan)  # warm: the server's JIT, its first session
            timed(bare_cmd)
            bare, scans, local = [], [], []
            for _ in range(args.runs):
                bare.append(timed(bare_cmd))
                scans.append(timed(scan))
                local.append(timed(local_cmd))
        finally:
            server.stop()
        warm = json.loads(subprocess.run([*env_python, "-c", WARM_LOCAL, str(capture), str(args.runs)], check=True,
                                         capture_output=True, text=True).stdout.strip().splitlines()[-1])
    b, s, lo, w = (statistics.median(x) for x in (bare, scans, local, warm))
    print(json.dumps({"records": written["records"], "cpus": os.cpu_count(),
                      "bare_connect_client_s": [round(x, 2) for x in bare], "scan_remote_s": [round(x, 2) for x in scans],
                      "scan_local_process_s": [round(x, 2) for x in local], "scan_warm_local_session_s": [round(x, 2) for x in warm],
                      "ratio_median": round(s / b, 2), "target_ratio": 1.5,
                      "ratio_to_local_process": round(s / lo, 2), "ratio_to_warm_local_session": round(s / w, 2)}))


if __name__ == "__main__":
    main()
