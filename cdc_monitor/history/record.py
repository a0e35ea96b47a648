"""What a scan (and so a gate) does with ``--history``, once its window is collected: read the
committed history of the window's servers, judge the window's measurements against it (the
anomaly rules, checks/anomalies.py), and append the window as one committed batch unless the same
window is already recorded. Four small Spark jobs: the commits, the history, the rows, the marker
(two when the window is already recorded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.anomalies import Judgement, judge_window
from cdc_monitor.checks.baseline import METRICS, BaselineSettings, HistoryIndex
from cdc_monitor.history.layout import intervals, window_id
from cdc_monitor.history.measure import FINDINGS_PART, MEASURE_PART, window_rows
from cdc_monitor.history.store import committed, hours_of, lookback_ms, read_history, recorded_batch, write_batch

if TYPE_CHECKING:
    from concurrent.futures import Future

    from pyspark.sql import SparkSession

    from cdc_monitor.checks.context import WindowFacts
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.runtime.session import SessionCaps

@dataclass
class HistoryOutcome:
    findings: list[dict[str, Any]] = field(default_factory=list)  # the anomaly findings (FINDING_COLUMNS and more)
    report: dict[str, Any] = field(default_factory=dict)  # the report's ``history`` section


@dataclass
class Past:
    """What the history holds for a window: its committed batches and the rows its baselines read."""

    batches: dict[str, dict[str, Any]]
    rows: list[dict[str, Any]]


def read_past(spark: SparkSession, cfg: ScanConfig, window: dict[str, Any], servers: list[str]) -> Past:
    """Two small jobs, which need only the window's bounds: a scan runs them beside its checks."""
    assert cfg.history is not None
    start, end, step = window.get("start_ms"), window.get("end_ms"), cfg.history_interval_ms
    if start is None or end is None or not servers:
        return Past({}, [])
    batches = committed(spark, cfg.history)
    starts = [t for t, _ in intervals(start, end, step)]
    baseline = BaselineSettings.of(cfg).intervals
    return Past(batches, read_history(spark, cfg.history, batches, servers, starts[0], step, baseline, hours_of(starts)))


def record_window(spark: SparkSession, cfg: ScanConfig, window: dict[str, Any], servers: list[str],
                  heartbeat_servers: list[str], parts: dict[str, list[dict[str, Any]]],
                  read: Past | None = None, topics: set[str] | None = None) -> HistoryOutcome:
    """``read``: ``read_past``'s result when the caller ran it already. ``topics``: the topics the
    window read (a Kafka scan's, silent ones included); a table the history knows on another topic
    was not looked at, so it gets no row and no verdict (None: a capture, every known table)."""
    assert cfg.history is not None
    start, end, step = window.get("start_ms"), window.get("end_ms"), cfg.history_interval_ms
    report: dict[str, Any] = {"location": cfg.history, "interval_ms": step}
    if start is None or end is None or not servers:
        return HistoryOutcome(report=report | {"recorded": False, "reason": "the window holds no timed records"})
    settings = BaselineSettings.of(cfg)
    wid = window_id(servers, start, end, step)
    read = read if read is not None else read_past(spark, cfg, window, servers)
    batches, past = read.batches, read.rows
    first = intervals(start, end, step)[0][0]  # the history before the window's first interval is its past
    index = HistoryIndex(step, settings, lookback_ms(step, settings.intervals))
    for r in past:
        index.add(r)
    known = sorted({(r["server"], r["table"], r["topic"]) for r in past if topics is None or r["topic"] in topics})
    rows = window_rows(parts.get(MEASURE_PART, []), parts.get(FINDINGS_PART, []), start, end, step, known)
    judged = judge_window(rows, index, first, heartbeat_servers)
    by_row = {(r["server"], r["table"], r["interval_start_ms"]): r for r in rows}
    for f in judged.findings:
        counts = by_row[(f["server"], f["table"], f["interval_start_ms"])]["findings"]
        counts[f["rule"]] = counts.get(f["rule"], 0) + 1
    done = recorded_batch(batches, wid)
    batch = done if done is not None else write_batch(spark, cfg.history, wid, rows)
    report |= {"recorded": True, "window_id": wid, "batch": batch, "already_recorded": done is not None,
               "rows_written": 0 if done is not None else len(rows), "history_rows_read": len(past),
               **_verdicts(judged, settings), "series": _series(judged, rows, index, first, past)}
    return HistoryOutcome(judged.findings, report)


