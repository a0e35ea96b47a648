"""watch's micro-batches alone (no broker, no process start): a clean MySQL stream cut at record-time
quantiles into batches of ~``--batch`` records, run through watch's real streaming query (the stateful
operator on RocksDB, then the engine) from Parquet files (tests/support/watch_stream.py); each batch's
seconds, its stages and its planning (Structured Streaming's ``queryPlanning``, the checks' ``plan
checks``); the first batch is cold. Per batch, from Spark's own listener (its event log): the Spark
jobs and stages the batch ran (a job belongs to the batch whose ``streaming.sql.batchId`` it carries),
the executors' CPU per stage (``executorCpuTime``) and the driver's CPU (the driver's Python process,
and the JVM's CPU less its executors' in local mode, where they share the JVM). ``--plain``: no
transaction metadata and no schemas. ``--timeline``: per batch the time its Spark jobs ran, their SQL
executions and the longest stretch with no job running (the driver planning)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from benchmarks.harness import child, measurement, option, table, trees


def child_batches(events: int, batch: int, plain: bool, timeline: bool) -> None:
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support import watch_stream

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events"
        log.mkdir()
        spark = get_spark(conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(log),
                                "spark.eventLog.compress": "false"})
        spans = _timed(watch_stream, _jvm_cpu())
        kw = {"schemas": False, "transaction_metadata": False} if plain else {}
        watch_stream.stage_stream(spark, Path(tmp), events, batch, **kw)
        progress: list[dict] = []
        outcomes, _ = watch_stream.run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", WatchSettings(), progress=progress)
        spark.stop()  # the event log is complete once the application ends
        planned = {p["batchId"]: p["durationMs"].get("queryPlanning", 0) / 1000 for p in progress}
        batches = [{"records": o.records, "seconds": o.seconds, "query_planning_s": planned.get(o.batch_id),
                    "checks_planning_s": o.stages.get("plan checks"), "stages": o.stages} for o in outcomes]
        for b, (_, _, py_cpu, jvm_cpu), spark_jobs in zip(batches, spans, jobs_by_batch(log, [o.batch_id for o in outcomes]),
                                                                strict=True):
            executors = sum(st["executor_cpu_s"] for j in spark_jobs for st in j["stages"])
            b["profile"] = {"jobs": len(spark_jobs), "stages": sum(len(j["stages"]) for j in spark_jobs),
                            "executor_cpu_s": round(executors, 3), "driver_python_cpu_s": round(py_cpu, 3),
                            "driver_jvm_cpu_s": round(jvm_cpu - executors, 3) if jvm_cpu is not None else None,
                            "spark_jobs": spark_jobs}
        if timeline:
            for b, placed in zip(batches, timelines(log, [(a, z) for a, z, _, _ in spans]), strict=True):
                b["timeline"] = placed
    print(json.dumps(batches))


@measurement("batch", option("--batch", type=int, default=1000, help="records a batch"),
             option("--plain", action="store_true", help="no transaction metadata, no schemas"),
             option("--timeline", action="store_true", help="each batch's Spark jobs against its wall time"), events="3000")
def batch(opts: Namespace) -> None:
    """watch's warm micro-batches of ~--batch records (no broker): seconds and planning per batch."""
    for name, tree in trees(opts, "watch").items():
        got = child("benchmarks.watch_batch:child_batches", opts.events[0], opts.batch, opts.plain, opts.timeline, tree=tree).json()
        warm = statistics.median(b["seconds"] for b in got[1:] or got)
        table(f"{name}: batches of ~{opts.batch:,} records (the first cold); warm median {warm:.2f} s",
              ["batch", "records", "seconds", "query planning (s)", "checks planning (s)", "Spark jobs", "stages",
               "executor CPU (s)", "driver JVM CPU (s)", "driver Python CPU (s)", *(["timeline"] if opts.timeline else [])],
              [[i, b["records"], b["seconds"], b["query_planning_s"], b["checks_planning_s"], b["profile"]["jobs"],
                b["profile"]["stages"], b["profile"]["executor_cpu_s"], b["profile"]["driver_jvm_cpu_s"],
                b["profile"]["driver_python_cpu_s"], *([json.dumps(b["timeline"])] if opts.timeline else [])]
               for i, b in enumerate(got)])
        warm_batches = got[1:] or got
        table(f"{name}: the warm batches' Spark stages (summed over {len(warm_batches)} batches, "
              f"{sum(b['records'] for b in warm_batches):,} records)",
              ["job", "stage", "tasks", "executor CPU (s)", "executor CPU a record (us)"],
              per_stage(warm_batches))


