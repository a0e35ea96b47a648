"""``--history`` end to end: a seeded history (a week of the seasonal model's rows, written as one
committed batch), then scans of real records of the same model through the CLI: the same window
twice is recorded once; a table at 10% of its volume is a volume_anomaly with its observed value,
baseline and band (and fails a gate suite); a writer killed (SIGKILL) between its rows and its
commit marker leaves nothing readable, and the next scan records the window exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc_monitor.checks.anomalies import VOLUME_ANOMALY
from cdc_monitor.checks.baseline import DAY_MS
from cdc_monitor.cli.main import cli
from cdc_monitor.generator.seasonal import SeasonalModel, event_lines, scaled_rows
from cdc_monitor.history.layout import COMMITS, window_id
from cdc_monitor.history.store import PAUSE_ENV, committed, read_committed, write_batch

ROOT = Path(__file__).resolve().parents[1]
SCALE = 0.05  # each table's volume in the test's events: a few hundred records per interval in all
STEP = 300_000
MODEL = SeasonalModel(tables=4, servers=1, days=15, anomalies_per_kind=0)
NOW = MODEL.start_ms + 14 * DAY_MS + 10 * 3_600_000  # a Monday 10:00 UTC, two weeks in


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    history = str(root / "history")
    rows = [r for r in scaled_rows(MODEL, SCALE, NOW) if r["interval_start_ms"] >= NOW - 8 * DAY_MS]
    write_batch(spark, history, "seed", rows)
    captures = {}
    for name, start, factors in (("clean", NOW, None), ("dropped", NOW + 3 * STEP, {"shop.t02": 0.1}),
                                 ("killed", NOW + 6 * STEP, None)):
        captures[name] = root / f"{name}.jsonl"
        captures[name].write_text("\n".join(event_lines(MODEL, start, 3, scale=SCALE, factors=factors)) + "\n")
    return {"root": root, "history": history, "captures": captures, "seeded": len(rows)}


def _scan(world, name: str, *extra: str) -> tuple[int, dict]:
    report = world["root"] / f"{name}.{time.time_ns()}.json"
    run = CliRunner().invoke(cli, ["scan", str(world["captures"][name]), "--history", world["history"], "--output", "json",
                                   "--report-file", str(report), "--quiet", *extra])
    assert report.exists(), run.output
    return run.exit_code, json.loads(report.read_text())


def _rows_from(spark, world, start_ms: int) -> list:
    frame = read_committed(spark, world["history"])
    return frame.where(f"interval_start_ms >= {start_ms} AND interval_start_ms < {start_ms + 3 * STEP}").collect()


def test_the_same_window_twice_is_recorded_once(spark, world):
    code, first = _scan(world, "clean")
    assert code == 0, first["findings"]
    h = first["history"]
    assert (h["recorded"], h["already_recorded"], h["rows_written"]) == (True, False, 12)  # 4 tables x 3 intervals
    assert h["judged"] > 0 and h["no_verdict"] == [] and first["summary"]["findings_by_check"]["anomaly"] == 0
    code, again = _scan(world, "clean")
    assert (again["history"]["already_recorded"], again["history"]["rows_written"]) == (True, 0)
    assert again["history"]["batch"] == h["batch"]
    rows = _rows_from(spark, world, NOW)
    assert len(rows) == 12 and len({(r["table"], r["interval_start_ms"]) for r in rows}) == 12
    assert sorted({r["table"] for r in rows}) == ["shop.t01", "shop.t02", "shop.t03", "shop.t04"]
    one = next(r for r in rows if r["table"] == "shop.t01" and r["interval_start_ms"] == NOW + STEP)
    assert one["events"] == one["events_c"] == round(MODEL.expected(("app1", "shop.t01"), NOW + STEP) * SCALE)
    assert one["lag_p99_ms"] == int(MODEL.base_lag[("app1", "shop.t01")]) and one["covered_ms"] == STEP


def test_a_dropped_table_is_a_volume_anomaly_with_its_band(spark, world):
    code, report = _scan(world, "dropped", "--fail-on", "warning")
    assert code == 1
    found = [f for f in report["findings"] if f["check"] == "anomaly"]
    assert {(f["rule"], f["table"]) for f in found} == {(VOLUME_ANOMALY.name, "shop.t02")}
    assert sorted(f["interval_start_ms"] for f in found) == [NOW + i * STEP for i in (3, 4, 5)]
    for f in found:
        lower, upper = f["band"]
        assert f["observed"] < lower < f["baseline"] < upper and f["metric"] == "events"
        assert f["observed"] == pytest.approx(f["baseline"] * 0.1, rel=0.2)
        assert f["baseline_from"] == "same_hour_of_week" and f["baseline_intervals"] >= 8
    series = report["history"]["series"]
    assert [(s["table"], s["metric"], len(s["window"])) for s in series] == [("shop.t02", "events", 3)]
    # the history records the findings beside the measurements
    rows = _rows_from(spark, world, NOW + 3 * STEP)
    assert {r["findings"].get(VOLUME_ANOMALY.name) for r in rows if r["table"] == "shop.t02"} == {1}


def test_a_gate_fails_on_an_anomaly(world):
    run = CliRunner().invoke(cli, ["gate", str(world["captures"]["dropped"]), "--history", world["history"], "--suite",
                                   str(ROOT / "expectations" / "anomalies.json"), "--output", "json", "--quiet"])
    assert run.exit_code == 1, run.output
    assert "volume_anomaly" in run.output


def test_a_writer_killed_before_its_commit_leaves_nothing_readable(spark, world):
    history = Path(world["history"])
    times = [json.loads(line)["ts"] for line in world["captures"]["killed"].read_text().splitlines()]
    wid = window_id(["app1"], min(times), max(times), STEP)  # the batch it writes is named <window id>-<attempt>
    env = {**os.environ, PAUSE_ENV: "300", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "cdc_monitor", "scan", str(world["captures"]["killed"]), "--history",
                             world["history"], "--quiet", "--output", "json", "--report-file", os.devnull], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline, written = time.time() + 240, []
        while time.time() < deadline and proc.poll() is None and not written:
            written = list(history.glob(f"date=*/batch={wid}-*/*.parquet"))
            time.sleep(0.2)
        assert written, f"the writer wrote no rows: {proc.stderr.read() if proc.poll() is not None else 'still running'}"
        os.kill(proc.pid, signal.SIGKILL)  # its rows are in place, its commit marker is not
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not list((history / COMMITS).glob(f"batch={wid}-*"))
    killed = written[0].parent.name.split("=", 1)[1]
    assert killed not in committed(spark, world["history"])
    assert _rows_from(spark, world, NOW + 6 * STEP) == []  # the files are there, unreadable
    _, report = _scan(world, "killed")
    assert (report["history"]["already_recorded"], report["history"]["rows_written"]) == (False, 12)
    assert report["history"]["batch"] != killed
    rows = _rows_from(spark, world, NOW + 6 * STEP)
    assert len(rows) == 12 and len({(r["table"], r["interval_start_ms"]) for r in rows}) == 12
    assert {r["batch"] for r in rows} == {report["history"]["batch"]}
    everything = read_committed(spark, world["history"])
    assert everything.count() == everything.select("server", "table", "interval_start_ms").distinct().count()


def test_a_kafka_scan_of_some_topics_judges_no_silence_on_the_others(spark, tmp_path):
    """A scan of ``--topics 'pg1\\.shop\\.a'`` did not look at table b: b gets no row and no
    table_silent, though the history knows it and a's events show the server alive. A window that
    read b's topic (silent) or a capture (which names only topics with records) judges it."""
    from cdc_monitor.checks.anomalies import TABLE_SILENT
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.history.measure import MEASURE_PART, empty_row
    from cdc_monitor.history.record import Past, record_window

    start = MODEL.start_ms + 7 * DAY_MS
    past = []
    for i in range(1, 25):  # the last 24 intervals: 100 events each on a and b
        for table in ("a", "b"):
            past.append(empty_row("pg1", f"shop.{table}", f"pg1.shop.{table}", start - i * STEP, STEP, STEP)
                        | {"events": 100, "events_c": 100, "written_at_ms": 0})
    measured = empty_row("pg1", "shop.a", "pg1.shop.a", start, STEP, STEP) | {"events": 100, "events_c": 100}
    window = {"start_ms": start, "end_ms": start + STEP - 1}

    def judged(location: str, topics: set[str] | None) -> tuple[set, set]:
        cfg = ScanConfig(history=str(tmp_path / location))
        out = record_window(spark, cfg, window, ["pg1"], [], {MEASURE_PART: [measured]}, Past({}, past), topics)
        rows = {r["table"] for r in read_committed(spark, cfg.history).collect()}
        return {(f["rule"], f["table"]) for f in out.findings}, rows

    assert judged("some", {"pg1.shop.a"}) == (set(), {"shop.a"})
    assert judged("both", {"pg1.shop.a", "pg1.shop.b"}) == ({(TABLE_SILENT.name, "shop.b")}, {"shop.a", "shop.b"})
    assert judged("capture", None) == ({(TABLE_SILENT.name, "shop.b")}, {"shop.a", "shop.b"})
