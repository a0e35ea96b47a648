"""watch's history on hand-made batches: the lag sketch against exact percentiles, intervals
closed by the servers' watermarks, silent tables as rows of zeros, late records re-written or
counted, a batch's id fixed by its rows."""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import functions as F

from cdc_monitor.history.sketch import EXACT_MS, bucket_value, lag_bucket, merge, percentile
from cdc_monitor.watch.history import RETAIN, WatchHistory, absorb, close, rows_id

STEP = 60_000
T0 = 1_767_225_600_000  # an interval boundary
OPS = ("c", "u", "d", "r", "t")


def _exact(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p * len(ordered))) - 1]


def _buckets(spark, sets: dict[str, list[int]]) -> dict[str, dict[str, int]]:
    """Each named set of lags as bucket counts, bucketed by Spark (one job)."""
    frame = spark.createDataFrame([(name, v) for name, values in sets.items() for v in values], "name string, lag bigint")
    out: dict[str, dict[str, int]] = {name: {} for name in sets}
    for r in frame.groupBy("name", lag_bucket(F.col("lag")).alias("b")).agg(F.count("*").alias("n")).collect():
        out[r["name"]][str(r["b"])] = r["n"]
    return out


def test_the_sketch_reads_percentiles_within_one_percent(spark):
    rng = random.Random(7)
    values = [int(rng.lognormvariate(6, 1.5)) for _ in range(4_000)] + [0, -3, -2_500, 1, EXACT_MS, EXACT_MS + 1]
    half = len(values) // 2
    got = _buckets(spark, {"all": values, "small": [0, 7, -7, EXACT_MS], "first": values[:half], "second": values[half:]})
    counts = got["all"]
    assert sum(counts.values()) == len(values) and len(counts) < 1_000
    for p in (0.01, 0.5, 0.95, 0.99, 1.0):
        exact, read = _exact(values, p), percentile(counts, p, top=max(values))
        assert abs(read - exact) <= max(1, 0.01 * abs(exact)), (p, read, exact)
    # small lags are exact, and two halves merged are the whole
    assert {bucket_value(int(b)) for b in got["small"]} == {0, 7, -7, EXACT_MS}
    assert merge(got["first"], got["second"]) == counts
    assert percentile({}, 0.5) is None


def _partial(table: str, start: int, lags: dict[int, int] | None = None, ops: str = "c", topic: str | None = None,
             server: str = "s1") -> list[dict]:
    """partial_frame's rows for events of one table and interval: ``lags`` bucket -> events."""
    rows = []
    for bucket, n in (lags or {None: 1}).items():
        row = {"server": server, "table": table, "interval_start_ms": start, "bucket": bucket,
               "topic": topic or f"{server}.{table}", "events": n, "lag_max_ms": bucket and bucket_value(bucket)}
        rows.append(row | {f"events_{op}": (n if op in ops else 0) for op in OPS})
    return rows


def _census(*partitions: tuple[str, int, int, int], server: str = "s1") -> list[dict]:
    """(topic, partition, oldest, newest record time) of new records."""
    return [{"server": server, "topic": t, "partition": p, "min_ts_ms": lo, "max_ts_ms": hi} for t, p, lo, hi in partitions]