def per_stage(batches: list[dict]) -> list[list[object]]:
    """The batches' stages summed by their place (the job's rank in its batch and the stage's name)."""
    records = sum(b["records"] for b in batches) or 1
    summed: dict[tuple[int, str], list[float]] = {}
    for b in batches:
        for rank, job in enumerate(b["profile"]["spark_jobs"]):
            for st in job["stages"]:
                got = summed.setdefault((rank, st["name"]), [0, 0.0])
                got[0] += st["tasks"]
                got[1] += st["executor_cpu_s"]
    return [[rank, name, tasks, round(cpu, 3), round(cpu / records * 1e6, 1)] for (rank, name), (tasks, cpu) in summed.items()]


def _jvm_cpu():  # type: ignore[no-untyped-def]
    """The driver JVM's CPU seconds so far, a function (the ``java`` process this one started, read from
    /proc: None where there is none). In local mode it includes the executors'."""
    import os

    def children(pid: int) -> list[int]:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return []
        return [k for kid in kids for k in (int(kid), *children(int(kid)))]

    java = [p for p in children(os.getpid()) if Path(f"/proc/{p}/comm").read_text().strip() == "java"]
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float | None:
        if not java:
            return None
        fields = Path(f"/proc/{java[0]}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return cpu


def _timed(module, jvm_cpu) -> list[tuple[float, float, float, float | None]]:  # type: ignore[no-untyped-def]
    """(start, end) epoch seconds of each micro-batch the stream applies, the driver Python process's
    CPU seconds and the driver JVM's within it."""
    spans: list[tuple[float, float, float, float | None]] = []
    apply = module.process_batch

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        start, cpu, jvm = time.time(), time.process_time(), jvm_cpu()
        try:
            return apply(*args, **kwargs)
        finally:
            after = jvm_cpu()
            spans.append((start, time.time(), time.process_time() - cpu,
                          after - jvm if after is not None and jvm is not None else None))

    module.process_batch = timed
    return spans


def _events(log: Path):  # type: ignore[no-untyped-def]
    for path in log.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            for line in path.read_text().splitlines():
                yield json.loads(line)


def jobs_by_batch(log: Path, batch_ids: list[int]) -> list[list[dict]]:
    """Per micro-batch (by id), the Spark jobs Spark's listener saw it run (a job's ``streaming.sql.batchId``
    property), each with its stages: name (the call site), tasks and the executors' CPU seconds."""
    stage_of: dict[int, dict] = {}
    jobs: dict[int, dict] = {}
    for event in _events(log):
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            batch_id = (event.get("Properties") or {}).get("streaming.sql.batchId")
            jobs[event["Job ID"]] = {"batch": None if batch_id is None else int(batch_id), "stage_ids": event["Stage IDs"]}
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            cpu = sum(int(a.get("Value", 0)) for a in info.get("Accumulables", [])
                      if a.get("Name") == "internal.metrics.executorCpuTime")
            stage_of[info["Stage ID"]] = {"name": info["Stage Name"], "tasks": info["Number of Tasks"],
                                          "executor_cpu_s": round(cpu / 1e9, 4)}
    out: dict[int, list[dict]] = {b: [] for b in batch_ids}
    for job_id in sorted(jobs):
        job = jobs[job_id]
        if job["batch"] in out:  # (a skipped stage never completes: it ran in an earlier job)
            out[job["batch"]].append({"job": job_id, "stages": [stage_of[s] for s in job["stage_ids"] if s in stage_of]})
    return [out[b] for b in batch_ids]


def timelines(log: Path, spans: list[tuple[float, float]]) -> list[dict[str, float]]:
    """Per (start, end) span: the Spark jobs and SQL executions that started within it, from the
    event log (read once; one still running at its span's end counts up to that end)."""
    jobs: dict[int, list[float | None]] = {}
    sql: dict[int, list[float | None]] = {}
    for event in _events(log):
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            jobs[event["Job ID"]] = [event["Submission Time"] / 1000, None]
        elif kind == "SparkListenerJobEnd":
            jobs[event["Job ID"]][1] = event["Completion Time"] / 1000
        elif kind.endswith("SQLExecutionStart"):
            sql[event["executionId"]] = [event["time"] / 1000, None]
        elif kind.endswith("SQLExecutionEnd") and event["executionId"] in sql:
            sql[event["executionId"]][1] = event["time"] / 1000
    return [_placed(list(jobs.values()), list(sql.values()), start, end) for start, end in spans]


def _placed(jobs: list[list[float | None]], sql: list[list[float | None]], start: float, end: float) -> dict[str, float]:
    def within(spans: list[list[float | None]]) -> list[tuple[float, float]]:
        return sorted((a, b if b is not None else end) for a, b in spans if a is not None and start <= a <= end)

    ran = within(jobs)
    gaps, mark = [], start
    for a, b in ran:
        gaps.append(a - mark)
        mark = max(mark, b)
    gaps.append(end - mark)
    return {"jobs": len(ran), "jobs_s": round(sum(b - a for a, b in ran), 2),
            "sql_executions_s": round(sum(b - a for a, b in within(sql)), 2),
            "longest_without_a_job_s": round(max(gaps), 2)}

