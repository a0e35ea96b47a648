"""What decoding costs per record: cdc-monitor's decoder (the Java UDF, every per-record verdict, the
events frame around it) beside reading the records' texts alone, in one warm session, a ``noop`` write
each (best of --rounds after a warm-up; CPU per record: the process tree's, from /proc); and the
floor of a purpose-built decoder, ``benchmarks/jvm/DecodeFloor.java`` (one streaming Jackson pass per
record on one thread, no Spark; needs javac)."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from benchmarks.harness import HERE, capture, child, cpu_seconds, measurement, table, trees


def child_rates(paths: list[str], runs: int) -> None:
    from pyspark.sql import functions as F

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    records = read_capture(spark, paths).records.localCheckpoint()
    n = records.count()
    out: dict = {"records": n}
    # a tree measured as --baseline may predate the session's capabilities (runtime/session.py)
    session = {}
    if "session" in inspect.signature(decode_records).parameters:
        from cdc_monitor.runtime.session import capabilities

        session = {"session": capabilities(spark)}
    for name, frame in {"read": records.select(F.col("value").cast("string"), F.col("key").cast("string")),
                        "decode": decode_records(records, **session)}.items():
        frame.write.format("noop").mode("overwrite").save()  # warm
        times, cpu = [], cpu_seconds()
        for _ in range(runs):
            started = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - started)
        out[name] = {"best_s": round(min(times), 2), "cpu_us": round((cpu_seconds() - cpu) / runs / n * 1e6, 1)}
    print(json.dumps(out))


def jvm_floor(paths: list[str], runs: int) -> dict:
    import pyspark

    (core,) = (Path(pyspark.__file__).parent / "jars").glob("jackson-core-*.jar")
    if shutil.which("javac") is None:
        raise SystemExit("benchmarks decode: DecodeFloor.java needs a JDK (javac)")
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run(["javac", "-nowarn", "-cp", str(core), "-d", classes, str(HERE / "benchmarks" / "jvm" / "DecodeFloor.java")],
                       check=True)
        out = subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{core}", "DecodeFloor", str(runs), *paths],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def decoder_cpu(tree: Path, paths: list[str], runs: int) -> dict:
    """The tree's decoder alone on one thread, no Spark (jvm/DecoderCpu.java): its best run's CPU per record."""
    import pyspark

    (jar,) = (tree / "cdc_monitor" / "java").glob(f"cdc-monitor-operators-spark{'.'.join(pyspark.__version__.split('.')[:2])}.jar")
    jars = os.pathsep.join(str(p) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    config = subprocess.run([sys.executable, "-P", "-c", "from cdc_monitor.decoding.decoder import decoder_config; "
                             "from cdc_monitor.vocabulary import TopicRoles; print(decoder_config(TopicRoles()))"],
                            env={**os.environ, "PYTHONPATH": str(tree)}, check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as work:
        Path(work, "config.json").write_text(config.strip())
        cp = f"{work}{os.pathsep}{jar}{os.pathsep}{jars}"
        subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", work, str(HERE / "benchmarks" / "jvm" / "DecoderCpu.java")], check=True)
        out = subprocess.run(["java", "-Xmx2g", "-cp", cp, "DecoderCpu", str(Path(work, "config.json")), str(runs), *paths],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@measurement("decode", (("--flavour",), {"default": "mixed", "help": "the generated capture: mixed (four flavours) or one"}))
def decode(opts: Namespace) -> None:
    """The decoder's CPU per record, warm: in Spark beside reading alone, and alone on one thread (its
    thread's CPU, steady on a busy machine), beside a one-thread Jackson floor."""
    paths = capture(opts.flavour, opts.events[0])
    runs = max(opts.rounds, 2)
    got = {k: child("benchmarks.decode:child_rates", paths, runs, tree=t).json() for k, t in trees(opts).items()}
    alone = {k: decoder_cpu(t, paths, 5 * runs) for k, t in trees(opts).items()}
    floor = jvm_floor(paths, 3)
    table(f"{got['scan']['records']:,} records, warm, best of {runs} (the decoder alone: of {5 * runs}); the one-thread "
          f"Jackson floor: {json.dumps(floor)}", ["tree", "read: CPU/record (us)", "read: best (s)", "decode: CPU/record (us)",
                                                 "decode: best (s)", "the decoder alone, one thread: CPU/record (us)"],
          [[k, r["read"]["cpu_us"], r["read"]["best_s"], r["decode"]["cpu_us"], r["decode"]["best_s"], alone[k]["cpu_us"]]
           for k, r in got.items()])
