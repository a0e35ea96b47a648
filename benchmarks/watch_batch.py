"""watch's micro-batches alone (no broker, no process start): a clean MySQL stream cut at record-time
quantiles into batches of ~``--batch`` records, run through watch's real streaming query (the stateful
operator on RocksDB, then the engine) from Parquet files (tests/support/watch_stream.py); each batch's
seconds, its stages and its planning (Structured Streaming's ``queryPlanning``, the checks' ``plan
checks``) and each stage's CPU (the process tree's: in local mode the driver JVM runs the executors);
the first batch is cold. ``--plain``: no transaction metadata and no schemas. ``--timeline``:
from Spark's event log, per batch the time its Spark jobs ran, their SQL executions and the longest
stretch with no job running (the driver planning)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from benchmarks.harness import child, cpu_seconds, measurement, option, table, trees


def child_batches(events: int, batch: int, plain: bool, timeline: bool) -> None:
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch import batch as watch_batch
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support import watch_stream

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events"
        log.mkdir()
        spark = get_spark(conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(log),
                                "spark.eventLog.compress": "false"} if timeline else None)
        spans = _timed(watch_stream)
        cpu = _stage_cpu(watch_batch)
        kw = {"schemas": False, "transaction_metadata": False} if plain else {}
        watch_stream.stage_stream(spark, Path(tmp), events, batch, **kw)
        progress: list[dict] = []
        outcomes, _ = watch_stream.run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", WatchSettings(), progress=progress)
        if timeline:
            spark.stop()  # the event log is complete once the application ends
        planned = {p["batchId"]: p["durationMs"].get("queryPlanning", 0) / 1000 for p in progress}
        batches = [{"records": o.records, "seconds": o.seconds, "query_planning_s": planned.get(o.batch_id),
                    "checks_planning_s": o.stages.get("plan checks"), "stages": o.stages,
                    "cpu_s": cpu.get(id(o.stages), {})} for o in outcomes]
        if timeline:
            for b, placed in zip(batches, timelines(log, spans), strict=True):
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
              ["batch", "records", "seconds", "query planning (s)", "checks planning (s)", "CPU (s)",
               "CPU by stage (s)", *(["timeline"] if opts.timeline else [])],
              [[i, b["records"], b["seconds"], b["query_planning_s"], b["checks_planning_s"], round(sum(b["cpu_s"].values()), 2),
                json.dumps(b["cpu_s"]), *([json.dumps(b["timeline"])] if opts.timeline else [])] for i, b in enumerate(got)])


def _timed(module) -> list[tuple[float, float]]:  # type: ignore[no-untyped-def]
    """(start, end) epoch seconds of each micro-batch the stream applies."""
    spans: list[tuple[float, float]] = []
    apply = module.process_batch

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.time()
        try:
            return apply(*args, **kwargs)
        finally:
            spans.append((start, time.time()))

    module.process_batch = timed
    return spans


def _stage_cpu(module) -> dict[int, dict[str, float]]:  # type: ignore[no-untyped-def]
    """Each batch's CPU seconds per stage (the process tree's, beside the seconds its clock logs), by
    the id of the batch's ``stages`` dict (the outcome carries that dict)."""
    by_batch: dict[int, dict[str, float]] = {}

    class CpuClock(module._Clock):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.cpu_mark, self.cpu = cpu_seconds(), {}
            by_batch[id(self.stages)] = self.cpu

        def __call__(self, stage: str) -> None:
            super().__call__(stage)
            now = cpu_seconds()
            self.cpu[stage] = round(now - self.cpu_mark, 2)
            self.cpu_mark = now

    module._Clock = CpuClock
    return by_batch


def timelines(log: Path, spans: list[tuple[float, float]]) -> list[dict[str, float]]:
    """Per (start, end) span: the Spark jobs and SQL executions that started within it, from the
    event log (read once; one still running at its span's end counts up to that end)."""
    jobs: dict[int, list[float | None]] = {}
    sql: dict[int, list[float | None]] = {}
    for path in log.rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue
        for line in path.read_text().splitlines():
            event = json.loads(line)
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

