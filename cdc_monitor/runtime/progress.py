"""The live line of a running step, on a terminal only (docs/scanning.md, "On a terminal").

While a step runs longer than ``SHOW_AFTER_S``, one line on stderr says its name, its elapsed time
and what its source counts: Spark's tasks done of total over the running stages (``SparkTasks``:
the status tracker of a classic session; ``ConnectTasks``: a Spark Connect session's progress
handler), or a count the step keeps itself (``Counter``: events generated, records read). The line
is rich's progress display, drawn on stderr and erased when the steps end; the lines a step prints
as it finishes go above it (rich redirects ``sys.stderr`` while it is drawn; stdout is never touched:
reports go there).

Three parts, apart: the sources (``poll()``: what there is to count now), the render (``Line``:
only draws what it is given), and the poller (``Live``: a daemon thread reading the source
``POLL_HZ`` times a second, started on entry, stopped and joined on exit). Not a terminal, or
``--quiet``: ``live_steps`` returns ``Off``, which starts no thread, creates no source and draws
nothing, so the output and the work are exactly those of a run without it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdc_monitor.runtime.session import SessionCaps

SHOW_AFTER_S = 1.0  # a step shorter than this never shows a line
POLL_HZ = 4.0
T = TypeVar("T")


def on_terminal(quiet: bool = False, stream: TextIO | None = None) -> bool:
    """Whether a run draws the live line: stderr is a terminal (not a dumb one), and the run is
    not ``--quiet``."""
    stream = sys.stderr if stream is None else stream
    try:  # (a dumb terminal cannot erase the line)
        return not quiet and stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


@dataclass(frozen=True)
class Count:
    """One thing a step counts: ``tasks 3/8``, ``records 1,200`` (no total known)."""

    unit: str
    done: int
    total: int | None = None

    def __str__(self) -> str:
        return f"{self.unit} {self.done:,}" + ("" if self.total is None else f"/{self.total:,}")


class Source(Protocol):
    def poll(self) -> list[Count]: ...  # what there is to count now (nothing: an empty list)
    def close(self) -> None: ...


class SparkTasks:
    """Tasks done of total over the running stages, from a classic session's status tracker
    (``SparkContext.statusTracker()``, public)."""

    def __init__(self, spark: SparkSession) -> None:
        self.tracker = spark.sparkContext.statusTracker()

    def poll(self) -> list[Count]:
        infos = [i for i in (self.tracker.getStageInfo(s) for s in self.tracker.getActiveStageIds()) if i is not None]
        if not infos:
            return []
        return [Count("tasks", sum(i.numCompletedTasks for i in infos), sum(i.numTasks for i in infos))]

    def close(self) -> None:
        pass


class ConnectTasks:
    """The same over Spark Connect: the session's progress handler (``registerProgressHandler``,
    pyspark 4.0) is told the stages of the running operation; their tasks not done yet count."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.latest: list[Count] = []
        spark.registerProgressHandler(self.handle)  # type: ignore[attr-defined]

    def handle(self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        running = [s for s in (stages or ()) if not s.done]
        self.latest = [] if done or not running else [
            Count("tasks", sum(s.num_completed_tasks for s in running), sum(s.num_tasks for s in running))]

    def poll(self) -> list[Count]:
        return self.latest

    def close(self) -> None:
        self.spark.removeProgressHandler(self.handle)  # type: ignore[attr-defined]


def spark_tasks(session: SessionCaps) -> Source:
    """Spark's tasks where ``session`` tells them: its status tracker, or its progress handler."""
    return SparkTasks(session.spark) if session.status_tracker else ConnectTasks(session.spark)


class Counter:
    """A count the step keeps itself: ``add`` (or ``counting`` an iterable), or ``read``, a
    function the poller calls (an attribute of the step's own object)."""

    def __init__(self, unit: str, total: int | None = None, read: Callable[[], int] | None = None) -> None:
        self.unit, self.total, self.read = unit, total, read
        self.done = 0

    def add(self, n: int) -> None:
        self.done += n

    def counting(self, items: Iterable[T]) -> Iterator[T]:
        for item in items:
            yield item
            self.done += 1

    def poll(self) -> list[Count]:
        return [Count(self.unit, self.read() if self.read is not None else self.done, self.total)]

    def close(self) -> None:
        pass


class Both:
    """Several sources on one line (``watch``'s catch-up: its records, and Spark's tasks)."""

    def __init__(self, *sources: Source) -> None:
        self.sources = sources

    def poll(self) -> list[Count]:
        return [c for s in self.sources for c in s.poll()]

    def close(self) -> None:
        for s in self.sources:
            s.close()


class Line:
    """The render: rich's progress display on ``stream`` (transient: erased when stopped), one
    line drawn from what ``draw`` is given. The bar follows the first count with a total."""

    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        console = Console(file=sys.stderr if stream is None else stream, force_terminal=True)
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                                 TextColumn("{task.fields[counts]}", markup=False), TextColumn("{task.fields[elapsed]}"),
                                 console=console, transient=True, auto_refresh=False, redirect_stdout=False)
        self.task = self.progress.add_task("", total=None, visible=False, counts="", elapsed="")

    def start(self) -> None:
        self.progress.start()

    def draw(self, name: str, elapsed: float, counts: list[Count]) -> None:
        bar = next((c for c in counts if c.total), None)
        self.progress.update(self.task, description=name, visible=True, counts="  ".join(map(str, counts)),
                             elapsed=f"{elapsed:.0f}s", completed=bar.done if bar else 0,
                             total=bar.total if bar else None)
        self.progress.refresh()

    def hide(self) -> None:
        self.progress.update(self.task, visible=False)
        self.progress.refresh()

    def stop(self) -> None:
        self.progress.stop()


