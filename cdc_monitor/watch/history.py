"""``watch --history``: the history's rows (history/layout.py, the same contract as ``scan``'s),
measured across micro-batches and written when an interval of record time is over.

A micro-batch is shorter than an interval, so each batch adds its new records' counts into the
interval they fall in: events by op, the largest lag, the lags as mergeable bucket counts
(history/sketch.py) and findings by rule, all kept in the driver's state (``state.json``, saved
with the batch id: a batch Spark re-runs is not counted twice).

An interval is over for a server once every partition of the server that delivered records in
the batch has passed its end by ``lateness`` (the server's *watermark*: the lowest of those
partitions' newest record times, never going back). A partition that delivered nothing has no
backlog and holds nothing back, so a quiet table or a table a per-trigger cap reads ahead does not
stall the history, and a partition still catching up does. When an interval is over, every table
the watch has seen on the server gets its row (zeros for a silent one: silence is a measurement),
written as one committed batch through history/store.py.

Late records (an interval already written) are added to it and the interval is written again
(same ``covered_ms``, newer ``written_at_ms``: the row readers keep) for ``RETAIN`` intervals
after it closed; later than that they are counted (``cdc_history_late_events_total``), not
measured. A batch's id in the history is a hash of its rows, so a batch Spark re-runs after a
crash between the history's commit and the driver's state finds its rows committed and writes
nothing again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.lag import QUANTILES
from cdc_monitor.history import sketch
from cdc_monitor.history.layout import HISTORY_OPS, date_of
from cdc_monitor.history.measure import empty_row
from cdc_monitor.history.store import committed_window, write_batch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RETAIN = 12  # intervals after closing that a late record still corrects (an hour of 5-minute intervals)
COUNTED = ("events", *(f"events_{op}" for op in HISTORY_OPS))


@dataclass
class WatchHistory:
    """The history's part of watch's driver state (JSON as it is)."""

    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)  # "server|table|start" -> its counts
    tables: dict[str, dict[str, str | None]] = field(default_factory=dict)  # server -> table -> topic
    first_ms: dict[str, int] = field(default_factory=dict)  # server -> the oldest record time measured
    watermark: dict[str, int] = field(default_factory=dict)  # server -> record time its partitions have passed
    closed_until: dict[str, int] = field(default_factory=dict)  # server -> the end of its last interval written
    dirty: list[str] = field(default_factory=list)  # written intervals with late records since
    step: int | None = None  # the intervals' length

    def kept_for(self, step: int | None) -> WatchHistory:
        """This history, for a batch with intervals of ``step`` (None: no history). A watch run
        without a history, or with another interval, starts it again: its open intervals are
        dropped, never written with the time it did not measure counted as silence."""
        return self if step is not None and step == self.step else WatchHistory(step=step)


@dataclass
class Written:
    rows: dict[str, int] = field(default_factory=dict)  # server -> rows this batch wrote (none: nothing closed, or committed)
    batch: str | None = None


def _key(server: str, table: str, start: int) -> str:
    return f"{server}|{table}|{start}"


def _blank(topic: str | None) -> dict[str, Any]:
    return {"topic": topic, **dict.fromkeys(COUNTED, 0), "lag_max_ms": None, "lags": {}, "findings": {}}


def absorb(hist: WatchHistory, partials: list[dict[str, Any]], findings: list[dict[str, Any]],
           census: list[dict[str, Any]], step: int) -> dict[str, int]:
    """Add one batch: ``partials`` (history/measure.py ``partial_frame``'s rows), ``findings`` (per
    rule, server, table and interval ``t_ms``, of the new records), ``census`` (the batch's census
    rows of new records: topic, partition, server, min/max record time). Returns the events too
    late to measure, per server."""
    late: dict[str, int] = {}
    for r in partials:
        server, table, start = r["server"], r["table"], int(r["interval_start_ms"])
        if _forgotten(hist, server, start, step):
            late[server] = late.get(server, 0) + int(r["events"])
            continue
        hist.tables.setdefault(server, {}).setdefault(table, r["topic"])
        got = hist.intervals.setdefault(_key(server, table, start), _blank(r["topic"]))
        for c in COUNTED:
            got[c] += int(r[c])
        if r["lag_max_ms"] is not None:
            top = int(r["lag_max_ms"])
            got["lag_max_ms"] = top if got["lag_max_ms"] is None else max(top, got["lag_max_ms"])
        if r["bucket"] is not None:
            sketch.merge(got["lags"], {str(r["bucket"]): int(r["events"])})  # (a bucket's events all have a lag)
        _touched(hist, server, start, table)
    for f in findings:
        if f["server"] is None or f["table"] is None or f["t_ms"] is None:
            continue
        start = int(f["t_ms"])
        if _forgotten(hist, f["server"], start, step):
            continue
        got = hist.intervals.setdefault(_key(f["server"], f["table"], start), _blank(None))
        got["findings"][f["rule"]] = got["findings"].get(f["rule"], 0) + int(f["count"])
        _touched(hist, f["server"], start, f["table"])
    _advance(hist, census)
    return late


def _forgotten(hist: WatchHistory, server: str, start: int, step: int) -> bool:
    """The interval was written more than ``RETAIN`` intervals ago: its counts are gone."""
    return start < _forget_before(hist, server, step)


def _touched(hist: WatchHistory, server: str, start: int, table: str) -> None:
    """Note an interval already written (it is written again)."""
    until = hist.closed_until.get(server)
    if until is not None and start < until:
        key = _key(server, table, start)
        if key not in hist.dirty:
            hist.dirty.append(key)


def _advance(hist: WatchHistory, census: list[dict[str, Any]]) -> None:
    """The servers' oldest record times and watermarks, from the batch's new records."""
    newest: dict[tuple[str, str, int], int] = {}
    for r in census:
        server = r["server"]
        if server is None or r["max_ts_ms"] is None:
            continue
        if r["min_ts_ms"] is not None:
            hist.first_ms[server] = min(hist.first_ms.get(server, r["min_ts_ms"]), int(r["min_ts_ms"]))
        k = (server, r["topic"], r["partition"])
        newest[k] = max(newest.get(k, r["max_ts_ms"]), int(r["max_ts_ms"]))
    lowest: dict[str, int] = {}
    for (server, _, _), ts in newest.items():
        lowest[server] = min(lowest.get(server, ts), ts)
    for server, ts in lowest.items():
        hist.watermark[server] = max(hist.watermark.get(server, ts), ts)


def close(hist: WatchHistory, step: int, lateness_ms: int) -> list[dict[str, Any]]:
    """The rows of every interval now over (every table seen on its server) and of written
    intervals with late records; forgets intervals past their retention."""
    rows = []
    for server, mark in sorted(hist.watermark.items()):
        if server not in hist.first_ms:
            continue
        start = hist.closed_until.get(server, hist.first_ms[server] // step * step)
        while start + step <= mark - lateness_ms:
            rows += [_row(hist, server, table, start, step) for table in sorted(hist.tables.get(server, {}))]
            start += step
        hist.closed_until[server] = start  # (never back: start began there)
    for key in sorted(hist.dirty):
        server, table, start = key.rsplit("|", 2)
        rows.append(_row(hist, server, table, int(start), step))
    hist.dirty = []
    for key in [k for k in hist.intervals if int(k.rsplit("|", 1)[1]) < _forget_before(hist, k.split("|", 1)[0], step)]:
        del hist.intervals[key]
    return rows


def _forget_before(hist: WatchHistory, server: str, step: int) -> int:
    until = hist.closed_until.get(server)
    return until - RETAIN * step if until is not None else -(2**62)


def _row(hist: WatchHistory, server: str, table: str, start: int, step: int) -> dict[str, Any]:
    got = hist.intervals.get(_key(server, table, start)) or _blank(None)
    covered = step - min(step, max(0, hist.first_ms[server] - start))
    row = empty_row(server, table, hist.tables.get(server, {}).get(table) or got["topic"], start, step, covered)
    row |= {c: got[c] for c in COUNTED}
    lags = got["lags"]
    if lags:
        top = got["lag_max_ms"]
        row |= {"lag_count": sum(lags.values()), "lag_max_ms": top,
                **{f"lag_{name}": sketch.percentile(lags, q, top) for name, q in QUANTILES}}
    row["findings"] = dict(sorted(got["findings"].items()))
    return row


def rows_id(rows: list[dict[str, Any]]) -> str:
    """The same rows have the same id (a batch Spark re-runs closes the same intervals again)."""
    text = json.dumps(rows, sort_keys=True, default=str)
    return "watch-" + hashlib.sha256(text.encode()).hexdigest()[:20]


def record(spark: SparkSession, location: str, hist: WatchHistory, step: int, lateness_ms: int) -> Written:
    """Close what is over and write it as one committed batch (three small jobs: is it committed,
    the rows, the marker; none when nothing closed)."""
    rows = close(hist, step, lateness_ms)
    if not rows:
        return Written()
    wid = rows_id(rows)
    done = committed_window(spark, location, wid, {date_of(r["interval_start_ms"]) for r in rows})
    batch = done if done is not None else write_batch(spark, location, wid, rows)
    per: dict[str, int] = {}
    for r in rows if done is None else ():
        per[r["server"]] = per.get(r["server"], 0) + 1
    return Written(per, batch)
