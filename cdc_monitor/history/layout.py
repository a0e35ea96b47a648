"""The history dataset's layout (docs/history.md is its public description; change both together).

::

    LOCATION/
      date=YYYY-MM-DD/batch=<window id>-<attempt>/part-*.parquet   rows (one Spark write per date folder)
      _commits/batch=<window id>-<attempt>/part-*.json             one row per committed batch

A batch is the rows one scan writes for its window. It is readable once its commit marker exists;
the marker is written after every data file is in place, so a writer killed at any moment leaves
either a committed batch or files no reader reads. A window's id is a hash of its servers, its
bounds and the interval: scanning the same window again finds it committed and writes nothing.
Compaction (compact.py) writes a date's kept rows as one batch whose marker names the folders it
replaces and the windows it absorbed; readers skip replaced folders.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable

from cdc_monitor.checks.baseline import DAY_MS, HOUR_MS, VOLUME_OPS, WEEK_MS, hour_of_week
from cdc_monitor.vocabulary import GENERIC_OPS

HISTORY_OPS = GENERIC_OPS  # c, u, d, r, t: one column of events each
COMMITS = "_commits"
__all__ = ["DAY_MS", "HOUR_MS", "VOLUME_OPS", "WEEK_MS", "hour_of_week"]  # (the baseline's, re-exported)

# the row of one (server, table, interval): name, Spark type
COLUMNS: tuple[tuple[str, str], ...] = (
    ("server", "string"),
    ("table", "string"),
    ("topic", "string"),
    ("interval_start_ms", "bigint"),  # record time (UTC), a multiple of interval_ms
    ("interval_ms", "bigint"),
    ("covered_ms", "bigint"),  # how much of the interval the window covered (the first and last are partial)
    ("events", "bigint"),  # decoded data events, every op
    *((f"events_{op}", "bigint") for op in HISTORY_OPS),
    ("lag_count", "bigint"),  # change events with a lag
    ("lag_p50_ms", "bigint"),
    ("lag_p95_ms", "bigint"),
    ("lag_p99_ms", "bigint"),
    ("lag_max_ms", "bigint"),
    ("findings", "map<string,bigint>"),  # rule -> findings on the interval's records (anomalies included)
    ("window_id", "string"),
    ("written_at_ms", "bigint"),
)
PARTITIONS: tuple[tuple[str, str], ...] = (("date", "string"), ("batch", "string"))
# a commit marker's row (its folder, ``batch=...``, names the batch)
COMMIT_COLUMNS: tuple[tuple[str, str], ...] = (("window_id", "string"), ("rows", "bigint"), ("committed_at_ms", "bigint"),
                                               ("dates", "array<string>"),  # the date= folders the batch wrote
                                               # compaction's: the "date=D/batch=B" folders this batch replaces
                                               # (readers skip them), and the window ids their batches held
                                               ("replaces", "array<string>"), ("windows", "array<string>"))
COMPACTED = "compact-"  # a compacted batch's window id: compact-<date>
NAMES = tuple(n for n, _ in COLUMNS)


def ddl(columns: Iterable[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in columns)


ROW_SCHEMA = ddl(COLUMNS)
READ_SCHEMA = ddl((*COLUMNS, *PARTITIONS))
COMMIT_SCHEMA = ddl(COMMIT_COLUMNS)
COMMIT_READ_SCHEMA = ddl((*COMMIT_COLUMNS, ("batch", "string")))


def window_id(servers: Iterable[str], start_ms: int, end_ms: int, interval_ms: int) -> str:
    """The same window scanned again has the same id (servers sorted, bounds of record time)."""
    text = "|".join([",".join(sorted(servers)), str(start_ms), str(end_ms), str(interval_ms)])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def folder(date: str, batch: str) -> str:
    """A batch's folder on a date, relative to the location (a marker's ``replaces`` entry)."""
    return f"date={date}/batch={batch}"


def date_of(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms // 1000))


def intervals(start_ms: int, end_ms: int, interval_ms: int) -> list[tuple[int, int]]:
    """The intervals [t, t + interval) the window [start_ms, end_ms] touches, each with how much of it
    the window covers."""
    out = []
    t = start_ms // interval_ms * interval_ms
    while t <= end_ms:
        out.append((t, min(t + interval_ms, end_ms + 1) - max(t, start_ms)))
        t += interval_ms
    return out