class Live:
    """The steps of a run on the live line: ``step(name)`` starts the next (its elapsed time from
    then), ``source`` what it counts. A daemon thread polls; it never keeps the process alive and
    ends with the block (or ``stop``)."""

    def __init__(self, first: str, source: Callable[[], Source], line: Callable[[], Line] = Line,
                 show_after: float = SHOW_AFTER_S, hz: float = POLL_HZ) -> None:
        self.name: str | None = first
        self.since = time.monotonic()
        self._source_of, self._line_of, self.show_after, self.interval = source, line, show_after, 1 / hz
        self.source: Source | None = None
        self.line: Line | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def __enter__(self) -> Live:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.source, self.line = self._source_of(), self._line_of()
        self.line.start()
        self.since = time.monotonic()
        self.thread = threading.Thread(target=self._run, name="cdc-monitor-progress", daemon=True)
        self.thread.start()

    def step(self, name: str, source: Source | None = None) -> None:
        with self.lock:
            self.name, self.since = name, time.monotonic()
            if source is not None:
                old, self.source = self.source, source
                if old is not None:
                    old.close()

    def counter(self, name: str, unit: str, total: int | None = None) -> Counter | None:
        """``step(name)`` counted by the step itself: the counter it updates."""
        counter = Counter(unit, total)
        self.step(name, counter)
        return counter

    def idle(self) -> None:
        """No step runs (the last one ended): the line is hidden until the next ``step``."""
        with self.lock:
            self.name = None
            if self.line is not None:
                self.line.hide()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=5)
        with self.lock:
            line, source, self.line, self.source = self.line, self.source, None, None
        if line is not None:
            line.stop()
        if source is not None:
            source.close()

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            with self.lock:
                name, elapsed, source = self.name, time.monotonic() - self.since, self.source
            try:
                counts = source.poll() if source is not None and name is not None and elapsed >= self.show_after else []
                with self.lock:
                    if self.line is None or self.stopping.is_set():
                        return
                    if self.name != name:  # the step changed under the poll: drawn at the next
                        continue
                    if name is None or elapsed < self.show_after:
                        self.line.hide()
                    else:
                        self.line.draw(name, elapsed, counts)
            except Exception:  # a session stopping under the poll: the line waits for the next
                continue


class Off:
    """No terminal, or ``--quiet``: nothing drawn, no thread, no source (``live_steps``)."""

    def __enter__(self) -> Off:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def step(self, name: str, source: Source | None = None) -> None:
        pass

    def counter(self, name: str, unit: str, total: int | None = None) -> Counter | None:
        return None

    def idle(self) -> None:
        pass


def live_steps(enabled: bool, first: str, source: Callable[[], Source]) -> Live | Off:
    """The live line of a run whose first step is ``first`` and whose steps count with
    ``source()`` (called only when ``enabled``: ``on_terminal``)."""
    return Live(first, source) if enabled else Off()
