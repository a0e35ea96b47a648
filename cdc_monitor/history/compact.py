"""``cdc-monitor history compact``: each date's committed batches as one (docs/history.md#compaction).

``watch --history`` commits a batch every interval (288 a day at 5 minutes), and every reader lists
and opens each batch's folder and marker. For each date before ``before`` with more than one
committed folder, compaction reads the date's committed rows, keeps one per (server, table,
interval) exactly as readers do (``store.keep_latest``; the kept rows as they are, ``window_id`` and
``written_at_ms`` included), writes them as one new batch ``compact-<date>-<attempt>`` and commits it
with a marker naming the folders it replaces and the window ids their batches held. From that
commit on, readers skip the replaced folders (``store.committed``). Only then are the replaced
folders deleted, and after them the markers of batches all of whose folders are replaced.

Killed at any step, readers see every row once: before the commit they read the old folders (the
new one has no marker); after it the new folder and not the replaced ones, deleted or not. The next
run finishes the deletions. A date with one committed folder is left as it is.
"""

from __future__ import annotations

import os
import signal
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.errors import InputError, UsageError
from cdc_monitor.history.layout import COMMITS, COMPACTED, NAMES, READ_SCHEMA, ROW_SCHEMA, folder
from cdc_monitor.history.store import committed, keep_latest, write_marker, write_rows

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import SparkSession

# fault injection for tests only: the process kills itself (SIGKILL) at this step of its first date
# (rows: compacted rows written, no marker; marker: committed, nothing deleted; folders: one
# replaced folder deleted; markers: one replaced marker deleted). tests/test_history_compact.py
CRASH_ENV = "CDC_MONITOR_HISTORY_TEST_COMPACT_CRASH_AT"
STEPS = ("rows", "marker", "folders", "markers")


@dataclass
class DateCompacted:
    date: str
    batch: str  # the new batch
    replaced: list[str]  # the folders (date=D/batch=B) it replaces
    rows_kept: int
    windows: int  # window ids it holds


@dataclass
class Compaction:
    before: str
    dates: list[DateCompacted] = field(default_factory=list)
    left: int = 0  # dates before ``before`` with one committed folder already
    folders_deleted: list[str] = field(default_factory=list)
    markers_deleted: list[str] = field(default_factory=list)


class Files:
    """The location's folders through pyarrow's file systems (local, s3a:// as s3://, hdfs://, gs://):
    compaction deletes what Spark's public API cannot."""

    def __init__(self, location: str) -> None:
        from pyarrow import fs

        self.location = location.rstrip("/")
        uri = "s3://" + self.location[len("s3a://"):] if self.location.startswith("s3a://") else self.location
        try:
            if "://" in uri:
                self.fs, self.root = fs.FileSystem.from_uri(uri)
            else:
                self.fs, self.root = fs.LocalFileSystem(), os.path.abspath(uri)
        except Exception as err:  # pyarrow: an unknown scheme, no libhdfs, no credentials
            raise UsageError(f"cannot open the history at {location} to delete replaced folders ({str(err).splitlines()[0]}): "
                             "give a local path, s3a://, s3://, gs:// or hdfs:// location") from None
        self.info = fs.FileType

    def is_dir(self, rel: str) -> bool:
        return self.fs.get_file_info(f"{self.root}/{rel}").type == self.info.Directory

    def delete(self, rel: str) -> bool:
        """Delete a folder; False when it is gone already."""
        try:
            self.fs.delete_dir(f"{self.root}/{rel}")
        except FileNotFoundError:
            return False
        return True


def parse_before(text: str | None, today: str) -> str:
    """``--before`` as YYYY-MM-DD (default: yesterday, UTC: ``today`` minus a day)."""
    import datetime as dt

    if text is None:
        return (dt.date.fromisoformat(today) - dt.timedelta(days=1)).isoformat()
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise UsageError(f"--before {text!r} is not a date: give YYYY-MM-DD (dates before it are compacted; default yesterday, UTC)")


def open_history(location: str) -> Files:
    """The location's files, checked before Spark starts: it must hold a history (a _commits folder)."""
    files = Files(location)
    if not files.is_dir(COMMITS):
        raise InputError(f"no history at {location} (no {COMMITS} folder): give the location scan/watch --history writes to")
    return files


def compact(spark: SparkSession, files: Files, before: str, log: Callable[[str], None] = lambda _: None) -> Compaction:
    """Compact every date before ``before`` with more than one committed folder, then delete what
    committed compactions replaced (this run's and any an earlier, killed run left)."""
    location, out = files.location, Compaction(before)
    batches = committed(spark, location)
    by_date: dict[str, list[str]] = {}
    for b, c in batches.items():
        for d in c["dates"]:
            by_date.setdefault(d, []).append(b)
    for date in sorted(d for d in by_date if d < before):
        if len(by_date[date]) < 2:
            out.left += 1
            continue
        done = compact_date(spark, location, date, sorted(by_date[date]), batches)
        log(f"{date}: {len(by_date[date])} batch folder(s) -> batch {done.batch}: {done.rows_kept} row(s) kept, "
            f"{done.windows} window id(s)")
        out.dates.append(done)
    if out.dates:
        batches = committed(spark, location)
    delete_replaced(files, batches, out)
    log(f"deleted {len(out.folders_deleted)} replaced folder(s) and {len(out.markers_deleted)} marker(s); "
        f"{len(out.dates)} date(s) compacted, {out.left} already one batch")
    return out


def compact_date(spark: SparkSession, location: str, date: str, live: list[str],
                 batches: dict[str, dict[str, Any]]) -> DateCompacted:
    """The date's committed folders ``live`` as one committed batch (three jobs: the rows, their
    count, the marker)."""
    paths = [f"{location}/{folder(date, b)}" for b in live]
    rows = spark.read.schema(READ_SCHEMA).option("basePath", location).parquet(*paths)
    kept = keep_latest(rows).select(*(F.col(n) for n in NAMES))
    batch = f"{COMPACTED}{date}-{uuid.uuid4().hex[:8]}"
    write_rows(kept.repartition(1).sortWithinPartitions("server", "table", "interval_start_ms"), location, date, batch)
    counted = spark.read.schema(ROW_SCHEMA).parquet(f"{location}/{folder(date, batch)}").count()
    _crash("rows")
    replaces = {folder(date, b) for b in live}
    # a replaced compaction's entries still needed: folders of batches whose markers remain
    replaces |= {f for b in live for f in batches[b]["replaces"] or () if f.split("/batch=", 1)[1] in batches}
    windows = {batches[b]["window_id"] for b in live} | {w for b in live for w in batches[b]["windows"] or ()}
    windows -= {f"{COMPACTED}{date}"}
    write_marker(spark, location, batch, {"window_id": f"{COMPACTED}{date}", "rows": counted, "dates": [date],
                                          "replaces": sorted(replaces), "windows": sorted(windows)})
    _crash("marker")
    return DateCompacted(date, batch, sorted(replaces), counted, len(windows))


def delete_replaced(files: Files, batches: dict[str, dict[str, Any]], out: Compaction) -> None:
    """Every replaced folder of a batch whose marker remains, then the markers of batches all of whose
    folders are replaced (a marker goes last: until then its folders are known to be replaced)."""
    for b, c in sorted(batches.items()):
        for d in c["replaced"]:
            if files.delete(folder(d, b)):
                out.folders_deleted.append(folder(d, b))
                _crash("folders")
    for b, c in sorted(batches.items()):
        if c["replaced"] and not c["dates"]:
            files.delete(f"{COMMITS}/batch={b}")
            out.markers_deleted.append(b)
            _crash("markers")


def _crash(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
