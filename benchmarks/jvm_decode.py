"""What a purpose-built JVM decoder could cost, beside cdc-monitor's decoding in Spark.

`python -m benchmarks.jvm_decode [--events 100000] [--runs 5]` compiles `benchmarks/jvm/DecodeFloor.java`
(needs a JDK's javac) against the Jackson that pyspark ships and runs it on the harness's capture:
one streaming pass over each kcat line and one over its value and key, on one thread, picking out
what the decoder reads (see the class). No Spark rows are built, so this is a lower bound for a
decoder inside Spark; it is set against the Spark decode's rate per core measured in the same run
(the decode of the same records, checkpointed first, on all cores, best of three warm runs).
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


def jvm_rate(paths: list[str], runs: int) -> dict:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (core,) = jars.glob("jackson-core-*.jar")
    javac = shutil.which("javac")
    if javac is None:
        sys.exit("benchmarks.jvm_decode: needs a JDK (javac)")
    with tempfile.TemporaryDirectory() as classes:
        subprocess.run([javac, "-nowarn", "-cp", str(core), "-d", classes, str(HERE / "jvm" / "DecodeFloor.java")], check=True)
        out = subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{core}", "DecodeFloor", str(runs), *paths],
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def spark_rate(paths: list[str]) -> dict:
    from cdc_monitor.decoding import decode_records
    from cdc_monitor.sources.capture import read_capture
    from cdc_monitor.spark import get_spark

    spark = get_spark()
    records = read_capture(spark, paths).records.localCheckpoint()
    n = records.count()
    decoded = decode_records(records)
    times = []
    for _ in range(4):  # the first cold
        t = time.perf_counter()
        decoded.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t)
    cores = spark.sparkContext.defaultParallelism
    best = min(times[1:])
    return {"records": n, "first_seconds": round(times[0], 2), "best_seconds": round(best, 2), "cores": cores,
            "records_per_s_per_core": round(n / best / cores)}


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.jvm_decode", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--runs", type=int, default=5)
    opts = ap.parse_args()
    from benchmarks.__main__ import generate

    paths = generate(Path(opts.workdir) / f"capture-{opts.events}", opts.events)
    jvm = jvm_rate(paths, opts.runs)
    spark = spark_rate(paths)
    print(json.dumps({"purpose_built_one_thread": jvm, "spark_decode": spark}, indent=1))
    print(f"\npurpose-built, one thread: {jvm['records_per_s']:,.0f} records/s (first run {jvm['first_seconds']} s); "
          f"Spark decode: {spark['records_per_s_per_core']:,} records/s per core (first run {spark['first_seconds']} s, "
          f"best {spark['best_seconds']} s on {spark['cores']} cores): "
          f"{jvm['records_per_s'] / spark['records_per_s_per_core']:.1f}x")


if __name__ == "__main__":
    main()
