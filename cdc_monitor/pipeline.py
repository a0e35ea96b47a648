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

``run_scan`` reads as the scan's steps, each a call into the module that owns it: the window read
(engine/read_window.py), its history's past read beside the checks (history/record.py,
``ScanHistory``), every check evaluated and collected (engine/window.py), the window judged against
its history and recorded, and the snapshot (``ScanResult``) built from what they gave.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from cdc_monitor import __version__
from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.context import CheckContext
from cdc_monitor.checks.lag import HISTOGRAM_LE_S, lag_row_ms
from cdc_monitor.checks.transactions import transaction_summary
from cdc_monitor.config import ScanConfig
from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.census import events_by_table, heartbeats, nulls_first, schema_versions, summary_counts, topic_counts
from cdc_monitor.engine.jobs import JobCounter
from cdc_monitor.engine.read_window import ReadWindow, read_window
from cdc_monitor.engine.series import step_ms
from cdc_monitor.engine.window import WholeWindow, evaluate
from cdc_monitor.history.record import ScanHistory
from cdc_monitor.runtime.connect import SKIPPED
from cdc_monitor.runtime.failures import note_window
from cdc_monitor.runtime.progress import live_steps, spark_tasks
from cdc_monitor.runtime.session import SessionCaps, capabilities
from cdc_monitor.vocabulary import HISTORY_CHECKS, SCAN_CHECKS, SEVERITY_RANK

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.engine.window import WindowOutcome
    from cdc_monitor.runtime.progress import Live, Off
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