def _verdicts(judged: Judgement, settings: BaselineSettings) -> dict[str, Any]:
    return {"baseline": {"sensitivity": settings.sensitivity, "intervals": settings.intervals,
                         "min_intervals": settings.min_intervals, "floor": settings.floor},
            "judged": judged.judged,
            "no_verdict": [{"server": s, "table": t, "intervals": n,
                            "reason": f"too little history: fewer than {settings.min_intervals} past intervals"}
                           for (s, t), n in sorted(judged.no_verdict.items())]}


def _series(judged: Judgement, rows: list[dict[str, Any]], index: HistoryIndex, start: int,
            past: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per anomalous (server, table, metric): its last ``n`` intervals before the window, and each
    window interval with its baseline and band (a report draws them: sinks/html_charts.py)."""
    out = []
    for server, table, metric in sorted({(f["server"], f["table"], f["metric"]) for f in judged.findings}):
        measure = METRICS[metric]
        since = start - index.settings.intervals * index.interval_ms  # the recent past (not the earlier weeks')
        before = [{"t_ms": r["interval_start_ms"], "observed": measure(r)} for r in past if r["server"] == server
                  and r["table"] == table and r["interval_start_ms"] >= since and measure(r) is not None]
        points = []
        for r in rows:
            if r["server"] == server and r["table"] == table and (value := measure(r)) is not None:
                base = index.baseline(server, table, metric, r["interval_start_ms"], start)
                points.append({"t_ms": r["interval_start_ms"], "observed": value,
                               **({"baseline": base.median, "band": [base.lower, base.upper]} if base else {})})
        out.append({"server": server, "table": table, "metric": metric, "past": before, "window": points})
    return out


class ScanHistory:
    """A scan's ``--history`` (nothing without it), in the scan's order: ``start`` reads the window's
    past in a thread while the checks' collect runs (two small jobs, mostly waiting, hidden behind
    the large one); ``judge`` then judges the window against it and records it."""

    def __init__(self, spark: SparkSession, cfg: ScanConfig, facts: WindowFacts):
        self.spark, self.cfg, self.facts = spark, cfg, facts
        self.servers = sorted({r["server"] for r in facts.rows if r["server"] is not None})
        self.past: Future[Past] | None = None

    @classmethod
    def start(cls, session: SessionCaps, cfg: ScanConfig, facts: WindowFacts) -> ScanHistory:
        spark = session.spark
        history = cls(spark, cfg, facts)
        if not cfg.history:
            return history
        from concurrent.futures import ThreadPoolExecutor

        sc = spark.sparkContext if session.status_tracker else None  # (a Connect session counts no jobs)
        group = sc.getLocalProperty("spark.jobGroup.id") if sc is not None else None

        def read() -> Past:
            if sc is not None and group is not None:  # counted with the scan's jobs (engine/jobs.py)
                sc.setJobGroup(group, "cdc-monitor scan: history", interruptOnCancel=False)
            return read_past(spark, cfg, facts.window, history.servers)

        pool = ThreadPoolExecutor(1, thread_name_prefix="cdc-history")
        try:
            history.past = pool.submit(read)
        finally:
            pool.shutdown(wait=False)
        return history

    def judge(self, parts: dict[str, list[dict[str, Any]]], beating: list[str],
              topics: set[str] | None = None) -> HistoryOutcome:
        """The window judged against its history and recorded: ``parts``, the window's collected
        parts (its measurements); ``beating``, the servers whose heartbeats it read; ``topics``, the
        topics a Kafka window read, silent ones included."""
        if not self.cfg.history:
            return HistoryOutcome()
        return record_window(self.spark, self.cfg, self.facts.window, self.servers, beating, parts,
                             self.past.result() if self.past is not None else None, topics)
