"""One window evaluation, for ``scan`` and for every ``watch`` micro-batch: every check over the
window's decoded events (``checks/suite.py``), the findings the window's scope counts, the parts its
report or batch needs, and all of it brought to the driver in one Spark job (``engine/collect.py``).

A scope says what of the checks' output a window counts and which parts it collects:
- ``WholeWindow`` (scan): every finding; the lag table and series, the transaction summary,
  snapshot progress and DDL counts, the findings per interval.
- ``NewRecords`` (watch): the window is a batch's new records and the context Spark's state store
  carries for them (``watch/carry.py``); per-record rules count on new records only, per-key and
  per-table findings where they land on a new record, transaction verdicts when the transaction
  becomes final in this batch, orphan events new or carried as candidates. Parts: each
  transaction's status, the lag table, events by op and the record counts; with a history, the
  new records' partial measurements and their findings per interval (watch/history.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import FINDING_COLUMNS, FINDING_SCHEMA
from cdc_monitor.checks.schema_changes import ddl_counts
from cdc_monitor.checks.snapshots import snapshot_progress
from cdc_monitor.checks.suite import CheckedResult, run_checks
from cdc_monitor.checks.transactions import ORPHAN_EVENT, summary_frame
from cdc_monitor.decoding.events import txn_key
from cdc_monitor.engine.census import nulls_first
from cdc_monitor.engine.collect import GROUP, ORDER, collect_all
from cdc_monitor.engine.series import LOCATION, FindingsSeries, lag_series
from cdc_monitor.engine.union import narrow_union, union_all
from cdc_monitor.history.measure import MEASURE_PART, PARTIAL_PART, measure_frame, partial_frame
from cdc_monitor.vocabulary import FINAL_TX_STATUSES, TxStatus

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.checks.context import CheckContext


@dataclass
class WindowFrames:
    """A window's frames: its decoded events and the findings known before the checks run."""

    events: DataFrame  # decoded
    driver_findings: list[dict[str, Any]] = field(default_factory=list)  # checks' finding_row (REPORTED_COLUMNS)
    other_findings: list[DataFrame] = field(default_factory=list)  # findings over other frames (unreadable lines)


@dataclass
class WindowOutcome:
    findings: list[dict[str, Any]]  # the first ``limit`` in report order
    counts: list[dict[str, Any]]  # per check, rule, severity, server and table, with ``count``
    parts: dict[str, list[dict[str, Any]]]  # part name -> its rows

    def add(self, findings: list[dict[str, Any]], limit: int) -> None:
        """Findings judged on the driver after the collect (a history's anomalies) joined to the
        window's: counted per GROUP, listed in report order, the first ``limit`` kept."""
        counts: dict[tuple, dict[str, Any]] = {}
        for f in findings:
            c = counts.setdefault(tuple(f[k] for k in GROUP), {
                **{k: f[k] for k in GROUP}, "count": 0, "topics": sorted({f["topic"]} - {None})})
            c["count"] += 1
        self.counts = sorted([*self.counts, *counts.values()], key=lambda c: nulls_first(*(c[k] for k in GROUP)))
        self.findings = sorted([*self.findings, *findings], key=lambda f: nulls_first(*(f[k] for k in ORDER)))[:limit]


