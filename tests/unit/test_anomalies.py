"""The anomaly rules and their baseline without Spark: the baseline by hand, the window's rows,
the history's layout helpers, the [history] settings, and exactness on labelled seasonal traffic."""

from __future__ import annotations

import pytest

from benchmarks.anomalies import evaluate
from cdc_monitor.checks.anomalies import LAG_ANOMALY, TABLE_SILENT, VOLUME_ANOMALY, judge_window
from cdc_monitor.checks.baseline import SAME_HOUR, BaselineSettings, HistoryIndex, choose, median, robust
from cdc_monitor.config import _from_mapping
from cdc_monitor.errors import UsageError
from cdc_monitor.generator.seasonal import SeasonalModel
from cdc_monitor.history.layout import WEEK_MS, intervals, window_id
from cdc_monitor.history.measure import empty_row, window_rows
from cdc_monitor.history.store import latest, lookback_ms

MIN = 60_000
STEP = 5 * MIN


def test_the_baseline_by_hand():
    # docs/history.md's worked example: median 100, deviations 0 2 2 3 4 5 10 -> MAD 3
    values = [100, 98, 102, 97, 104, 95, 110]
    assert median(values) == 100 and median([1, 2, 3, 4]) == 2.5
    b = robust(values, SAME_HOUR, BaselineSettings(sensitivity=6, floor=0.1))
    assert b.mad == 3
    spread = max(1.4826 * 3, 0.1 * 100, 1)  # the floor wins: 10
    assert (b.median, b.lower, b.upper) == (100, 100 - 6 * spread, 100 + 6 * spread) == (100, 40, 160)
    # a flat history: the floor keeps the band open; a zero history: one event either way, times k
    assert robust([50] * 8, SAME_HOUR, BaselineSettings(floor=0.1)).upper == 50 + 6 * 5
    assert robust([0] * 8, SAME_HOUR, BaselineSettings()).upper == 6


def test_too_little_history_is_no_verdict():
    s = BaselineSettings(intervals=24, min_intervals=8)
    assert choose([1.0] * 7, [1.0] * 7, s) is None
    assert choose([1.0] * 7, [2.0] * 8, s).median == 2.0  # the recent intervals when the hour has too few
    assert choose([1.0] * 30, [2.0] * 8, s).intervals == 24  # the last n of the same hour


def _row(table: str, t: int, events: int, lag: int | None = 100, server: str = "s1") -> dict:
    row = empty_row(server, table, f"{server}.{table}", t, STEP, STEP)
    row |= {"events": events, "events_c": events}
    if events and lag is not None:
        row |= {"lag_count": events, "lag_p99_ms": lag}
    return row


