"""The live line's parts on fakes: the sources (a status tracker, a Connect progress handler, a
counter), the render, and the poller; off a terminal nothing starts. The line on a real terminal
and a real scan: tests/test_cli.py (test_scan_on_a_terminal_shows_the_running_step_and_its_spark_tasks)."""

from __future__ import annotations

import io
import re
import sys
import threading
import time
from types import SimpleNamespace

from cdc_monitor.runtime import progress
from cdc_monitor.runtime.progress import Both, ConnectTasks, Count, Counter, Line, Live, Off, SparkTasks, live_steps


class FakeTracker:
    def __init__(self, stages: dict[int, tuple[int, int]]) -> None:
        self.stages = stages  # id -> (completed, total)

    def getActiveStageIds(self) -> list[int]:  # (pyspark's names)
        return list(self.stages)

    def getStageInfo(self, stage: int):
        if stage not in self.stages:
            return None  # (a stage that ended between the two calls)
        done, total = self.stages[stage]
        return SimpleNamespace(stageId=stage, numCompletedTasks=done, numTasks=total, numActiveTasks=1)


def tasks_of(tracker: FakeTracker) -> SparkTasks:
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    return SparkTasks(spark)  # type: ignore[arg-type]


class FakeLine:
    """Records what the poller hands the render."""

    def __init__(self) -> None:
        self.drawn: list[tuple[str, float, list[Count]]] = []
        self.hidden = 0
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True

    def draw(self, name: str, elapsed: float, counts: list[Count]) -> None:
        self.drawn.append((name, elapsed, counts))

    def hide(self) -> None:
        self.hidden += 1

    def stop(self) -> None:
        self.stopped = True


