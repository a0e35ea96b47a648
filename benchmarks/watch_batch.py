"""watch's micro-batches alone (no broker, no process start): a clean MySQL stream cut at
record-time quantiles into batches of ~``--batch`` records, run through the real streaming query
(stateful carry operator on RocksDB, then the engine) from Parquet files; prints each batch's
seconds and stages (the first is cold) and its planning: ``planning_s``, Structured Streaming's
planning of the micro-batch (its progress report's ``queryPlanning``) and the checks' (the stage
``plan checks``: building and analysing their plans). Target (issue 63): <= 2 s warm for ~1.1k records.
``--plain``: the same stream without transaction metadata (Debezium's default) and with JSON
values without schemas, whose batches plan no transaction or embedded-schema check.
``--timeline``: from Spark's event log (a public setting), per batch the time its Spark jobs ran,
their SQL executions (planning included) and the longest stretch with no job running (the driver
building and analysing the next plan).
``--calls``: per batch, the seconds spent in each function that plans the checks (wrapped; calls
nest: ``run_checks`` holds the checks, ``union_all`` is called inside the others).
``--history STEP``: the stream run five times: a warm-up, then alternating without and with ``watch --history``
(intervals of STEP, lateness 0: an interval written every batch or two, more often than 5-minute
intervals under 30-second triggers); prints each run's warm batches and the ratio of the medians.
Usage: python -m benchmarks.watch_batch [--events 3000] [--batch 1000] [--plain] [--timeline] [--calls] [--history 30s]"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--plain", action="store_true", help="no transaction metadata, no schemas")
    ap.add_argument("--timeline", action="store_true", help="each batch's Spark jobs against its wall time")
    ap.add_argument("--calls", action="store_true", help="seconds per planning function and batch")
    ap.add_argument("--history", metavar="STEP", help="compare batches without and with watch --history")
    args = ap.parse_args()
    if args.history:
        compare_history(args.events, args.batch, args.history)
        return

    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support import watch_stream

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events"
        log.mkdir()
        spark = get_spark(conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(log),
                                "spark.eventLog.compress": "false"} if args.timeline else None)
        calls = _planning_calls() if args.calls else None
        spans = _timed(watch_stream, calls)
        plain = {"schemas": False, "transaction_metadata": False} if args.plain else {}
        watch_stream.stage_stream(spark, Path(tmp), args.events, args.batch, **plain)
        started = time.perf_counter()
        progress: list[dict] = []
        outcomes, _ = watch_stream.run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", WatchSettings(),
                                              progress=progress)
        took = time.perf_counter() - started
        if args.timeline:
            spark.stop()  # the event log is complete once the application ends
        planned = {p["batchId"]: p["durationMs"].get("queryPlanning", 0) / 1000 for p in progress}
        batches = [{"records": o.records, "seconds": o.seconds, "stages": o.stages,
                    "planning_s": {"query": planned.get(o.batch_id), "checks": o.stages.get("plan checks")}}
                   for o in outcomes]
        if calls is not None:
            for batch, spent in zip(batches, calls["batches"], strict=True):
                batch["calls"] = spent
        if args.timeline:
            for batch, placed in zip(batches, timelines(log, spans), strict=True):
                batch["timeline"] = placed
    total = sum(o.records for o in outcomes)
    print(json.dumps({"batches": batches, "records_per_s": round(total / took), "target_warm_seconds": 2}, indent=1))


def compare_history(events: int, batch: int, step: str) -> None:
    """Warm batches without and with a history, alternating runs in one session after a warm-up run."""
    import dataclasses
    import statistics

    from cdc_monitor.config import ScanConfig, parse_duration_ms
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support import watch_stream

    spark = get_spark()
    runs: dict[str, list[dict]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory() as tmp:
        watch_stream.stage_stream(spark, Path(tmp), events, batch)
        for i, kind in enumerate(["warm-up", *["without", "with"] * 2]):  # (the first run warms the JVM: not counted)
            scan = ScanConfig()
            if kind == "with":
                scan = dataclasses.replace(scan, history=str(Path(tmp) / f"history-{i}"),
                                           history_interval_ms=parse_duration_ms(step), history_lateness_ms=0)
            outcomes, _ = watch_stream.run_stream(spark, Path(tmp) / "in", Path(tmp) / f"ckpt-{i}", WatchSettings(scan=scan))
            runs.setdefault(kind, []).extend([{"records": o.records, "seconds": o.seconds, "stages": o.stages,
                                               "rows_written": sum(o.history.rows.values()) if o.history else 0}
                                              for o in outcomes[1:]])
    runs.pop("warm-up")
    median = {k: statistics.median(b["seconds"] for b in v) for k, v in runs.items()}
    print(json.dumps({"warm_batches": runs, "median_s": median,
                      "ratio": round(median["with"] / median["without"], 3)}, indent=1))


def _planning_calls() -> dict:
    """Wrap the functions that plan a batch's checks; returns {"now": seconds per name of the batch
    running, "batches": one such dict per batch} (``_timed`` moves "now" into "batches")."""
    from cdc_monitor.checks import suite
    from cdc_monitor.engine import collect, window

    calls: dict = {"now": {}, "batches": []}

    def wrap(owner, name: str, label: str | None = None) -> None:
        fn = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = label or name
                calls["now"][key] = round(calls["now"].get(key, 0.0) + time.perf_counter() - start, 3)

        setattr(owner, name, timed)

    for name in ("transaction_check", "findings_frame", "verdict_findings", "topic_findings", "lag_table"):
        wrap(suite, name)
    for name in ("run_checks", "narrow_union", "union_all"):
        wrap(window, name)
    wrap(collect, "tag_all")
    wrap(window.NewRecords, "findings", "scope.findings")
    wrap(window.NewRecords, "parts", "scope.parts")
    return calls


def _timed(module, calls: dict | None = None) -> list[tuple[float, float]]:
    """(start, end) epoch seconds of each micro-batch the stream applies."""
    spans: list[tuple[float, float]] = []
    apply = module.process_batch

    def timed(*args, **kwargs):
        start = time.time()
        try:
            return apply(*args, **kwargs)
        finally:
            spans.append((start, time.time()))
            if calls is not None:
                calls["batches"].append(calls["now"])
                calls["now"] = {}

    module.process_batch = timed
    return spans


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


if __name__ == "__main__":
    main()
