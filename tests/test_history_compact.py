"""``cdc-monitor history compact`` and concurrent writers: a history of many small batches over three
dates (overlapping intervals, a batch spanning midnight) compacted to one batch per date reads
exactly the same rows as before; a compacted window is still found as recorded; a compaction
killed (SIGKILL) at each of its steps leaves every row readable once (by the store and by
docs/history.md's recipe), and the next run finishes it;
two writers appending to one location at once both commit, nothing lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cdc_monitor.checks.baseline import DAY_MS
from cdc_monitor.cli.main import cli
from cdc_monitor.history.compact import CRASH_ENV, STEPS, compact, open_history
from cdc_monitor.history.layout import COMMITS, date_of
from cdc_monitor.history.measure import empty_row
from cdc_monitor.history.store import committed, committed_window, keep_latest, read_committed, recorded_batch, write_batch

ROOT = Path(__file__).resolve().parents[1]
STEP = 300_000
DAY0 = 1_763_942_400_000  # 2025-11-24 00:00 UTC
DATES = [date_of(DAY0 + i * DAY_MS) for i in range(3)]
BEFORE = DATES[2]  # the last date is "today": left alone


def _rows(tables: list[str], starts: list[int], covered: int = STEP, events: int = 1) -> list[dict]:
    out = []
    for t in tables:
        for s in starts:
            r = empty_row("app1", t, f"app1.{t}", s, STEP, covered)
            out.append(r | {"events": events, "events_c": events, "lag_count": 1, "lag_max_ms": events,
                            "findings": {"lag_spike": events}})
    return out


def _at(day: int, hour: float) -> int:
    return DAY0 + day * DAY_MS + int(hour * 12) * STEP


def _build(spark, location: str) -> list[str]:
    """Watch-like batches (a few intervals each, some intervals written again: late records, a
    partial first interval), a scan-like window over midnight into the last date, and a
    multi-date seed. Returns the window ids."""
    tables = ["shop.a", "shop.b"]
    windows = [("seed", _rows(tables, [_at(d, h) for d in (0, 1) for h in (1, 2, 3)], covered=STEP // 2, events=5))]
    for i, day in enumerate((0, 0, 0, 1, 1, 1)):
        windows.append((f"watch-{i}", _rows(tables, [_at(day, 2 + i % 3), _at(day, 2 + i % 3) + STEP], events=10 + i)))
    windows.append(("watch-late", _rows(tables, [_at(0, 2)], events=99)))  # the same intervals again, newer: kept
    windows.append(("watch-small", _rows(tables, [_at(0, 4)], covered=STEP // 3, events=7)))  # less covered: not kept
    windows.append(("scan-midnight", _rows(tables, [DAY0 + 2 * DAY_MS - STEP, DAY0 + 2 * DAY_MS], events=3)))
    windows.append(("watch-today", _rows(tables, [_at(2, 5)], events=4)))
    for wid, rows in windows:
        write_batch(spark, location, wid, rows)
    return [w for w, _ in windows]


def _readable(spark, location: str) -> list[tuple]:
    frame = read_committed(spark, location)
    return sorted(tuple(sorted((k, str(v)) for k, v in r.asDict(recursive=True).items() if k != "batch"))
                  for r in frame.collect())


def _by_hand(spark, location: str, date: str | None = None) -> tuple[int, list[tuple]]:
    """docs/history.md's recipe for reading by hand, as written there: its rows (of ``date``), and one per interval."""
    page = (ROOT / "docs" / "history.md").read_text()
    recipe = page.split("by hand:", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    scope = {"spark": spark, "location": location}
    exec(recipe, scope)
    raw = scope["rows"].where(f"date = '{date}'") if date else scope["rows"]
    return raw.count(), sorted(tuple(sorted((k, str(v)) for k, v in r.asDict(recursive=True).items() if k != "batch"))
                                         for r in keep_latest(scope["rows"]).collect())


def _folders(location: str) -> dict[str, int]:
    return {d: len(list(Path(location).glob(f"date={d}/batch=*"))) for d in DATES}


def _markers(location: str) -> int:
    return len(list((Path(location) / COMMITS).glob("batch=*")))


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("compact")
    pristine = str(root / "pristine")
    windows = _build(spark, pristine)
    return {"root": root, "pristine": pristine, "windows": windows, "rows": _readable(spark, pristine)}


def _copy(world, name: str) -> str:
    target = world["root"] / name
    shutil.copytree(world["pristine"], target)
    return str(target)


def test_compaction_reads_the_same_rows_from_one_batch_per_date(spark, world):
    location = _copy(world, "compacted")
    assert _folders(location) == {DATES[0]: 6, DATES[1]: 5, DATES[2]: 2} and _markers(location) == 11
    done = compact(spark, open_history(location), BEFORE)
    assert [d.date for d in done.dates] == DATES[:2] and done.left == 0
    assert [len(d.replaced) for d in done.dates] == [6, 5]
    assert _readable(spark, location) == world["rows"]
    assert _folders(location) == {DATES[0]: 1, DATES[1]: 1, DATES[2]: 2}
    assert _by_hand(spark, location) == (len(world["rows"]), world["rows"])  # (a marker remains whose folder is gone)
    # one marker per compacted date, today's two, and none of the replaced batches but the one over midnight
    batches = committed(spark, location)
    assert _markers(location) == 4 and len(done.folders_deleted) == 11 and len(done.markers_deleted) == 9
    midnight = next(b for b, c in batches.items() if c["window_id"] == "scan-midnight")
    assert (batches[midnight]["dates"], batches[midnight]["replaced"]) == ([DATES[2]], [DATES[1]])
    assert sum(d.rows_kept for d in done.dates) == sum(1 for r in world["rows"] if dict(r)["date"] < BEFORE)
    # every window is still found as recorded: by a scan's check and by watch's
    for wid in world["windows"]:
        found = recorded_batch(batches, wid)
        assert found is not None and committed_window(spark, location, wid) == found, wid
    assert recorded_batch(batches, "watch-0").startswith(f"compact-{DATES[0]}-")
    assert recorded_batch(batches, "not-a-window") is None and committed_window(spark, location, "not-a-window") is None
    # a second run does nothing
    again = compact(spark, open_history(location), BEFORE)
    assert (again.dates, again.folders_deleted, again.markers_deleted, again.left) == ([], [], [], 2)
    # a late batch on a compacted date: the next run compacts it with the compacted batch, and the
    # folder over midnight stays replaced though the first compacted marker goes
    write_batch(spark, location, "watch-later", _rows(["shop.a"], [_at(1, 2)], events=1234))
    expected = _readable(spark, location)
    assert expected != world["rows"]
    third = compact(spark, open_history(location), BEFORE)
    assert [(d.date, len(d.replaced)) for d in third.dates] == [(DATES[1], 3)]  # 2 folders + the one over midnight
    assert _readable(spark, location) == expected and _folders(location) == {DATES[0]: 1, DATES[1]: 1, DATES[2]: 2}
    assert _markers(location) == 4
    assert committed_window(spark, location, "watch-3").startswith(f"compact-{DATES[1]}-")
    # given the window's dates, watch's check reads only those dates' compacted markers
    assert committed_window(spark, location, "watch-3", [DATES[1]]).startswith(f"compact-{DATES[1]}-")
    assert committed_window(spark, location, "watch-3", [DATES[0], DATES[2]]) is None
    assert committed_window(spark, location, "watch-today", []) is not None  # (its own marker)


def test_a_compaction_killed_at_any_step_leaves_every_row_readable_once(spark, world):
    """One process per step, killed there (SIGKILL); the history reads the same, and a second run
    finishes what the first began."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = {}
    for step in STEPS:
        location = _copy(world, f"killed-{step}")
        runs[step] = (location, subprocess.Popen(
            [sys.executable, "-m", "cdc_monitor", "history", "compact", location, "--before", BEFORE],
            env={**env, CRASH_ENV: step}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for step, (location, proc) in runs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == -signal.SIGKILL, f"{step}: {out} {err}"
        assert _readable(spark, location) == world["rows"], step
        folders = _folders(location)
        if step == "rows":  # the new rows are written, not committed: read as nothing
            assert folders == {DATES[0]: 7, DATES[1]: 5, DATES[2]: 2}
        if step == "marker":  # the first date committed, its replaced folders still there: the recipe skips them too
            count, rows = _by_hand(spark, location, DATES[0])
            assert count == sum(1 for r in world["rows"] if dict(r)["date"] == DATES[0]) and rows == world["rows"]
        if step in ("folders", "markers"):
            assert sum(folders.values()) < 7 + 6 + 2  # (both dates compacted, before any deletion)
        done = compact(spark, open_history(location), BEFORE)
        assert _readable(spark, location) == world["rows"], step
        assert _folders(location) == {DATES[0]: 1 if step != "rows" else 2, DATES[1]: 1, DATES[2]: 2}, (step, done)
        assert _markers(location) == 4, step


def test_two_writers_append_to_one_location_at_once(spark, tmp_path):
    """Each writer's rows go straight into its own folders (their own staging): two threads writing
    batches at the same moments both commit every batch, and every row reads back."""
    location = str(tmp_path / "shared")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(table: str) -> None:
        try:
            for i in range(4):
                start.wait(60)
                write_batch(spark, location, f"{table}-{i}", _rows([table], [_at(0, i), _at(1, i)], events=i + 1))
        except BaseException as err:
            errors.append(err)
            start.abort()

    threads = [threading.Thread(target=writer, args=(t,)) for t in ("shop.x", "shop.y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert sorted(c["window_id"] for c in committed(spark, location).values()) == sorted(
        f"{t}-{i}" for t in ("shop.x", "shop.y") for i in range(4))
    rows = read_committed(spark, location).collect()
    assert len(rows) == 16 and len({(r["table"], r["interval_start_ms"]) for r in rows}) == 16
    assert not list(Path(location).rglob("_temporary"))


def test_the_verb_says_what_it_did(spark, world):
    location = _copy(world, "verb")
    run = CliRunner().invoke(cli, ["history", "compact", location, "--before", BEFORE])
    assert run.exit_code == 0, run.output
    lines = run.output.splitlines()
    assert [line.split(":")[0] for line in lines[:2]] == DATES[:2]
    assert "6 batch folder(s) -> batch compact-" in lines[0] and "14 row(s) kept" in lines[0]
    assert "deleted 11 replaced folder(s) and 9 marker(s); 2 date(s) compacted, 0 already one batch" in run.output
    assert f"compacted {location} before {BEFORE}" in run.output and "11 folder(s) replaced" in run.output
    assert _readable(spark, location) == world["rows"]


@pytest.mark.parametrize("args,words", [(["/no/such/history"], "no history at /no/such/history"),
                                        (["{tmp}", "--before", "2025-11-31"], "--before '2025-11-31' is not a date")])
def test_a_wrong_location_or_date_is_one_line_and_exit_2(tmp_path, args, words):
    run = CliRunner().invoke(cli, ["history", "compact", *(a.format(tmp=tmp_path) for a in args)])
    assert run.exit_code == 2
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], run.output