def wait_for(condition, seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "not in time"
        time.sleep(0.01)


def test_spark_tasks_are_done_of_total_over_the_running_stages():
    tracker = FakeTracker({3: (2, 8), 4: (1, 2)})
    assert tasks_of(tracker).poll() == [Count("tasks", 3, 10)]
    assert str(tasks_of(tracker).poll()[0]) == "tasks 3/10"
    assert tasks_of(FakeTracker({})).poll() == []  # nothing running: nothing to count


def test_connect_tasks_come_from_the_progress_handler_and_it_is_removed():
    handlers: list = []
    spark = SimpleNamespace(registerProgressHandler=handlers.append, removeProgressHandler=handlers.remove)
    source = ConnectTasks(spark)  # type: ignore[arg-type]
    (handler,) = handlers
    stage = SimpleNamespace
    handler(stages=[stage(num_tasks=4, num_completed_tasks=4, done=True),
                    stage(num_tasks=8, num_completed_tasks=3, done=False)], inflight_tasks=2, operation_id="o", done=False)
    assert source.poll() == [Count("tasks", 3, 8)]
    handler(stages=[], inflight_tasks=0, operation_id="o", done=True)
    assert source.poll() == []
    source.close()
    assert handlers == []


def test_a_counter_counts_what_the_step_hands_it_or_reads_its_own_count():
    counter = Counter("records", 3)
    assert list(counter.counting("abc")) == ["a", "b", "c"]
    assert counter.poll() == [Count("records", 3, 3)]
    made = [0]
    assert Counter("events", 10, read=lambda: made[0] + 4).poll() == [Count("events", 4, 10)]
    assert str(Count("records", 1200)) == "records 1,200"  # no total known
    assert Both(Counter("records", 5), tasks_of(FakeTracker({1: (0, 2)}))).poll() == [
        Count("records", 0, 5), Count("tasks", 0, 2)]


def test_the_poller_draws_the_running_step_after_a_while_and_stops_with_the_block():
    line = FakeLine()
    tracker = FakeTracker({7: (1, 4)})
    before = threading.active_count()
    live = Live("read decode", lambda: tasks_of(tracker), line=lambda: line, show_after=0.2, hz=50)
    with live as steps:
        assert line.started and live.thread is not None and live.thread.daemon  # never keeps the process alive
        wait_for(lambda: line.hidden > 0)
        assert line.drawn == []  # not before show_after
        wait_for(lambda: line.drawn)
        name, elapsed, counts = line.drawn[-1]
        assert name == "read decode" and elapsed >= 0.2 and counts == [Count("tasks", 1, 4)]
        steps.step("findings")
        tracker.stages = {8: (5, 8)}
        wait_for(lambda: line.drawn[-1][0] == "findings")
        assert line.drawn[-1][2] == [Count("tasks", 5, 8)] and line.drawn[-1][1] >= 0.2  # elapsed from the step's start
        counter = steps.counter("write", "records", 10)
        assert counter is not None
        counter.add(4)
        wait_for(lambda: line.drawn[-1][0] == "write")
        assert line.drawn[-1][2] == [Count("records", 4, 10)]
        steps.idle()  # the last step ended: hidden, nothing more drawn
        drawn = len(line.drawn)
        time.sleep(0.1)
        assert len(line.drawn) == drawn
    assert line.stopped and not live.thread.is_alive()
    assert threading.active_count() == before


def test_a_failing_poll_never_ends_the_line():
    line = FakeLine()

    class Broken:
        def poll(self):
            raise RuntimeError("the session is stopping")

        def close(self):
            pass

    with Live("findings", Broken, line=lambda: line, show_after=0, hz=50):
        time.sleep(0.1)
    assert line.stopped and line.drawn == []


def test_off_a_terminal_nothing_starts():
    def never():
        raise AssertionError("no source is made off a terminal")

    before = threading.active_count()
    with live_steps(False, "read decode", never) as steps:
        assert isinstance(steps, Off)
        steps.step("findings")
        assert steps.counter("write", "records", 3) is None
        steps.idle()
        assert threading.active_count() == before
    assert isinstance(live_steps(True, "read decode", lambda: Counter("x")), Live)


def test_on_terminal_is_a_tty_not_quiet_not_dumb(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert progress.on_terminal(False, Tty())
    assert not progress.on_terminal(True, Tty())  # --quiet
    assert not progress.on_terminal(False, io.StringIO())  # a pipe or a file
    monkeypatch.setenv("TERM", "dumb")
    assert not progress.on_terminal(False, Tty())


def test_the_render_draws_the_step_its_counts_and_elapsed_and_erases_it():
    stream, stderr = io.StringIO(), sys.stderr
    line = Line(stream)
    line.start()
    try:
        line.draw("findings", 12.3, [Count("tasks", 3, 8)])
        print("cdc-monitor: window: 1.0s", file=sys.stderr)  # a step's line goes above the live one
    finally:
        line.stop()
    assert stream.getvalue().endswith("\x1b[2K")  # transient: the line erased as it stops
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    assert re.search(r"findings .*tasks 3/8 12s", text), text
    assert "cdc-monitor: window: 1.0s\n" in text
    assert sys.stderr is stderr  # given back


def test_the_render_never_touches_stdout(capsys):
    line = Line(io.StringIO())
    line.start()
    try:
        line.draw("read decode", 2, [])
        print("report")  # stdout stays the process's own
    finally:
        line.stop()
    assert capsys.readouterr().out == "report\n"


def test_generate_counts_its_events_and_the_records_it_writes(tmp_path):
    """``generate``'s live line: the generator's own count of events, then the capture's records."""
    from cdc_monitor.generator import Generator
    from cdc_monitor.generator.kcat_writer import write_capture

    generator = Generator("mysql", events=50, seed=3)
    events = Counter("events", 50, read=lambda: generator.data_events)
    traffic = generator.run()
    assert events.poll()[0].done >= 50
    written = Counter("records", len(traffic.records))
    assert write_capture(traffic, tmp_path / "c.jsonl", counter=written)["records"] == written.done == len(traffic.records)