class Scope(Protocol):
    limit: int  # findings listed (all are counted)

    def fresh(self, events: DataFrame) -> DataFrame | None: ...
    def lag_scope(self) -> str | None: ...
    def key_found(self, ctx: CheckContext) -> DataFrame | None: ...
    def findings(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> list[DataFrame]: ...
    def parts(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> dict[str, DataFrame]: ...
    def series(self, events: DataFrame) -> FindingsSeries | None: ...


def evaluate(frames: WindowFrames, ctx: CheckContext, scope: Scope, planned: Callable[[], None] | None = None
             ) -> WindowOutcome:
    """Plan every check over ``frames`` and collect what ``scope`` counts: one Spark job. ``planned``
    is called between planning and the collect (the callers time the two apart)."""
    events = frames.events
    checked = run_checks(events, ctx, fresh=scope.fresh(events), lag_scope=scope.lag_scope(),
                         key_found=scope.key_found(ctx))
    found = [*scope.findings(checked, events, ctx), *frames.other_findings]
    if frames.driver_findings:
        found.append(events.sparkSession.createDataFrame(  # (they point at no record: no record time)
            [{**f, "record_ts_ms": None} for f in frames.driver_findings], FINDING_SCHEMA))
    findings = narrow_union(union_all(found, FINDING_COLUMNS), ctx.placement.one_partition)
    got = collect_all(findings, scope.limit, scope.parts(checked, events, ctx), scope.series(events), planned)
    return WindowOutcome(got.findings, got.counts, got.parts)


@dataclass
class WholeWindow:
    """``scan``'s scope: every record of the window is judged and every finding counted."""

    limit: int
    step_ms: int  # the series' interval
    history_step_ms: int | None = None  # with a history: its interval (the measurements are a part too)

    def fresh(self, events: DataFrame) -> DataFrame | None:
        return None

    def lag_scope(self) -> str | None:
        return None

    def key_found(self, ctx: CheckContext) -> DataFrame | None:
        return None

    def findings(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> list[DataFrame]:
        return checked.findings

    def parts(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> dict[str, DataFrame]:
        parts = {"lag": checked.lag, "lag_series": lag_series(events, self.step_ms)}
        if checked.transactions is not None:
            parts["transactions"] = summary_frame(checked.transactions)
        rows = ctx.facts.rows
        if any(r["op"] == "r" for r in rows):
            parts["snapshots"] = snapshot_progress(events)
        if any(r["kind"] == "schema_change" for r in rows):
            parts["ddl"] = ddl_counts(events)
        if self.history_step_ms is not None:
            parts[MEASURE_PART] = measure_frame(events, self.history_step_ms)
        return parts

    def series(self, events: DataFrame) -> FindingsSeries | None:
        return FindingsSeries(self.step_ms, self.history_step_ms)


@dataclass
class NewRecords:
    """``watch``'s scope over a batch (see the module). ``events`` carry the flags ``is_new``,
    ``tail`` and ``candidate``; ``pending`` are the (topic, partition, ``end_offset``) of ENDs the
    carry operator still holds (judged in a later batch), ``known_final`` the coordinates of new
    events of transactions finalized in an earlier batch (no orphans), ``found`` the key pass's
    findings the operator's walks judged (its ``found`` rows: checks/ordering.py's ``ordering_sql``)."""

    pending: DataFrame
    known_final: DataFrame
    found: DataFrame
    limit: int = 0
    history_step_ms: int | None = None  # watch --history: its interval (partial measurements, findings per interval)
    _judged: DataFrame | None = field(default=None, init=False, repr=False)  # (one scope per evaluation)

    def fresh(self, events: DataFrame) -> DataFrame | None:
        return events.where("is_new")

    def lag_scope(self) -> str | None:
        return "is_new OR tail"

    def key_found(self, ctx: CheckContext) -> DataFrame | None:
        return ctx.placement.single(self.found)

    def findings(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> list[DataFrame]:
        flags = events.select(*LOCATION, "is_new", "candidate")
        located = [f.select(*FINDING_COLUMNS, F.lit(False).alias("orphan"))
                   for f in [*checked.by_scope["key"], *checked.by_scope["table"]]]
        verdicts: list[DataFrame] = []
        if checked.transactions is not None:  # (None: the batch and its context hold no transaction)
            txn = union_all(checked.by_scope["transaction"], FINDING_COLUMNS).withColumn("txn_key", txn_key(F.col("txn_id")))
            orphan = F.col("rule") == ORPHAN_EVENT.name
            verdicts.append(txn.where(~orphan).join(self._final_ids(checked, ctx), ["server", "txn_key"], "left_semi"))
            orphans = txn.where(orphan).join(ctx.placement.single(self.known_final), LOCATION, "left_anti")
            located.append(orphans.select(*FINDING_COLUMNS, F.lit(True).alias("orphan")))
        # one join with the records' flags serves both filters, over the union of what they filter
        on_new = union_all(located).join(flags, LOCATION).where(F.col("is_new") | (F.col("orphan") & F.col("candidate")))
        return [*checked.by_scope["record"], on_new, *verdicts]

    def judged(self, checked: CheckedResult, ctx: CheckContext) -> DataFrame:
        """The transactions judged in this batch (those whose END the operator still holds are not):
        one frame for both of its uses."""
        assert checked.transactions is not None
        if self._judged is None:
            self._judged = checked.transactions.join(
                ctx.placement.single(self.pending), ["topic", "partition", "end_offset"], "left_anti")
        return self._judged

    def _final_ids(self, checked: CheckedResult, ctx: CheckContext) -> DataFrame:
        return self.judged(checked, ctx).where(F.col("status").isin(*FINAL_TX_STATUSES)).select("server", "txn_key")

    def parts(self, checked: CheckedResult, events: DataFrame, ctx: CheckContext) -> dict[str, DataFrame]:
        fresh = events.where("is_new")
        parts: dict[str, DataFrame] = {}
        if checked.transactions is not None:
            parts["transactions"] = (self.judged(checked, ctx).where(F.col("status").isin(TxStatus.OPEN.value, *FINAL_TX_STATUSES))
                                     .select("server", "txn_key", "status"))
        return {
            **parts,
            "lag": checked.lag,
            "by_op": fresh.where("data_event").groupBy("server", "table", "op").count(),
            "counts": fresh.agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("decode_error").isNotNull().cast("int")).alias("bad")),
            **({PARTIAL_PART: partial_frame(fresh, self.history_step_ms)} if self.history_step_ms is not None else {}),
        }

    def series(self, events: DataFrame) -> FindingsSeries | None:
        return None if self.history_step_ms is None else FindingsSeries(None, self.history_step_ms)
