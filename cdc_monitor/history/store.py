"""Reading and writing the history through Spark (any Spark path: a folder, ``s3a://``, ``hdfs://``).

A batch is written in two steps: its rows (one append, partitioned by date and batch), then its
commit marker (``_commits/batch=<batch>``, one small JSON file). Readers read only batches with a
marker, so rows of a writer killed before its marker are never read (docs/history.md). Of rows
for the same (server, table, interval) in several committed batches (overlapping windows), a
reader keeps the one that covered most of the interval, the latest written among equals.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from typing import TYPE_CHECKING, Any

from pyspark.errors import AnalysisException
from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.history.layout import (
    COMMIT_READ_SCHEMA,
    COMMIT_SCHEMA,
    COMMITS,
    HOUR_MS,
    NAMES,
    READ_SCHEMA,
    ROW_SCHEMA,
    WEEK_MS,
    date_of,
    hour_of_week,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# seconds to wait between a batch's rows and its commit marker: for the crash test only
# (tests/test_history.py kills the writer there), never set in use
PAUSE_ENV = "CDC_MONITOR_HISTORY_TEST_PAUSE_S"


def _missing(err: AnalysisException) -> bool:
    return "PATH_NOT_FOUND" in str(err.getCondition() or "") or "Path does not exist" in str(err)


def committed(spark: SparkSession, location: str) -> dict[str, dict[str, Any]]:
    """batch -> its commit row (window_id, rows, committed_at_ms, dates); none for a new location. One job."""
    try:
        rows = (spark.read.schema(COMMIT_READ_SCHEMA).json(f"{location}/{COMMITS}")
                .where(F.col("batch").isNotNull()).collect())
    except AnalysisException as err:
        if _missing(err):
            return {}
        raise
    return {r["batch"]: r.asDict() for r in rows}


def committed_window(spark: SparkSession, location: str, window: str) -> str | None:
    """The batch that committed ``window``, if one did: one small job over that window's markers
    only (the listing does not grow with the history)."""
    try:
        rows = (spark.read.schema(COMMIT_READ_SCHEMA).option("basePath", f"{location}/{COMMITS}")
                .json(f"{location}/{COMMITS}/batch={window}-*").where(F.col("window_id") == window).collect())
    except AnalysisException as err:
        if _missing(err):
            return None
        raise
    return rows[0]["batch"] if rows else None


def lookback_ms(interval_ms: int, baseline_intervals: int) -> int:
    """How far back a baseline reads: enough weeks to hold ``baseline_intervals`` intervals at the
    same hour of the week, and one more."""
    per_hour = max(1, HOUR_MS // interval_ms)
    return (math.ceil(baseline_intervals / per_hour) + 1) * WEEK_MS


def read_history(spark: SparkSession, location: str, batches: dict[str, dict[str, Any]], servers: list[str],
                 start_ms: int, interval_ms: int, baseline_intervals: int, hours: set[int]) -> list[dict[str, Any]]:
    """The committed rows a baseline for a window whose first interval starts at ``start_ms`` can
    read: of ``servers``, before it, within the lookback, and either at one of the window's ``hours``
    of the week or among the last ``baseline_intervals`` intervals. Only the folders of committed
    batches (``batches``, as ``committed`` returns them) on the dates of the lookback are read, so
    nothing uncommitted is ever listed. One job (none without such folders)."""
    since = start_ms - lookback_ms(interval_ms, baseline_intervals)
    paths = sorted(f"{location}/date={d}/batch={b}" for b, c in batches.items() for d in c["dates"] or ()
                   if date_of(since) <= d <= date_of(start_ms))
    if not paths or not servers:
        return []
    recent = start_ms - baseline_intervals * interval_ms
    how = ((F.col("interval_start_ms") % WEEK_MS) / HOUR_MS).cast("int")
    frame = (spark.read.schema(READ_SCHEMA).option("basePath", location).parquet(*paths)
             .where(F.col("server").isin(servers))
             .where((F.col("interval_start_ms") >= since) & (F.col("interval_start_ms") < start_ms))
             .where((F.col("interval_start_ms") >= recent) | how.isin(sorted(hours))))
    return latest([r.asDict(recursive=True) for r in frame.collect()])


def latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (server, table, interval): the most covered, then the latest written."""
    best: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        k = (r["server"], r["table"], r["interval_start_ms"])
        b = best.get(k)
        if b is None or (r["covered_ms"], r["written_at_ms"]) > (b["covered_ms"], b["written_at_ms"]):
            best[k] = r
    return [best[k] for k in sorted(best)]


def write_batch(spark: SparkSession, location: str, window: str, rows: list[dict[str, Any]]) -> str:
    """The rows, then the commit marker: two jobs. Returns the batch's name."""
    batch = f"{window}-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    data = [(*({**r, "window_id": window, "written_at_ms": now}[n] for n in NAMES), date_of(r["interval_start_ms"]), batch)
            for r in rows]
    frame = spark.createDataFrame(data, f"{ROW_SCHEMA}, `date` string, batch string")
    frame.coalesce(1).write.mode("append").partitionBy("date", "batch").parquet(location)
    pause = float(os.environ.get(PAUSE_ENV) or 0)
    if pause:
        time.sleep(pause)
    dates = sorted({date_of(r["interval_start_ms"]) for r in rows})
    marker = spark.createDataFrame([(window, len(rows), int(time.time() * 1000), dates)], COMMIT_SCHEMA)
    marker.coalesce(1).write.mode("errorifexists").json(f"{location}/{COMMITS}/batch={batch}")
    return batch


def hours_of(starts: list[int]) -> set[int]:
    return {hour_of_week(t) for t in starts}


def read_committed(spark: SparkSession, location: str) -> DataFrame | None:
    """Every committed row, one per (server, table, interval) as ``latest`` keeps it: the history
    as a reader sees it (docs/history.md; None for a location with no commit yet)."""
    batches = committed(spark, location)
    paths = sorted(f"{location}/date={d}/batch={b}" for b, c in batches.items() for d in c["dates"] or ())
    if not paths:
        return None
    rows = spark.read.schema(READ_SCHEMA).option("basePath", location).parquet(*paths)
    order = Window.partitionBy("server", "table", "interval_start_ms").orderBy(
        F.col("covered_ms").desc(), F.col("written_at_ms").desc(), F.col("batch").desc())
    return rows.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")
