"""What compaction saves readers: a history as ``watch --history`` leaves it (one committed batch per
5-minute interval, every table's row in it: 288 batches a day), read before and after
``cdc-monitor history compact``.

``python -m benchmarks.history_compact [--days 7] [--tables 20] [--runs 3]``: builds the history
(the rows in one Spark write partitioned by date and batch, the folders ``write_batch`` writes, and
one commit marker per batch written as Spark writes it, a JSON line: building 2,016 batches through
``write_batch`` itself would take the benchmark's whole budget), then times, median of ``--runs``:
``read_committed`` (every committed row, counted), a scan's history read (``committed``, then
``read_history`` for a window right after the last day) and watch's ``committed_window`` (a window
not committed: watch's usual case), compacts everything, and times them again. Run it alone on the
machine (``flock -x``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

STEP = 300_000
START = 1_763_337_600_000  # Monday 2025-11-17 00:00 UTC


def build(spark, location: str, days: int, tables: int) -> int:
    from cdc_monitor.history.layout import COMMITS, NAMES, ROW_SCHEMA, date_of
    from cdc_monitor.history.measure import empty_row

    data, now = [], int(time.time() * 1000)
    for i in range(days * 86_400_000 // STEP):
        t = START + i * STEP
        wid = f"watch-{i:020x}"
        for k in range(tables):
            r = empty_row("app1", f"shop.t{k:02d}", f"app1.shop.t{k:02d}", t, STEP, STEP)
            r |= {"events": 100 + k, "events_c": 100 + k, "window_id": wid, "written_at_ms": now}
            data.append((*(r[n] for n in NAMES), date_of(t), f"{wid}-00000000"))
    frame = spark.createDataFrame(data, f"{ROW_SCHEMA}, `date` string, batch string")
    frame.repartition(4, "date").write.partitionBy("date", "batch").parquet(location)
    batches = days * 86_400_000 // STEP
    for i in range(batches):
        t = START + i * STEP
        marker = Path(location) / COMMITS / f"batch=watch-{i:020x}-00000000"
        marker.mkdir(parents=True)
        (marker / "part-00000.json").write_text(json.dumps(
            {"window_id": f"watch-{i:020x}", "rows": tables, "committed_at_ms": now, "dates": [date_of(t)]}) + "\n")
    return batches


def timed(fn, runs: int) -> tuple[float, object]:
    seconds, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        seconds.append(time.perf_counter() - t0)
    return round(statistics.median(seconds), 2), out


def measure_reads(spark, location: str, days: int, runs: int) -> dict:
    from cdc_monitor.history.store import committed, committed_window, read_committed, read_history

    start = START + days * 86_400_000
    read_all, rows = timed(lambda: read_committed(spark, location).count(), runs)
    list_commits, batches = timed(lambda: committed(spark, location), runs)
    read_past, past = timed(lambda: read_history(spark, location, committed(spark, location), ["app1"], start, STEP, 24,
                                                 {0, 1}), runs)
    find, found = timed(lambda: committed_window(spark, location, "watch-not-committed"), runs)
    assert found is None
    return {"read_committed_s": read_all, "rows": rows, "committed_s": list_commits, "markers": len(batches),
            "committed_and_read_history_s": read_past, "history_rows": len(past), "committed_window_s": find,
            "folders": sum(1 for _ in Path(location).glob("date=*/batch=*"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from cdc_monitor.history.compact import compact, open_history
    from cdc_monitor.history.layout import date_of
    from cdc_monitor.runtime.session import get_spark

    spark = get_spark(None, {})
    with tempfile.TemporaryDirectory() as tmp:
        location = f"{tmp}/history"
        t0 = time.perf_counter()
        batches = build(spark, location, args.days, args.tables)
        print(f"built {batches} batches of {args.tables} rows over {args.days} days in {time.perf_counter() - t0:.1f}s", flush=True)
        before = measure_reads(spark, location, args.days, args.runs)
        print("before:", json.dumps(before), flush=True)
        t0 = time.perf_counter()
        done = compact(spark, open_history(location), date_of(START + args.days * 86_400_000))
        took = time.perf_counter() - t0
        print(f"compact: {len(done.dates)} dates, {len(done.folders_deleted)} folders and {len(done.markers_deleted)} "
              f"markers deleted in {took:.1f}s", flush=True)
        after = measure_reads(spark, location, args.days, args.runs)
        print("after:", json.dumps(after), flush=True)
        assert after["rows"] == before["rows"] and after["history_rows"] == before["history_rows"]
        for key in ("read_committed_s", "committed_s", "committed_and_read_history_s", "committed_window_s"):
            print(f"{key:32} {before[key]:8.2f} {after[key]:8.2f}  {before[key] / max(after[key], 0.01):5.1f}x")
    spark.stop()


if __name__ == "__main__":
    main()
