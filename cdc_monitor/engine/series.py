"""Time series of a window for the report's pictures and the JSON report: lag and findings per
interval of record time. Both are parts of the one collect (engine/collect.py): no job of their own.

The interval (``step_ms``) is the smallest of ``STEPS_MS`` that cuts the window into at most
``POINTS`` intervals, so a 10-minute capture is drawn per 10 s and a day per 30 min.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import change_events, with_lag

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

POINTS = 60
STEPS_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000, 21_600_000, 86_400_000)
LOCATION = ["topic", "partition", "offset"]


def step_ms(start_ms: int | None, end_ms: int | None) -> int:
    """The interval that cuts [start_ms, end_ms] into at most POINTS intervals."""
    span = (end_ms or 0) - (start_ms or 0)
    return next((s for s in STEPS_MS if span <= s * POINTS), STEPS_MS[-1])


def _interval(ts: Column, step: int) -> Column:
    return (F.floor(ts / step) * step).cast("bigint").alias("t_ms")


def lag_series(events: DataFrame, step: int) -> DataFrame:
    """Per (server, table, interval of record time): change events with a lag, and the largest."""
    lagged = with_lag(change_events(events)).where(F.col("lag_ms").isNotNull())
    return lagged.groupBy("server", "table", _interval(F.col("record_ts_ms"), step)).agg(
        F.count(F.lit(1)).alias("count"), F.max("lag_ms").alias("max_ms"))


def findings_series(findings: DataFrame, events: DataFrame, step: int) -> DataFrame:
    """Per (rule, severity, interval of the record time of the finding's record): findings.
    Findings that name no record (per table or per capture line) are not in it."""
    located = findings.where(F.col("offset").isNotNull()).select(*LOCATION, "rule", "severity")
    timed = located.join(events.select(*LOCATION, "record_ts_ms"), LOCATION)
    return timed.groupBy("rule", "severity", _interval(F.col("record_ts_ms"), step)).agg(F.count(F.lit(1)).alias("count"))
