"""Wire a source, decoding, the checks and the result snapshot together, in three Spark jobs
whatever the input (``timings.spark_jobs`` counts them; tests/test_job_budget.py holds the count):

1. the decoded events (the one decoder, decoding/decoder.py: each record parsed and its per-record
   rules judged once), checkpointed without raw texts: a few hundred bytes a row;
2. the window's census (engine/facts.py): summary, partitions, per-server facts, one aggregate;
3. everything else in one collect (engine/collect.py): every check's findings (complete counts,
   the first ``max_findings``), the lag table and the transaction summary.

One job more when a capture has unreadable lines (read again to report them), and when a small
window read in several partitions is held again in one. Facts known on the driver reach the checks
as literals, never as joins or broadcasts. A window of at most ``one_partition_rows`` records is
held in one partition (engine/cache.py): no job then has a shuffle (``timings.spark_stages`` equals
the jobs).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql import Observation
from pyspark.sql import functions as F

from cdc_monitor import __version__
from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.context import CheckContext
from cdc_monitor.checks.decode import capture_line_findings, duplicate_record_findings
from cdc_monitor.checks.lag import HISTOGRAM_LE_S, lag_row_ms
from cdc_monitor.checks.transactions import transaction_summary
from cdc_monitor.config import ScanConfig
from cdc_monitor.decoding import decode_records
from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.census import events_by_table, heartbeats, nulls_first, schema_versions, summary_counts, topic_counts
from cdc_monitor.engine.collect import GROUP, ORDER
from cdc_monitor.engine.facts import window_facts
from cdc_monitor.engine.jobs import JobCounter
from cdc_monitor.engine.series import step_ms
from cdc_monitor.engine.window import WholeWindow, WindowFrames, evaluate
from cdc_monitor.runtime.connect import SKIPPED, is_connect
from cdc_monitor.vocabulary import HISTORY_CHECKS, SCAN_CHECKS, SEVERITY_RANK

if TYPE_CHECKING:
    from concurrent.futures import Future

    from pyspark.sql import DataFrame, SparkSession

    from cdc_monitor.checks.context import WindowFacts
    from cdc_monitor.engine.window import WindowOutcome
    from cdc_monitor.history.record import HistoryOutcome, Past
    from cdc_monitor.sources import SourceResult



# fields of the JSON report that describe the run, not the data: two scans of the same records
# differ only in these
RUN_FIELDS = ("generated_at", "inputs", "timings_seconds", "session")


@dataclass
class ScanResult:
    """A snapshot of one window: what reports, metrics and the gate read."""

    metrics_kind: ClassVar[str] = "window"  # (MetricsSnapshot.from_outcome)

    window: dict[str, Any]
    summary: dict[str, Any]
    events_by_table: list[dict[str, Any]]
    lag: list[dict[str, Any]] = field(default_factory=list)
    transactions: dict[str, Any] = field(default_factory=dict)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    findings_by_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    # per check, rule, severity, server, table: count, and the topics its findings are on
    finding_counts: list[dict[str, Any]] = field(default_factory=list)
    # per topic: records, tombstones, data events, those without op / transaction (engine/census.py)
    topic_counts: list[dict[str, Any]] = field(default_factory=list)
    duration_seconds: float = 0.0
    finished_at: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    heartbeats: list[dict[str, Any]] = field(default_factory=list)  # per server: count, last_ts_ms
    snapshots: list[dict[str, Any]] = field(default_factory=list)  # per server and table: rows, markers seen
    inputs: dict[str, Any] = field(default_factory=dict)  # what was read (files, or brokers and topics)
    series: dict[str, Any] = field(default_factory=dict)  # step_ms, lag and findings per interval (engine/series.py)
    history: dict[str, Any] = field(default_factory=dict)  # with --history: what was recorded and judged (history/record.py)
    # over Spark Connect: {"connect": true, "skipped": {what: why}}, what the report lacks (runtime/connect.py)
    session: dict[str, Any] = field(default_factory=dict)
    # with run_scan(keep_events=True): the cached events frame, alive until release() is called
    events_frame: DataFrame | None = field(default=None, repr=False)
    release: Callable[[], None] = field(default=lambda: None, repr=False)

    def worst_count(self, fail_on: str) -> int:
        """Findings at or above ``fail_on`` severity (0 when fail_on is never)."""
        if fail_on == "never":
            return 0
        floor = SEVERITY_RANK[fail_on]
        return sum(
            n for sev, by_rule in self.findings_by_rule.items() if SEVERITY_RANK.get(sev, 0) >= floor
            for n in by_rule.values()
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "tool": "cdc-monitor",
            "version": __version__,
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.finished_at)),
            "inputs": self.inputs,
            "window": self.window,
            "summary": self.summary,
            "events": self.events_by_table,
            "lag": [lag_json(r) for r in self.lag],
            "transactions": self.transactions,
            "schemas": self.schemas,
            "heartbeats": self.heartbeats,
            "snapshots": self.snapshots,
            "findings": self.findings,
            "series": self.series,
            **({"history": self.history} if self.history else {}),
            "timings_seconds": self.timings,
            **({"session": self.session} if self.session else {}),
        }


def lag_json(row: dict[str, Any]) -> dict[str, Any]:
    """A lag row as the JSON report shows it: the histogram's cumulative counts keyed by their
    upper bound in seconds, as Prometheus' ``le`` label spells it."""
    out = {k: v for k, v in row.items() if k != "le_counts"}
    counts = row.get("le_counts")
    if counts is not None:
        out["histogram"] = {**{format(le, "g"): n for le, n in zip(HISTOGRAM_LE_S, counts, strict=True)},
                            "+Inf": row.get("count")}
    return out


