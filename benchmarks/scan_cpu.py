"""Where a scan's CPU goes (on demand): one process, the suite's session settings (``local[2]``,
two shuffle partitions, Spark's Kafka connector on the classpath when scripts/jars.sh fetched it),
the same generated capture scanned ``--runs`` times. Per scan: wall seconds and CPU seconds of
this Python process, of the driver JVM by thread kind (read from /proc/<pid>/task: the py4j
threads that build and plan, the JIT compiler threads, executor tasks, GC) and of Python workers.
``--jfr N``: also record scans N.. with Java Flight Recorder and split the planning threads'
samples by phase (analysis and its DeduplicateRelations and CheckAnalysis rules, the optimizer, the
physical planner, py4j's class lookups) and by the DataFrame call they ran under.
``--java-options``: the driver JVM's extra options (JIT or collector choices side by side, one
process each).
Usage: python -m benchmarks.scan_cpu [--flavour mysql] [--events 300] [--runs 6] [--jfr 3] [--java-options="-XX:..."]"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.measure import _rss_and_kind, _tree

HZ = os.sysconf("SC_CLK_TCK")
PHASES = (("DeduplicateRelations", "analysis: DeduplicateRelations"), ("CheckAnalysis", "analysis: CheckAnalysis"),
          ("Analyzer.executeAndCheck", "analysis: other rules"), ("optimizedPlan", "optimizer"),
          ("executedPlan", "physical planning"), ("sparkPlan", "physical planning"),
          ("Class.forName", "py4j class lookups"))


THREADS = {"Thread-#": "JVM: py4j (build, analyse, plan)", "C# CompilerThre": "JVM: JIT compiler",
           "Executor task i": "JVM: executor tasks"}


def _cpu(stat: Path) -> float:
    """CPU seconds of a /proc stat file (a process's or one of its threads')."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def cpu_by_kind() -> collections.Counter:
    """CPU seconds so far of this process, its JVM's threads by kind and its other descendants
    (the Python workers the JVM starts)."""
    out: collections.Counter = collections.Counter()
    me = os.getpid()
    for pid in _tree(me):
        proc = Path(f"/proc/{pid}")
        try:
            if pid == me:
                out["python driver"] += _cpu(proc / "stat")
            elif _rss_and_kind(pid)[1] != "jvm":
                out["python workers and other processes"] += _cpu(proc / "stat")
            else:
                for task in (proc / "task").iterdir():
                    name = re.sub(r"\d+", "#", (task / "comm").read_text().strip())
                    gc = "GC" in name or name.startswith("G# ")
                    out[THREADS.get(name, "JVM: GC" if gc else "JVM: other")] += _cpu(task / "stat")
        except OSError:
            continue
    return out


def phases(jfr: Path) -> tuple[collections.Counter, collections.Counter]:
    """The py4j threads' execution samples of a recording, by phase and by the DataFrame call."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "512", str(jfr)],
                          capture_output=True, text=True, check=True).stdout
    by_phase: collections.Counter = collections.Counter()
    by_call: collections.Counter = collections.Counter()
    for sample in text.split("jdk.ExecutionSample")[1:]:
        thread = re.search(r'sampledThread = "([^"]*)"', sample)
        if not thread or not thread.group(1).startswith("Thread-"):
            continue
        frames = re.findall(r"^\s+([\w.$<>]+)\(", sample, re.M)
        stack = " ".join(frames)
        by_phase[next((name for key, name in PHASES if key in stack), "other")] += 1
        outer = next((f for f in reversed(frames) if not f.startswith(
            ("py4j.", "java.lang.reflect", "jdk.internal", "java.lang.Thread", "java.util.concurrent"))), "?")
        by_call[outer.rsplit(".", 1)[-1]] += 1
    return by_phase, by_call


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flavour", default="mysql")
    ap.add_argument("--events", type=int, default=300)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--jfr", type=int, help="record scans from this one (0-based) on with Flight Recorder")
    ap.add_argument("--java-options", default="", help="the driver JVM's extra options (JIT or GC choices to compare)")
    args = ap.parse_args()

    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture
    from tests.support.broker import CACHE, spark_kafka_jars

    work = Path(tempfile.mkdtemp(prefix="scan-cpu-"))
    capture = work / "c.jsonl"
    write_capture(generate(args.flavour, events=args.events, seed=5, faults=True), capture)
    conf = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
    if (CACHE / "spark-kafka" / ".resolved").exists():
        conf["spark.jars"] = ",".join(spark_kafka_jars())
    jfr = work / "scans.jfr"
    jvm = [args.java_options] + (["-XX:FlightRecorderOptions=stackdepth=512"] if args.jfr is not None else [])
    conf["spark.driver.extraJavaOptions"] = " ".join(o for o in jvm if o)
    spark = get_spark("local[2]", conf)
    total, begun = cpu_by_kind(), time.monotonic()
    for i in range(args.runs):
        if i == args.jfr:
            subprocess.run(["jcmd", str(_jvm_pid()), "JFR.start", "name=scans", "settings=profile"],
                           capture_output=True, check=True)
        before, started = cpu_by_kind(), time.monotonic()
        result = run_scan(read_capture(spark, [str(capture)]), ScanConfig(max_findings=100_000))
        spent = cpu_by_kind() - before
        print(f"scan {i}: {time.monotonic() - started:.1f} s wall, {result.summary['records']} records, CPU s:",
              {k: round(v, 1) for k, v in spent.most_common()}, flush=True)
    total = cpu_by_kind() - total
    print(f"all {args.runs} scans: {time.monotonic() - begun:.1f} s wall, CPU s {sum(total.values()):.1f}:",
          {k: round(v, 1) for k, v in total.most_common()})
    if args.jfr is not None:
        subprocess.run(["jcmd", str(_jvm_pid()), "JFR.stop", "name=scans", f"filename={jfr}"],
                       capture_output=True, check=True)
        by_phase, by_call = phases(jfr)
        total = sum(by_phase.values()) or 1
        print("py4j threads' samples by phase:", {k: f"{100 * v / total:.0f}%" for k, v in by_phase.most_common()})
        print("by DataFrame call:", {k: f"{100 * v / total:.0f}%" for k, v in by_call.most_common(10)})


def _jvm_pid() -> int:
    jvms = [pid for pid in _tree(os.getpid()) if _rss_and_kind(pid)[1] == "jvm"]
    if not jvms:
        raise RuntimeError("no driver JVM under this process")
    return jvms[0]


if __name__ == "__main__":
    main()
