"""What a purpose-built JVM decoder could cost, beside cdc-monitor's decoding in Spark.

`--udf` measures it inside Spark instead: `benchmarks/jvm/DecodeUdf.java` registered as a Java UDF
(Spark's public API) over the same checkpointed records, beside reading them and beside
`decode_records`, in one session: wall seconds (best of three warm runs) and CPU per record (the
driver JVM's and this process's CPU, from /proc, over those runs).

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
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

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


def udf_rates(paths: list[str], runs: int = 3) -> dict:
    """The Java UDF decoder, reading alone and decode_records, side by side in one warm session."""
    import pyspark
    from pyspark.sql import functions as F

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    jars = Path(pyspark.__file__).parent / "jars"
    cp = os.pathsep.join(str(next(jars.glob(g))) for g in ("jackson-core-*.jar", "spark-sql-api_*.jar", "scala-library-*.jar"))
    work = Path(tempfile.mkdtemp(prefix="decode-udf-"))
    source = HERE / "jvm" / "DecodeUdf.java"
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", cp, "-d", str(work / "classes"), str(source)], check=True)
    jar = work / "decode-udf.jar"
    subprocess.run(["jar", "--create", "--file", str(jar), "-C", str(work / "classes"), "."], check=True)
    ddl = subprocess.run(["java", "-cp", f"{work / 'classes'}{os.pathsep}{jars}/*", "DecodeUdf", "{}"],
                         check=True, capture_output=True, text=True).stdout.splitlines()[0]
    spark = get_spark(conf={"spark.jars": str(jar)})
    spark.udf.registerJavaFunction("cdc_decode", "DecodeUdf", ddl)
    records = read_capture(spark, paths).records.localCheckpoint()
    n = records.count()
    variants = {
        "read": records.select(F.col("value").cast("string").alias("v"), F.col("key").cast("string").alias("k")),
        "java_udf": records.select(F.expr("cdc_decode(CAST(value AS STRING), CAST(key AS STRING))").alias("d")).select("d.*"),
        "decode_records": decode_records(records),
    }
    out = {"records": n}
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
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--udf", action="store_true", help="the Java UDF decoder inside Spark, beside reading and decode_records")
    opts = ap.parse_args()
    from benchmarks.__main__ import generate

    paths = generate(Path(opts.workdir) / f"capture-{opts.events}", opts.events)
    if opts.udf:
        got = udf_rates(paths)
        print(json.dumps(got, indent=1))
        for name in ("read", "java_udf", "decode_records"):
            print(f"{name:>15}: {got[name]['cpu_us_per_record']:6.1f} us CPU/record, best {got[name]['best_seconds']} s")
        return
    jvm = jvm_rate(paths, opts.runs)
    spark = spark_rate(paths)
    print(json.dumps({"purpose_built_one_thread": jvm, "spark_decode": spark}, indent=1))
    print(f"\npurpose-built, one thread: {jvm['records_per_s']:,.0f} records/s (first run {jvm['first_seconds']} s); "
          f"Spark decode: {spark['records_per_s_per_core']:,} records/s per core (first run {spark['first_seconds']} s, "
          f"best {spark['best_seconds']} s on {spark['cores']} cores): "
          f"{jvm['records_per_s'] / spark['records_per_s_per_core']:.1f}x")


if __name__ == "__main__":
    main()