def _history(weeks: int = 3, tables=("a", "b"), events: int = 100, lag: int = 100) -> tuple[HistoryIndex, int]:
    """``weeks`` of flat traffic; returns the index and the start of the week after."""
    s = BaselineSettings()
    index = HistoryIndex(STEP, s, lookback_ms(STEP, s.intervals))
    for t in range(0, weeks * WEEK_MS, STEP):
        for name in tables:
            index.add(_row(name, t, events + (t // STEP) % 5, lag))  # a little wobble
    return index, weeks * WEEK_MS


def test_each_rule_with_observed_baseline_and_band():
    index, now = _history()
    rows = [_row("a", now, 10), _row("b", now, 101, lag=900)]
    found = {f["rule"]: f for f in judge_window(rows, index, now).findings}
    assert set(found) == {VOLUME_ANOMALY.name, LAG_ANOMALY.name}
    v = found[VOLUME_ANOMALY.name]
    assert (v["table"], v["metric"], v["observed"], v["baseline_from"]) == ("a", "events", 10, SAME_HOUR)
    assert v["band"][0] > 10 and v["baseline"] == 102 and v["band"][0] < v["baseline"] < v["band"][1]
    lag = found[LAG_ANOMALY.name]
    assert lag["observed"] == 900 and lag["baseline"] == 100 and lag["band"][1] < 900
    assert judge_window([_row("a", now, 101), _row("b", now, 99)], index, now).findings == []


def test_a_silent_table_while_its_server_lives_and_not_otherwise():
    index, now = _history()
    silent = judge_window([_row("a", now, 0), _row("b", now, 100)], index, now).findings
    assert [f["rule"] for f in silent] == [TABLE_SILENT.name]
    # the whole server silent and no heartbeat: connector_stalled's, not judged here
    assert judge_window([_row("a", now, 0), _row("b", now, 0)], index, now).findings == []
    beating = judge_window([_row("a", now, 0), _row("b", now, 0)], index, now, heartbeat_servers=["s1"]).findings
    assert sorted(f["table"] for f in beating) == ["a", "b"] and {f["rule"] for f in beating} == {TABLE_SILENT.name}


def test_a_new_table_gets_no_verdict_and_no_finding():
    index, now = _history()
    j = judge_window([_row("new", now, 5000)], index, now)
    assert j.findings == [] and j.no_verdict == {("s1", "new"): 1}


def test_window_rows_cover_every_interval_and_zero_fill():
    start, end = 7 * MIN + 30_000, 16 * MIN  # 00:07:30 .. 00:16: three intervals, the first and last partial
    assert intervals(start, end, STEP) == [(5 * MIN, 150_000), (10 * MIN, STEP), (15 * MIN, MIN + 1)]
    measures = [{**_row("a", 10 * MIN, 7), "covered_ms": None}]
    findings = [{"rule": "lag_spike", "server": "s1", "table": "a", "t_ms": 10 * MIN, "count": 2}]
    rows = window_rows(measures, findings, start, end, STEP, known=[("s1", "b", "s1.b")])
    assert [(r["table"], r["interval_start_ms"], r["covered_ms"], r["events"]) for r in rows] == [
        ("a", 5 * MIN, 150_000, 0), ("a", 10 * MIN, STEP, 7), ("a", 15 * MIN, MIN + 1, 0),
        ("b", 5 * MIN, 150_000, 0), ("b", 10 * MIN, STEP, 0), ("b", 15 * MIN, MIN + 1, 0)]
    assert rows[1]["findings"] == {"lag_spike": 2} and rows[0]["findings"] == {}


def test_window_ids_and_the_latest_row():
    assert window_id(["b", "a"], 1, 2, STEP) == window_id(["a", "b"], 1, 2, STEP) != window_id(["a"], 1, 2, STEP)
    old = {**_row("a", 0, 5), "covered_ms": MIN, "written_at_ms": 1}
    full = {**_row("a", 0, 9), "covered_ms": STEP, "written_at_ms": 0}
    again = {**full, "written_at_ms": 2, "events": 10}
    assert latest([old, full]) == [full] and latest([full, again, old]) == [again]


def test_history_settings_are_checked():
    got = _from_mapping({"history": {"location": "/h", "interval": "10m", "sensitivity": 4, "baseline_intervals": 12,
                                     "min_intervals": 6, "floor": 0.2, "lateness": "90s"}}, "cfg.toml")
    assert got == {"history": "/h", "history_interval_ms": 600_000, "anomaly_sensitivity": 4.0,
                   "anomaly_baseline_intervals": 12, "anomaly_min_intervals": 6, "anomaly_floor": 0.2,
                   "history_lateness_ms": 90_000}
    for bad in ({"interval": "7m"}, {"sensitivity": 0}, {"min_intervals": 1.5}, {"where": "/h"}, {"lateness": "soon"}):
        with pytest.raises(UsageError, match="history"):
            _from_mapping({"history": bad}, "cfg.toml")


def test_every_injected_anomaly_is_found_and_nothing_else():
    """Two weeks of 6 tables on 2 servers with 2 anomalies of each kind in the second week: exact.
    (The four-week benchmark's false alarms are rarer than one in 10,000 table-intervals: this seed
    has none; benchmarks/anomalies.py reports the rate.)"""
    model = SeasonalModel(tables=6, servers=2, days=14, anomalies_per_kind=2, quiet_days=8, seed=5)
    assert {a.kind for a in model.anomalies} == {"outage", "spike", "silence", "lag_creep"}
    r = evaluate(model, BaselineSettings())
    assert (r["recall"], r["anomalies_found"], r["false_alarms"]) == (1.0, r["anomalies"], 0), r