def test_an_interval_is_written_once_every_active_partition_has_passed_it():
    hist = WatchHistory()
    # a partition still catching up (a) holds the server back; one read ahead (b) does not
    absorb(hist, _partial("a", T0, {50: 3}) + _partial("b", T0, {60: 1}), [],
           _census(("s1.a", 0, T0 + 10_000, T0 + 70_000), ("s1.b", 0, T0 + 20_000, T0 + 5 * STEP)), STEP)
    assert hist.watermark == {"s1": T0 + 70_000} and hist.first_ms == {"s1": T0 + 10_000}
    rows = close(hist, STEP, lateness_ms=5_000)
    assert [(r["table"], r["interval_start_ms"]) for r in rows] == [("a", T0), ("b", T0)]
    assert rows[0]["covered_ms"] == STEP - 10_000  # the first record measured was 10 s in
    assert (rows[0]["events"], rows[0]["lag_count"], rows[0]["lag_p50_ms"], rows[0]["lag_max_ms"]) == (3, 3, 50, 50)
    assert close(hist, STEP, 5_000) == []  # nothing more is over
    # a partition that delivered nothing holds nothing back; a silent table is a row of zeros
    absorb(hist, _partial("b", T0 + 3 * STEP, ops="u"), [{"rule": "lag_spike", "server": "s1", "table": "b",
                                                          "t_ms": T0 + 3 * STEP, "count": 2}],
           _census(("s1.b", 0, T0 + 3 * STEP, T0 + 4 * STEP + 5_000)), STEP)
    rows = close(hist, STEP, 5_000)
    assert [(r["table"], r["interval_start_ms"]) for r in rows] == [
        (t, T0 + i * STEP) for i in (1, 2, 3) for t in ("a", "b")]
    assert all(r["covered_ms"] == STEP for r in rows)
    last = {r["table"]: r for r in rows if r["interval_start_ms"] == T0 + 3 * STEP}
    assert (last["a"]["events"], last["a"]["lag_p99_ms"], last["a"]["findings"]) == (0, None, {})
    assert (last["b"]["events_u"], last["b"]["lag_count"], last["b"]["findings"]) == (1, 0, {"lag_spike": 2})
    assert hist.closed_until == {"s1": T0 + 4 * STEP}


def test_late_records_rewrite_their_interval_then_are_counted():
    hist = WatchHistory()
    absorb(hist, _partial("a", T0, {40: 2}), [], _census(("s1.a", 0, T0, T0 + 3 * STEP)), STEP)
    first = close(hist, STEP, 0)
    assert len(first) == 3
    # a late record of the first interval: the interval is written again, whole
    late = absorb(hist, _partial("a", T0, {80: 1}, ops="d"), [], _census(("s1.a", 1, T0 + 1, T0 + 2)), STEP)
    assert late == {}
    again = close(hist, STEP, 0)
    assert [(r["interval_start_ms"], r["events"], r["events_d"], r["lag_max_ms"], r["covered_ms"]) for r in again] == [
        (T0, 3, 1, 80, STEP)]
    assert rows_id(again) != rows_id(first[:1])
    # past its retention, a record is counted, not measured
    absorb(hist, [], [], _census(("s1.a", 0, T0 + 3 * STEP, T0 + (RETAIN + 5) * STEP)), STEP)
    close(hist, STEP, 0)
    assert all(int(k.rsplit("|", 1)[1]) >= T0 + 5 * STEP for k in hist.intervals)
    assert absorb(hist, _partial("a", T0 + STEP, {30: 4}), [], [], STEP) == {"s1": 4}
    assert close(hist, STEP, 0) == []


@pytest.mark.parametrize("lateness", [0, 30_000])
def test_the_same_rows_have_the_same_id(lateness):
    def run() -> list[dict]:
        hist = WatchHistory()
        absorb(hist, _partial("a", T0, {40: 2}) + _partial("b", T0 + STEP), [], _census(("s1.a", 0, T0, T0 + 4 * STEP)), STEP)
        return close(hist, STEP, lateness)

    one, two = run(), run()
    assert one and rows_id(one) == rows_id(two)
    two[0]["events"] += 1
    assert rows_id(one) != rows_id(two)


def test_a_run_with_another_interval_or_without_a_history_starts_it_again():
    """Intervals measured with one length are not written as another's; a run without --history
    measures nothing, so the next run with it must not write that time as silence."""
    hist = WatchHistory(step=STEP)
    absorb(hist, _partial("a", T0, {40: 2}), [], _census(("s1.a", 0, T0, T0 + 10)), STEP)
    assert hist.kept_for(STEP) is hist
    again = hist.kept_for(2 * STEP)
    assert (again.intervals, again.watermark, again.step) == ({}, {}, 2 * STEP)
    assert hist.kept_for(None) == WatchHistory()
