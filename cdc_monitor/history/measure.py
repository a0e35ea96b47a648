"""A window's measurements per (server, table, interval of record time): a part of the window's one
collect (engine/window.py, ``WholeWindow``), so a scan with a history runs no extra job to measure;
the findings per interval come from the same collect's findings aggregate (engine/series.py).
On the driver, ``window_rows`` turns both into the history's rows, every covered interval of every
table included (an interval without events is a row of zeros: silence is a measurement too)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import QUANTILES, decoded_data, nearest_rank, with_lag
from cdc_monitor.history.layout import HISTORY_OPS, intervals
from cdc_monitor.history.sketch import lag_bucket

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

MEASURE_PART = "history_measures"
PARTIAL_PART = "history_partials"  # watch: partial_frame's rows
# findings per (rule, server, table, interval): a grouping of the collect's findings aggregate (engine/series.py)
FINDINGS_PART, FINDINGS_COLUMNS = "history_findings", ("rule", "server", "table", "t_ms", "count")


def _lagged(events: DataFrame, interval_ms: int) -> DataFrame:
    """Decoded data events with a server, a table and a record time: per event its op, interval and
    lag (change events only: ``_lag``)."""
    data = with_lag(decoded_data(events)).where(
        F.col("server").isNotNull() & F.col("table").isNotNull() & F.col("record_ts_ms").isNotNull())
    return data.select("server", "table", "topic", "op",
                       (F.floor(F.col("record_ts_ms") / interval_ms) * interval_ms).cast("bigint").alias("interval_start_ms"),
                       F.when(F.col("change_event"), F.col("lag_ms")).alias("_lag"))


def _counts() -> list[Column]:
    return [F.min("topic").alias("topic"), F.count(F.lit(1)).alias("events"),
            *[F.count(F.when(F.col("op") == op, 1)).alias(f"events_{op}") for op in HISTORY_OPS]]


def measure_frame(events: DataFrame, interval_ms: int) -> DataFrame:
    """Per (server, table, interval): decoded data events by op and the lag percentiles (exact,
    nearest rank, as the lag table's) of change events. One aggregate, not a job of its own."""
    pct = [nearest_rank("_lag", p).alias(f"lag_{name}") for name, p in QUANTILES]
    return _lagged(events, interval_ms).groupBy("server", "table", "interval_start_ms").agg(
        *_counts(), F.count("_lag").alias("lag_count"), *pct, F.max("_lag").alias("lag_max_ms"))


def partial_frame(events: DataFrame, interval_ms: int) -> DataFrame:
    """``measure_frame``'s counts in a form that adds up across micro-batches (watch): per (server,
    table, interval, lag bucket: history/sketch.py; null for events without a lag) the events by
    op and the largest lag. One aggregate (watch/history.py merges the rows)."""
    return _lagged(events, interval_ms).groupBy("server", "table", "interval_start_ms", lag_bucket(F.col("_lag")).alias("bucket")
                                                ).agg(*_counts(), F.max("_lag").alias("lag_max_ms"))


def empty_row(server: str, table: str, topic: str | None, start: int, interval_ms: int, covered: int) -> dict[str, Any]:
    return {"server": server, "table": table, "topic": topic, "interval_start_ms": start, "interval_ms": interval_ms,
            "covered_ms": covered, "events": 0, **{f"events_{op}": 0 for op in HISTORY_OPS}, "lag_count": 0,
            "lag_p50_ms": None, "lag_p95_ms": None, "lag_p99_ms": None, "lag_max_ms": None, "findings": {}}


def window_rows(measures: Iterable[dict[str, Any]], findings: Iterable[dict[str, Any]], start_ms: int, end_ms: int,
                interval_ms: int, known: Iterable[tuple[str, str, str | None]] = ()) -> list[dict[str, Any]]:
    """The history's rows of one window: every (server, table) measured, and ``known`` ones (server,
    table, topic: tables of the window's servers the history holds), over every interval the window
    touches. Sorted by server, table, interval."""
    got = {(m["server"], m["table"], m["interval_start_ms"]): m for m in measures}
    tables = {(s, t): topic for s, t, topic in known}
    tables |= {(m["server"], m["table"]): m["topic"] for m in got.values()}
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for (server, table), topic in sorted(tables.items()):
        for start, covered in intervals(start_ms, end_ms, interval_ms):
            row = empty_row(server, table, topic, start, interval_ms, covered)
            m = got.get((server, table, start))
            if m is not None:
                row |= {k: v for k, v in m.items() if k in row and k not in ("findings", "covered_ms")}
            rows[(server, table, start)] = row
    for f in findings:
        row = rows.get((f["server"], f["table"], f["t_ms"]))
        if row is not None:
            row["findings"][f["rule"]] = row["findings"].get(f["rule"], 0) + int(f["count"])
    return [rows[k] for k in sorted(rows)]