def _format_description(cfg: ScanConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if cfg.schema_registry.get("url"):
        out["schema_registry"] = cfg.schema_registry["url"]  # never its credentials
    if cfg.avro_json:
        out["avro_json"] = True
    return out


def step_name(name: str) -> str:
    return name.replace("_", " ")


# a scan's steps in the order they run (each lapped as it ends; ``history`` only with --history)
SCAN_STEPS = ("read_decode", "window", "checks_plan_and_aggregates", "findings", "history", "summary")


class _Laps:
    """A scan's timings: each step's seconds (``lap``), the Spark jobs and stages it ran; on a
    terminal, the step that runs next is the live line's (runtime/progress.py)."""

    def __init__(self, session: SessionCaps, progress: Callable[[str], None] | None, steps: Live | Off,
                 order: tuple[str, ...]):
        self.started = self.mark = time.time()
        self.timings: dict[str, float] = {}
        self.jobs = JobCounter(session)
        self.progress = progress
        self.steps, self.order = steps, order

    def lap(self, name: str, detail: str = "") -> None:
        now = time.time()
        self.timings[name] = round(now - self.mark, 3)
        self.mark = now
        if self.progress is not None:
            self.progress(f"{step_name(name)}: {self.timings[name]:.1f}s{detail}")
        following = self.order[self.order.index(name) + 1:] if name in self.order else ()
        if following:
            self.steps.step(step_name(following[0]))
        else:
            self.steps.idle()

    def stop(self, result: ScanResult) -> None:
        """The job counts into the timings (over Spark Connect: not counted, and the report says so)."""
        if (counted := self.jobs.stop()) is not None:
            self.timings["spark_jobs"], self.timings["spark_stages"] = counted
        else:
            result.session = {"connect": True, "skipped": dict(SKIPPED)}
        result.timings = self.timings
        result.finished_at = time.time()
        result.duration_seconds = round(result.finished_at - self.started, 3)


def run_scan(source: SourceResult, config: ScanConfig | None = None,
             progress: Callable[[str], None] | None = None, keep_events: bool = False,
             live: bool = False, session: SessionCaps | None = None) -> ScanResult:
    """Decode, check and summarise one window: the scan's steps, each a call into the module that
    owns it. ``progress`` receives a line per finished step; ``keep_events`` leaves the cached
    events frame on the result until ``result.release()``; ``live``: the running step on a live
    line (runtime/progress.py; only on a terminal); ``session``: the capabilities of the source's
    session (runtime/session.py; by default asked here), handed down to every step."""
    cfg = config or ScanConfig()
    caps = session or capabilities(source.records.sparkSession)
    order = tuple(s for s in SCAN_STEPS if s != "history" or cfg.history)
    with live_steps(live, step_name(order[0]), lambda: spark_tasks(caps)) as steps:
        return _run_scan(source, cfg, caps, _Laps(caps, progress, steps, order), keep_events)


def _run_scan(source: SourceResult, cfg: ScanConfig, session: SessionCaps, laps: _Laps, keep_events: bool) -> ScanResult:
    cache = FrameCache()
    window = read_window(source, cfg, cache, session, laps.lap, note_window)  # jobs 1-2: decoded, held, the census
    history = ScanHistory.start(session, cfg, window.facts)  # --history: its past read beside the checks
    step = step_ms(window.facts.window["start_ms"], window.facts.window["end_ms"])
    scope = WholeWindow(cfg.max_findings, step, cfg.history_interval_ms if cfg.history else None)
    with session.generated_code(window.records >= cfg.codegen_rows):
        collected = evaluate(window.frames, CheckContext(session, window.facts, cfg, cache), scope,  # job 3: every check
                             planned=lambda: laps.lap("checks_plan_and_aggregates"))
    laps.lap("findings", f" ({sum(int(c['count']) for c in collected.counts)} found)")
    # --history: the window judged against it and recorded; its anomalies join the findings
    judged = history.judge(collected.parts, [h["server"] for h in heartbeats(window.facts.rows)], source.topics_read)
    collected.add(judged.findings, cfg.max_findings)
    if cfg.history:
        laps.lap("history", f" ({len(judged.findings)} anomalies)")
    result = _result(window, collected, judged.report, step, cfg, source)
    laps.lap("summary")
    laps.stop(result)
    if keep_events:
        result.events_frame, result.release = window.events, cache.release
    else:
        cache.release()
    return result


def _result(window: ReadWindow, collected: WindowOutcome, history: dict[str, Any], step: int, cfg: ScanConfig,
            source: SourceResult) -> ScanResult:
    """The snapshot reports, metrics and the gate read, from what the steps gave."""
    facts = window.facts
    counts: dict[str, dict[str, int]] = {}
    for c in collected.counts:
        per = counts.setdefault(c["severity"], {})
        per[c["rule"]] = per.get(c["rule"], 0) + int(c["count"])
    summary: dict[str, Any] = summary_counts(facts.rows, window.rejects_count)
    summary["findings_by_check"] = findings_by_check(counts, SCAN_CHECKS + (HISTORY_CHECKS if cfg.history else ()))
    summary["findings_by_severity"] = {s: sum(v.values()) for s, v in counts.items()}
    by_rule = {rule: n for per in counts.values() for rule, n in per.items()}
    ddl = {(d["server"], d["table"]): d["ddl_events"] for d in collected.parts.get("ddl", [])}
    return ScanResult(
        window=facts.window,
        summary=summary,
        events_by_table=events_by_table(facts.rows),
        lag=sorted((lag_row_ms(r) for r in collected.parts["lag"]), key=lambda r: nulls_first(r["server"], r["topic"], r["table"])),
        transactions=transaction_summary(collected.parts.get("transactions", []), by_rule),
        schemas=[s | ({"registry_ids": window.registry_ids[s["topic"]]} if s["topic"] in window.registry_ids else {})
                 for s in schema_versions(facts.rows, ddl)],
        heartbeats=heartbeats(facts.rows),
        snapshots=sorted(collected.parts.get("snapshots", []), key=lambda r: nulls_first(r["server"], r["table"])),
        findings=collected.findings,
        findings_by_rule=counts,
        finding_counts=collected.counts,
        topic_counts=topic_counts(facts.rows),
        inputs=dict(source.description) | _format_description(cfg),
        history=history,
        series={"step_ms": step, "lag_threshold_ms": cfg.lag_threshold_ms,
                "table_lag_threshold_ms": dict(cfg.table_lag_threshold_ms),
                "lag": sorted(collected.parts["lag_series"], key=lambda r: nulls_first(r["server"], r["table"], r["t_ms"])),
                "findings": sorted(collected.parts["findings_series"], key=lambda r: nulls_first(r["rule"], r["t_ms"]))},
    )
