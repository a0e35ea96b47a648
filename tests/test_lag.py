"""Lag definitions (README: "What is checked") on hand-made events with known lags."""

from __future__ import annotations

import json
import math
import random

from cdc_monitor.checks.lag import HISTOGRAM_LE_S
from cdc_monitor.pipeline import lag_json
from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000


def event(i: int, lag_ms: int, *, table: str = "orders", op: str = "u", snapshot: str = "false",
          source_ts: int | None = None, spacing: int = 1000) -> str:
    src_ts = BASE + i * spacing if source_ts is None else source_ts
    value = {"before": None, "after": {"id": i}, "op": op, "ts_ms": (src_ts if source_ts is None else BASE) + lag_ms,
             "source": {"connector": "mysql", "name": "srv", "db": "shop", "table": table, "ts_ms": src_ts,
                        "snapshot": snapshot, "file": "mysql-bin.000001", "pos": 100 + i, "row": 0}}
    return kcat_line(f"srv.shop.{table}", 0, i, json.dumps({"id": i}), json.dumps(value), value["ts_ms"] + 5)


def nearest_rank(values: list[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p * len(ordered) / 100)) - 1]


def test_percentiles_are_exact_nearest_rank_and_edges_are_counted(scan, tmp_path):
    rng = random.Random(3)
    lags = [rng.randrange(0, 5000) for _ in range(197)] + [-250, -40, 70_000]  # skew and one spike
    lines = [event(i, lag) for i, lag in enumerate(lags)]
    n = len(lags)
    lines += [event(n + 1, 10, op="r", snapshot="true"), event(n + 2, 10, op="c", snapshot="last")]
    lines += [event(n + 3, 10, source_ts=0), event(n + 4, 10, source_ts=5_000_000_000_000)]  # implausible
    result = scan([write_lines(tmp_path / "lag.jsonl", lines)])
    (row,) = result.lag
    assert row["count"] == n
    for name, p in (("p50_ms", 50), ("p95_ms", 95), ("p99_ms", 99)):
        assert row[name] == nearest_rank(lags, p), name
    assert row["max_ms"] == 70_000 and row["sum_ms"] == sum(lags)
    assert row["negative"] == 2 and row["invalid_source_ts"] == 2 and row["snapshot_excluded"] == 2
    # the histogram (cdc_lag_distribution_seconds, the JSON report's "histogram"): cumulative, exact
    assert row["le_counts"] == [sum(lag <= le * 1000 for lag in lags) for le in HISTOGRAM_LE_S]
    assert lag_json(row)["histogram"]["+Inf"] == n and lag_json(row)["histogram"]["2.5"] == sum(lag <= 2500 for lag in lags)
    # the lag per interval of record time: every change event with a lag, its largest lag
    step = result.series["step_ms"]
    assert sum(r["count"] for r in result.series["lag"]) == n
    assert max(r["max_ms"] for r in result.series["lag"]) == 70_000
    assert all(r["t_ms"] % step == 0 for r in result.series["lag"]) and step >= (n * 1000) // 60
    rules = sorted(f["rule"] for f in result.findings)
    # the snapshot read comes after streaming began: a restarted snapshot, said once for the table; the c
    # flagged snapshot "last" contradicts its op; the spike's record comes ~65 s after every other
    # record (no heartbeats: over the 60 s stall threshold)
    assert rules == (["connector_stalled"] + ["invalid_source_ts"] * 2 + ["lag_spike"] + ["negative_lag"] * 2
                     + ["snapshot_op_mismatch", "snapshot_restarted"])


def test_spikes_are_runs_per_table_and_thresholds_per_table(scan, tmp_path):
    # In processing (ts_ms) order, orders: 3 high in a row, normal, 2 high -> two spikes;
    # customers: 90 s lag under its own 120 s threshold -> none.
    lags = [100, 90_000, 91_000, 92_000, 100, 95_000, 96_000, 100]
    lines = [event(i, lag, spacing=200_000) for i, lag in enumerate(lags)]
    lines += [event(20 + i, 90_000, table="customers", spacing=200_000) for i in range(3)]
    result = scan([write_lines(tmp_path / "spikes.jsonl", lines)],
                  table_lag_threshold_ms={"shop.customers": 120_000})
    spikes = sorted((f["table"], f["offset"], tuple(f["offsets"])) for f in result.findings if f["rule"] == "lag_spike")
    assert spikes == [("shop.orders", 1, (1, 2, 3)), ("shop.orders", 5, (5, 6))]


def test_source_timestamps_in_another_unit_say_which(scan, tmp_path):
    """A ts_ms that is plainly seconds, microseconds or nanoseconds is invalid_source_ts naming the
    unit (a connector or SMT putting ts_us/ts_ns into ts_ms); an implausible one names none."""
    stamps = {BASE // 1000: "seconds", BASE * 1000: "microseconds", BASE * 1_000_000: "nanoseconds", 0: None,
              5_000_000_000_000: None}
    lines = [event(i, 10, source_ts=ts) for i, ts in enumerate(stamps)]
    result = scan([write_lines(tmp_path / "units.jsonl", lines)])
    found = {f["offset"]: f["message"] for f in result.findings if f["rule"] == "invalid_source_ts"}
    assert set(found) == set(range(len(stamps)))
    for offset, (ts, unit) in enumerate(stamps.items()):
        assert found[offset].startswith(f"source timestamp {ts} is not an integer ms time"), found[offset]
        assert found[offset].endswith(f": it looks like {unit}, not milliseconds" if unit else "2100"), found[offset]


def test_microsecond_and_nanosecond_times_give_sub_millisecond_lags(scan, tmp_path):
    """Debezium 2.x sends ts_us/ts_ns beside ts_ms (payload and source): the lag table and
    negative_lag use the finest pair both sides send; a record with ms only keeps ms."""
    lines = []
    lags_us = {0: 350, 1: 1_250, 2: -400, 3: 2_000}  # us pairs, ns pairs, a negative one, ms only
    for i, lag in lags_us.items():
        src_us = (BASE + i * 1000) * 1000 + 123
        value = {"before": None, "after": {"id": i}, "op": "u", "ts_ms": (src_us + lag) // 1000,
                 "source": {"connector": "mysql", "name": "srv", "db": "shop", "table": "fine", "ts_ms": src_us // 1000,
                            "snapshot": "false", "file": "mysql-bin.000001", "pos": 100 + i, "row": 0}}
        if i in (0, 2):
            value["ts_us"], value["source"]["ts_us"] = src_us + lag, src_us
        elif i == 1:
            value["ts_ns"], value["source"]["ts_ns"] = (src_us + lag) * 1000 + 7, src_us * 1000
        else:
            value["ts_ms"], value["source"]["ts_ms"] = BASE + 3000 + 2, BASE + 3000
        lines.append(kcat_line("srv.shop.fine", 0, i, json.dumps({"id": i}), json.dumps(value), BASE + 9000))
    result = scan([write_lines(tmp_path / "fine.jsonl", lines)])
    row = next(r for r in result.lag if r["table"] == "shop.fine")
    assert row["count"] == 4 and row["max_ms"] == 2 and row["negative"] == 1
    assert row["p50_ms"] == 0.35 and row["sum_ms"] == 3.2  # nearest rank of -0.4, 0.35, 1.25, 2
    negative = [f for f in result.findings if f["rule"] == "negative_lag"]
    assert [(f["offset"], f["message"]) for f in negative] == [(2, "lag -0.4 ms: ts_ms before source.ts_ms (clock skew?)")]
    assert lag_json(row)["histogram"]["0.05"] == 4  # all four are under 50 ms
