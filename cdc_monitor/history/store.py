"""Reading and writing the history through Spark (any Spark path: a folder, ``s3a://``, ``hdfs://``).

A batch is written in two steps: its rows (one Spark write per date, straight into that date's
folder ``date=D/batch=B``, so concurrent writers never share a staging folder), then its commit
marker (``_commits/batch=<batch>``, one small JSON file). Readers read only the folders of batches
with a marker that no committed compaction replaced (compact.py), so rows of a writer killed before
its marker are never read (docs/history.md). Of rows for the same (server, table, interval) in
several committed batches (overlapping windows), a reader keeps the one that covered most of the
interval, the latest written among equals.
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
    COMMIT_COLUMNS,
    COMMIT_READ_SCHEMA,
    COMMIT_SCHEMA,
    COMMITS,
    COMPACTED,
    HOUR_MS,
    NAMES,
    READ_SCHEMA,
    ROW_SCHEMA,
    WEEK_MS,
    date_of,
    folder,
    hour_of_week,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyspark.sql import DataFrame, SparkSession

# seconds to wait between a batch's rows and its commit marker: for the crash test only
# (tests/test_history.py kills the writer there), never set in use
PAUSE_ENV = "CDC_MONITOR_HISTORY_TEST_PAUSE_S"
# no _SUCCESS file in each folder (readers skip it anyway; one object less per batch on S3)
NO_SUCCESS_FILE = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}


def _missing(err: AnalysisException) -> bool:
    return "PATH_NOT_FOUND" in str(err.getCondition() or "") or "Path does not exist" in str(err)


def committed(spark: SparkSession, location: str) -> dict[str, dict[str, Any]]:
    """batch -> its commit row (window_id, rows, committed_at_ms, dates, replaces, windows); none for
    a new location. ``dates`` holds only the batch's folders that no committed compaction replaces
    (the folders to read), ``replaced`` the others. One job."""
    try:
        rows = (spark.read.schema(COMMIT_READ_SCHEMA).json(f"{location}/{COMMITS}")
                .where(F.col("batch").isNotNull()).collect())
    except AnalysisException as err:
        if _missing(err):
            return {}
        raise
    out = {r["batch"]: r.asDict() for r in rows}
    gone = {f for c in out.values() for f in c["replaces"] or ()}
    for b, c in out.items():
        wrote = c["dates"] or []
        c["dates"] = [d for d in wrote if folder(d, b) not in gone]
        c["replaced"] = [d for d in wrote if folder(d, b) in gone]
    return out


def holds_window(commit: dict[str, Any], window: str) -> bool:
    """A committed batch holds ``window``: its own, or one a compaction absorbed."""
    return commit["window_id"] == window or window in (commit.get("windows") or ())


def recorded_batch(batches: dict[str, dict[str, Any]], window: str) -> str | None:
    """Of ``committed``'s batches, the one holding ``window`` (its own marker first): a scan's
    "already recorded" check."""
    held = sorted((c["window_id"] != window, b) for b, c in batches.items() if holds_window(c, window))
    return held[0][1] if held else None


def committed_window(spark: SparkSession, location: str, window: str, dates: Iterable[str] | None = None) -> str | None:
    """The batch that committed ``window``, if one did: one small job over that window's markers and
    the compacted ones (a JSON line per compacted date; only those of ``dates``, the dates of the
    window's rows, when given), so the listing does not grow with the batches."""
    compacted = ",".join(f"{COMPACTED}{d}-*" for d in sorted(set(dates))) if dates is not None else f"{COMPACTED}*"
    try:
        rows = (spark.read.schema(COMMIT_READ_SCHEMA).option("basePath", f"{location}/{COMMITS}")
                .json(f"{location}/{COMMITS}/batch={{{window}-*{',' if compacted else ''}{compacted}}}").collect())
    except AnalysisException as err:
        if _missing(err):
            return None
        raise
    held = sorted((r["window_id"] != window, r["batch"]) for r in rows if holds_window(r.asDict(), window))
    return held[0][1] if held else None


def paths_of(location: str, batches: dict[str, dict[str, Any]], dates: tuple[str, str] | None = None) -> list[str]:
    """The folders to read of ``batches`` (as ``committed`` returns them), within ``dates`` (first, last)."""
    return sorted(f"{location}/{folder(d, b)}" for b, c in batches.items() for d in c["dates"] or ()
                  if dates is None or dates[0] <= d <= dates[1])


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
    paths = paths_of(location, batches, (date_of(since), date_of(start_ms)))
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
    """The rows (one job per date), then the commit marker (one job). Returns the batch's name."""
    batch = f"{window}-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    by_date: dict[str, list[tuple]] = {}
    for r in rows:
        by_date.setdefault(date_of(r["interval_start_ms"]), []).append(
            tuple({**r, "window_id": window, "written_at_ms": now}[n] for n in NAMES))
    for date, data in sorted(by_date.items()):
        write_rows(spark.createDataFrame(data, ROW_SCHEMA).coalesce(1), location, date, batch)
    pause = float(os.environ.get(PAUSE_ENV) or 0)
    if pause:
        time.sleep(pause)
    write_marker(spark, location, batch, {"window_id": window, "rows": len(rows), "dates": sorted(by_date)})
    return batch


def write_rows(frame: DataFrame, location: str, date: str, batch: str) -> None:
    """A batch's rows of one date (``ROW_SCHEMA``, no partition columns: the folder names them), into
    the batch's own folder: Spark stages the write in that folder, apart from every other writer's."""
    frame.write.mode("errorifexists").options(**NO_SUCCESS_FILE).parquet(f"{location}/{folder(date, batch)}")


def write_marker(spark: SparkSession, location: str, batch: str, commit: dict[str, Any]) -> None:
    """Commit ``batch``: its marker, one small JSON file (``commit``: COMMIT_COLUMNS, committed_at_ms now)."""
    row = {"rows": 0, "dates": [], "replaces": None, "windows": None, **commit, "committed_at_ms": int(time.time() * 1000)}
    marker = spark.createDataFrame([tuple(row[n] for n, _ in COMMIT_COLUMNS)], COMMIT_SCHEMA)
    marker.coalesce(1).write.mode("errorifexists").options(**NO_SUCCESS_FILE).json(f"{location}/{COMMITS}/batch={batch}")


def hours_of(starts: list[int]) -> set[int]:
    return {hour_of_week(t) for t in starts}


def read_committed(spark: SparkSession, location: str) -> DataFrame | None:
    """Every committed row, one per (server, table, interval) as ``latest`` keeps it: the history
    as a reader sees it (docs/history.md; None for a location with no commit yet)."""
    paths = paths_of(location, committed(spark, location))
    if not paths:
        return None
    return keep_latest(spark.read.schema(READ_SCHEMA).option("basePath", location).parquet(*paths))


def keep_latest(rows: DataFrame) -> DataFrame:
    """One row per (server, table, interval): the most covered, then the latest written (then the
    last batch by name, for rows written the same millisecond)."""
    order = Window.partitionBy("server", "table", "interval_start_ms").orderBy(
        F.col("covered_ms").desc(), F.col("written_at_ms").desc(), F.col("batch").desc())
    return rows.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")
