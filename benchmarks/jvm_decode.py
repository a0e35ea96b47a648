"""What decoding costs per record: cdc-monitor's decoder (the Java UDF, with every per-record
verdict, and the events frame around it) beside reading the records alone, in one warm session,
and optionally a baseline checkout's decode measured the same way in the same command.

``python -m benchmarks.jvm_decode [--events 100000] [--runs 3] [--baseline DIR] [--floor]``

Per variant: wall seconds (best of ``--runs`` warm runs of a ``noop`` write, after one warm-up) and
CPU per record (the driver JVM's and this process's CPU, from /proc, over those runs, divided by
the records). ``--baseline DIR``: another checkout (``git worktree add /tmp/base <commit>``) whose
``cdc_monitor`` is put first on the path of a second process measuring the same capture. ``--floor``
also runs ``benchmarks/jvm/DecodeFloor.java`` (one streaming Jackson pass per record on one thread,
no Spark: a lower bound).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def jvm_floor(paths: list[str], runs: int) -> dict:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (core,) = jars.glob("jackson-core-*.jar")
    if shutil.which("javac") is None:
        sys.exit("benchmarks.jvm_decode: --floor needs a JDK (javac)")
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run(["javac", "-nowarn", "-cp", str(core), "-d", classes, str(HERE / "jvm" / "DecodeFloor.java")], check=True)
        out = subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{core}", "DecodeFloor", str(runs), *paths],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _cpu_seconds() -> float:
    """CPU of this process and its descendants still running (the driver JVM, Python workers)."""
    from benchmarks.measure import _tree

    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in _tree(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def rates(paths: list[str], runs: int) -> dict:
    """Reading alone and decode_records over the same checkpointed records, in one warm session."""
    from pyspark.sql import functions as F

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    caps = capabilities(spark)
    records = read_capture(spark, paths).records.localCheckpoint()
    n = records.count()
    variants = {
        "read": records.select(F.col("value").cast("string").alias("v"), F.col("key").cast("string").alias("k")),
        "decode_records": decode_records(records, session=caps),
    }
    out: dict = {"records": n}
    for name, frame in variants.items():
        frame.write.format("noop").mode("overwrite").save()  # warm
        times, cpu0 = [], _cpu_seconds()
        for _ in range(runs):
            t = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - t)
        cpu = _cpu_seconds() - cpu0
        out[name] = {"best_seconds": round(min(times), 2), "cpu_us_per_record": round(cpu / runs / n * 1e6, 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.jvm_decode", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="a checkout of the baseline revision, measured the same way after this one")
    ap.add_argument("--floor", action="store_true", help="also the one-thread Jackson floor (needs javac)")
    ap.add_argument("--cdc-monitor-from", help=argparse.SUPPRESS)  # (the baseline's process: its package first)
    opts = ap.parse_args()
    if opts.cdc_monitor_from:
        sys.path.insert(0, opts.cdc_monitor_from)
    from benchmarks.__main__ import generate

    paths = generate(Path(opts.workdir) / f"capture-{opts.events}", opts.events)
    got = {"current": rates(paths, opts.runs)}
    if opts.cdc_monitor_from:
        print(json.dumps(got["current"]))
        return
    if opts.baseline:
        out = subprocess.run([sys.executable, "-m", "benchmarks.jvm_decode", "--events", str(opts.events), "--workdir",
                              opts.workdir, "--runs", str(opts.runs), "--cdc-monitor-from", str(Path(opts.baseline).resolve())],
                             cwd=HERE.parent, check=True, capture_output=True, text=True).stdout
        got["baseline"] = json.loads(out.strip().splitlines()[-1])
    if opts.floor:
        got["floor_one_thread"] = jvm_floor(paths, 3)
    print(json.dumps(got, indent=1))
    for revision in ("baseline", "current"):
        if revision in got:
            r = got[revision]
            for name in ("read", "decode_records"):
                print(f"{revision:>8} {name:>15}: {r[name]['cpu_us_per_record']:6.1f} us CPU/record, best {r[name]['best_seconds']} s"
                      f" ({r['records']:,} records)")


if __name__ == "__main__":
    main()