def findings_by_check(counts: dict[str, dict[str, int]], checks: tuple[str, ...] = SCAN_CHECKS) -> dict[str, int]:
    out = dict.fromkeys(checks, 0)
    for by_rule in counts.values():
        for rule, n in by_rule.items():
            out[CATALOGUE[rule].check] += n
    return out


def _value_format(records: DataFrame, cfg: ScanConfig, cache: FrameCache,
                  driver_findings: list[dict[str, Any]]) -> tuple[DataFrame, dict[str, dict[str, list[int]]]]:
    """Avro input as the JSON text the decoder reads: with a schema registry, one small job finds
    the schema ids the window names (the records are kept, so the input is read once), the
    driver fetches each once and judges it, and the records are decoded in Arrow batches."""
    from cdc_monitor.decoding.avro_wire import avro_as_json

    avro = avro_as_json(records, cfg, cache)
    if avro.usage is None:
        return avro.records, {}
    from cdc_monitor.checks.registry_schemas import registry_findings, registry_ids

    driver_findings += registry_findings(avro.usage, avro.schemas, cfg.roles)
    return avro.records, registry_ids(avro.usage, avro.schemas)


def _format_description(cfg: ScanConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if cfg.schema_registry.get("url"):
        out["schema_registry"] = cfg.schema_registry["url"]  # never its credentials
    if cfg.avro_json:
        out["avro_json"] = True
    return out


def _servers(facts: WindowFacts) -> list[str]:
    return sorted({r["server"] for r in facts.rows if r["server"] is not None})


def _read_history(spark: SparkSession, cfg: ScanConfig, facts: WindowFacts) -> Future[Past] | None:
    """With ``--history``: the window's past read in a thread while the checks' collect runs (two
    small jobs, mostly waiting, hidden behind the large one)."""
    if not cfg.history:
        return None
    from concurrent.futures import ThreadPoolExecutor

    from cdc_monitor.history.record import read_past

    sc = None if is_connect(spark) else spark.sparkContext  # (a Connect session counts no jobs)
    group = sc.getLocalProperty("spark.jobGroup.id") if sc is not None else None

    def read() -> Past:
        if sc is not None and group is not None:  # counted with the scan's jobs (engine/jobs.py)
            sc.setJobGroup(group, "cdc-monitor scan: history", interruptOnCancel=False)
        return read_past(spark, cfg, facts.window, _servers(facts))

    pool = ThreadPoolExecutor(1, thread_name_prefix="cdc-history")
    try:
        return pool.submit(read)
    finally:
        pool.shutdown(wait=False)


def _topics_read(source: SourceResult) -> set[str] | None:
    """The topics a Kafka window read, silent ones included (None for a capture: it names only the
    topics that had records)."""
    if source.description.get("kind") != "kafka":
        return None
    return {r["topic"] for r in source.description.get("ranges") or ()}


def _history(spark: SparkSession, cfg: ScanConfig, facts: WindowFacts, collected: WindowOutcome,
             past: Future[Past] | None = None, topics: set[str] | None = None) -> HistoryOutcome:
    """With ``--history``: the window judged against its history and recorded (history/record.py);
    the anomaly findings join the window's (listed, counted per table) before anything reads them."""
    from cdc_monitor.history.record import HistoryOutcome, record_window

    if not cfg.history:
        return HistoryOutcome()
    out = record_window(spark, cfg, facts.window, _servers(facts), [h["server"] for h in heartbeats(facts.rows)],
                        collected.parts, past.result() if past is not None else None, topics)
    counts: dict[tuple, dict[str, Any]] = {}
    for f in out.findings:
        c = counts.setdefault(tuple(f[k] for k in GROUP), {
            **{k: f[k] for k in GROUP}, "count": 0, "topics": sorted({f["topic"]} - {None})})
        c["count"] += 1
    collected.counts = sorted([*collected.counts, *counts.values()], key=lambda c: nulls_first(*(c[k] for k in GROUP)))
    collected.findings = sorted([*collected.findings, *out.findings],
                                key=lambda f: nulls_first(*(f[k] for k in ORDER)))[:cfg.max_findings]
    return out


def run_scan(source: SourceResult, config: ScanConfig | None = None,
             progress: Callable[[str], None] | None = None, keep_events: bool = False) -> ScanResult:
    """Decode, check and summarise one window. ``progress`` receives a line per finished phase;
    ``keep_events`` leaves the cached events frame on the result until ``result.release()``."""
    cfg = config or ScanConfig()
    started = time.time()
    timings: dict[str, float] = {}
    jobs = JobCounter(source.records.sparkSession)
    mark = [started]

    def lap(name: str, detail: str = "") -> None:
        now = time.time()
        timings[name] = round(now - mark[0], 3)
        mark[0] = now
        if progress is not None:
            progress(f"{name.replace('_', ' ')}: {timings[name]:.1f}s{detail}")

    cache = FrameCache()
    driver_findings: list[dict[str, Any]] = []  # findings known without reading records (checks' finding_row)
    other_findings: list[DataFrame] = []
    records, registry_ids = _value_format(source.records, cfg, cache, driver_findings)
    counted = Observation("decoded")
    events = cache.materialize(decode_records(records, cfg.roles).observe(counted, F.count(F.lit(1)).alias("n")))
    # a small window is checked in one partition: no shuffles (engine/cache.py); a window read in
    # several is held again in one (a job more, only then: one partition plans every check without a shuffle)
    # (over Spark Connect a checkpoint's observed metrics do not reach the client: the checkpoint is counted, a small job)
    decoded = counted.get.get("n")
    cache.one_partition = (events.count() if decoded is None else decoded) <= cfg.one_partition_rows
    # (a Connect client cannot ask a frame its partitions: it holds the window in one again, a small job)
    if cache.one_partition and (is_connect(events.sparkSession) or events.rdd.getNumPartitions() > 1):
        events = cache.materialize(events)
    lap("read_decode")
    rejects_count = 0
    # the decode pass counted unreadable input lines: read them again only when there are some
    seen = source.rejects_observed.get.get("rejects") if source.rejects_observed is not None else None
    if source.rejects is not None and seen != 0:
        rejects = cache.keep(source.rejects)
        rejects_count = rejects.count()
        if rejects_count:
            other_findings.append(capture_line_findings(rejects))
    facts = window_facts(events)
    duplicates = {(p["topic"], p["partition"]): p["duplicates"] for p in facts.partitions if p.get("duplicates")}
    if duplicates:  # overlapping captures: each record once (three more jobs, only then)
        events = cache.materialize(events.dropDuplicates(["topic", "partition", "offset"]))
        facts = window_facts(events)
        driver_findings += duplicate_record_findings(duplicates)
    window = facts.window
    lap("window", f" ({len(window['partitions'])} partitions)")
    frames = WindowFrames(events, driver_findings, other_findings)
    step = step_ms(window["start_ms"], window["end_ms"])
    scope = WholeWindow(cfg.max_findings, step, cfg.history_interval_ms if cfg.history else None)
    past = _read_history(source.records.sparkSession, cfg, facts)
    collected = evaluate(frames, CheckContext(facts, cfg, cache), scope, planned=lambda: lap("checks_plan_and_aggregates"))
    lap("findings", f" ({sum(int(c['count']) for c in collected.counts)} found)")
    history = _history(source.records.sparkSession, cfg, facts, collected, past, _topics_read(source))
    if cfg.history:
        lap("history", f" ({len(history.findings)} anomalies)")
    counts: dict[str, dict[str, int]] = {}
    for c in collected.counts:
        per = counts.setdefault(c["severity"], {})
        per[c["rule"]] = per.get(c["rule"], 0) + int(c["count"])
    summary: dict[str, Any] = summary_counts(facts.rows, rejects_count)
    summary["findings_by_check"] = findings_by_check(counts, SCAN_CHECKS + (HISTORY_CHECKS if cfg.history else ()))
    summary["findings_by_severity"] = {s: sum(v.values()) for s, v in counts.items()}
    by_rule = {rule: n for per in counts.values() for rule, n in per.items()}
    transactions = transaction_summary(collected.parts.get("transactions", []), by_rule)
    lag = sorted((lag_row_ms(r) for r in collected.parts["lag"]), key=lambda r: nulls_first(r["server"], r["topic"], r["table"]))
    result = ScanResult(
        window=window,
        summary=summary,
        events_by_table=events_by_table(facts.rows),
        lag=lag,
        transactions=transactions,
        schemas=[s | ({"registry_ids": registry_ids[s["topic"]]} if s["topic"] in registry_ids else {})
                 for s in schema_versions(facts.rows, {(d["server"], d["table"]): d["ddl_events"]
                                                       for d in collected.parts.get("ddl", [])})],
        heartbeats=heartbeats(facts.rows),
        snapshots=sorted(collected.parts.get("snapshots", []), key=lambda r: nulls_first(r["server"], r["table"])),
        findings=collected.findings,
        findings_by_rule=counts,
        finding_counts=collected.counts,
        topic_counts=topic_counts(facts.rows),
        timings=timings,
        inputs=dict(source.description) | _format_description(cfg),
        history=history.report,
        series={"step_ms": step, "lag_threshold_ms": cfg.lag_threshold_ms,
                "table_lag_threshold_ms": dict(cfg.table_lag_threshold_ms),
                "lag": sorted(collected.parts["lag_series"], key=lambda r: nulls_first(r["server"], r["table"], r["t_ms"])),
                "findings": sorted(collected.parts["findings_series"], key=lambda r: nulls_first(r["rule"], r["t_ms"]))},
    )
    lap("summary")
    if (counted_jobs := jobs.stop()) is not None:
        timings["spark_jobs"], timings["spark_stages"] = counted_jobs
    else:
        result.session = {"connect": True, "skipped": dict(SKIPPED)}
    if keep_events:
        result.events_frame, result.release = events, cache.release
    else:
        cache.release()
    result.finished_at = time.time()
    result.duration_seconds = round(result.finished_at - started, 3)
    return result
