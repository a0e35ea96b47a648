"""Time series of a window for the report's pictures and the JSON report: lag and findings per
interval of record time. Both are parts of the one collect (engine/collect.py): no job of their own.

The interval (``step_ms``) is the smallest of ``STEPS_MS`` that cuts the window into at most
``POINTS`` intervals, so a 10-minute capture is drawn per 10 s and a day per 30 min.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import change_events, with_lag
from cdc_monitor.history.measure import FINDINGS_COLUMNS, FINDINGS_PART

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

POINTS = 60
STEPS_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000, 21_600_000, 86_400_000)
LOCATION = ["topic", "partition", "offset"]
SERIES_PART, SERIES_COLUMNS = "findings_series", ("rule", "severity", "t_ms", "count")
SET = "_grouping"


def step_ms(start_ms: int | None, end_ms: int | None) -> int:
    """The interval that cuts [start_ms, end_ms] into at most POINTS intervals."""
    span = (end_ms or 0) - (start_ms or 0)
    return next((s for s in STEPS_MS if span <= s * POINTS), STEPS_MS[-1])


def _bucket(ts: Column, step: int) -> Column:
    return (F.floor(ts / step) * step).cast("bigint")


def _interval(ts: Column, step: int) -> Column:
    return _bucket(ts, step).alias("t_ms")


def lag_series(events: DataFrame, step: int) -> DataFrame:
    """Per (server, table, interval of record time): change events with a lag, and the largest."""
    lagged = with_lag(change_events(events)).where(F.col("lag_ms").isNotNull())
    return lagged.groupBy("server", "table", _interval(F.col("record_ts_ms"), step)).agg(
        F.count(F.lit(1)).alias("count"), F.max("lag_ms").alias("max_ms"))


@dataclass(frozen=True)
class FindingsSeries:
    """Per (rule, severity, interval of the record time of the finding's record): findings.
    Findings that name no record (per table or per capture line) are not in it. Computed in the
    one collect's findings aggregate (engine/collect.py): each finding row is expanded into the
    groupings (the counts' ``group``; this series), so the checks' findings are evaluated once; each
    finding carries its record's time (``record_ts_ms``, checks/findings.py): no join back to the records.
    With ``history_step`` (scan with ``--history``), a third grouping: per (rule, server, table,
    interval of ``history_step``), the part ``FINDINGS_PART`` (history/measure.py)."""

    step: int | None  # None: no series (watch's batches: only the history's grouping)
    history_step: int | None = None

    @property
    def parts(self) -> dict[str, list[str]]:
        """The parts this series adds to the collect, with their columns."""
        out = {SERIES_PART: list(SERIES_COLUMNS)} if self.step is not None else {}
        if self.history_step is not None:
            out[FINDINGS_PART] = list(FINDINGS_COLUMNS)
        return out

    def expand(self, ranked: DataFrame, group: list[str]) -> tuple[DataFrame, list[Column], Column]:
        """``ranked`` findings (with ``rn``), each once per grouping (the series only where its
        record's time is known); the grouping keys (the findings' counts per ``group``, then the
        series'); the part each group reports to."""
        counts, per_table = F.col(SET) == 0, F.col(SET) == 2
        sets = [F.lit(0), *([F.lit(1)] if self.step is not None else []), *([F.lit(2)] if self.history_step is not None else [])]
        both = (ranked.withColumn(SET, F.explode(F.array(*sets)))
                .where(counts | F.col("record_ts_ms").isNotNull())
                .withColumn("rn", F.when(counts, F.col("rn"))))  # the series lists no findings
        kept = {"rule": F.lit(True), "severity": ~per_table, "server": counts | per_table, "table": counts | per_table}
        keys = [F.col(SET), *[F.when(kept.get(c, counts), F.col(c)).alias(c) for c in group]]
        t_ms, part = F.lit(None).cast("bigint"), F.when(counts, F.lit("findings"))
        for where, step, name in ((F.col(SET) == 1, self.step, SERIES_PART), (per_table, self.history_step, FINDINGS_PART)):
            if step is not None:
                t_ms = F.when(where, _bucket(F.col("record_ts_ms"), step)).otherwise(t_ms)
                part = part.when(where, F.lit(name))
        return both, [*keys, t_ms.alias("t_ms")], part
