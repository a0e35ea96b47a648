"""``watch --history`` end to end over watch's real streaming query (stateful carry operators on
RocksDB, micro-batches cut as a per-trigger cap cuts them, the transaction topic read ahead): the
rows it writes, interval by interval, are the rows ``scan --history`` writes for the same records
(events by op, findings by rule exactly; lag percentiles within the sketch's 1%), though each
interval was measured across batches. A batch re-run after a crash between the history's commit
and the driver's state writes nothing twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc_monitor.checks.anomalies import RULES as ANOMALY_RULES
from cdc_monitor.cli.main import cli
from cdc_monitor.config import ScanConfig
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from cdc_monitor.history.layout import COMMITS
from cdc_monitor.history.store import committed, read_committed
from cdc_monitor.sources.capture import read_capture
from cdc_monitor.watch.batch import WatchSettings
from tests.support.watch_stream import batches_prorated, run_stream, stage

STEP = 20_000  # 20-second intervals: the capture spans ~3 minutes
CUTS = 3
MEASURED = ("events", "events_c", "events_u", "events_d", "events_r", "events_t", "lag_count", "lag_max_ms")


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("watch_history")
    traffic = generate("mysql", events=400, seed=13, faults=True, heartbeats=True)
    write_capture(traffic, root / "c.jsonl")
    records = read_capture(spark, [str(root / "c.jsonl")]).records.cache()
    batches = batches_prorated(records, CUTS, ahead=True)
    stage(batches[:-1], root / "in")
    settings = WatchSettings(scan=ScanConfig(history=str(root / "watch"), history_interval_ms=STEP,
                                             history_lateness_ms=0))
    run_stream(spark, root / "in", root / "ckpt", settings)
    shutil.copytree(root / "ckpt", root / "ckpt-before-last")  # the checkpoint as a crash would leave it
    stage(batches[-1:], root / "in", first=CUTS - 1)
    last, state = run_stream(spark, root / "in", root / "ckpt", settings)
    config = root / "history.toml"
    config.write_text(f'[history]\ninterval = "{STEP // 1000}s"\n')
    report = root / "scan.json"
    run = CliRunner().invoke(cli, ["scan", str(root / "c.jsonl"), "--history", str(root / "scan"), "--config", str(config),
                                   "--output", "json", "--report-file", str(report), "--quiet"])
    assert report.exists(), run.output
    return {"root": root, "settings": settings, "state": state, "last": last, "batches": batches,
            "scan": json.loads(report.read_text())}


def _rows(spark, location: Path) -> dict[tuple, dict]:
    return {(r["server"], r["table"], r["interval_start_ms"]): r.asDict(recursive=True)
            for r in read_committed(spark, str(location)).collect()}


def test_watch_writes_each_interval_as_scan_measures_it(spark, world):
    watched, scanned = _rows(spark, world["root"] / "watch"), _rows(spark, world["root"] / "scan")
    assert world["scan"]["history"]["rows_written"] == len(scanned)
    # every table, every interval the stream has passed (the watermark: every partition's newest record)
    history = world["state"].history
    (server, until), = history.closed_until.items()
    assert until <= history.watermark[server] < until + STEP
    assert set(watched) == {k for k in scanned if k[2] + STEP <= until}
    assert until >= max(k[2] for k in scanned) - STEP  # only the newest one or two intervals are still open
    assert len({k[:2] for k in watched}) == 3 and sum(r["events"] for r in watched.values()) > 400
    anomaly_rules = {r.name for r in ANOMALY_RULES}
    for key, w in sorted(watched.items()):
        s = scanned[key]
        assert {c: w[c] for c in MEASURED} == {c: s[c] for c in MEASURED}, key
        assert w["findings"] == {r: n for r, n in s["findings"].items() if r not in anomaly_rules}, key
        for p in ("lag_p50_ms", "lag_p95_ms", "lag_p99_ms"):
            assert (w[p] is None) == (s[p] is None), key
            if s[p] is not None:
                assert abs(w[p] - s[p]) <= max(1, 0.01 * abs(s[p])), (key, p, w[p], s[p])
        if key[2] > min(k[2] for k in watched if k[:2] == key[:2]):  # after the watch's first interval: whole
            assert w["covered_ms"] == STEP, key
    assert sum(sum(w["findings"].values()) for w in watched.values()) > 0  # the faults are in it


def test_the_history_is_written_as_intervals_end_not_once_at_the_end(spark, world):
    """The stream's batches wrote the history as they went: the last batch wrote only the
    intervals it ended, and the metric counters count every row committed."""
    state = world["state"]
    written = sum(state.totals["history_rows"].values())
    assert written == sum(c["rows"] for c in committed(spark, str(world["root"] / "watch")).values())
    assert 0 < sum(sum(o.history.rows.values()) for o in world["last"]) < written
    assert not state.totals.get("history_late")  # nothing came too late to measure
    server = next(iter(state.history.watermark))
    assert state.history.closed_until[server] <= state.history.watermark[server]  # (lateness 0)


def test_a_batch_rerun_after_a_crash_writes_nothing_twice(spark, world, tmp_path):
    """The last batch wrote the history, then the process 'died' before the driver's state and
    Spark's commit: the checkpoint as it was before it, the batch runs again from the same
    offsets, closes the same intervals, finds their rows committed and writes nothing."""
    root = world["root"]
    before = committed(spark, str(root / "watch"))
    ckpt = tmp_path / "ckpt"
    shutil.copytree(root / "ckpt-before-last", ckpt)
    again, state = run_stream(spark, root / "in", ckpt, world["settings"])
    assert [o.batch_id for o in again] == [o.batch_id for o in world["last"]]
    assert all(not o.history.rows for o in again)
    assert [o.history.batch for o in again] == [o.history.batch for o in world["last"]]
    assert committed(spark, str(root / "watch")) == before
    assert state.history == world["state"].history
    assert len(list((root / "watch" / COMMITS).iterdir())) == len(before)
