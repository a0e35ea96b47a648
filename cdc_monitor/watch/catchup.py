"""``watch``'s catch-up on a terminal: the records its batches read of the backlog it started with,
and Spark's tasks, on a live line (runtime/progress.py) until it is caught up.

The backlog is measured once, as the watch starts, and only on a terminal: each selected
partition's high watermark (one broker request a partition) less where the stream goes on from,
the offset after the newest record the checkpoint's batches read there
(``PartitionHistory.next_offset``, kept with the state); a partition the stream has not read
starts at its log start (a new checkpoint: at ``--starting-offsets``). A state an earlier watch
wrote does not say where it stopped: the records are counted without a total. Caught up: a batch
read fewer records than the per-trigger cap (without one, the first batch reads the whole
backlog), or the batches have read the backlog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdc_monitor.runtime.progress import Both, Counter, Live, Off, spark_tasks
from cdc_monitor.sources.kafka.options import EARLIEST, LATEST, KafkaOptions

if TYPE_CHECKING:
    from cdc_monitor.runtime.session import SessionCaps
    from cdc_monitor.watch.state import WatchState


def start_offset(starting: object, topic: str, partition: int, low: int, high: int) -> int:
    """Where a new checkpoint reads ``topic``'s ``partition`` from (``--starting-offsets``, or a
    per-partition spec)."""
    spec = starting.get(topic, {}).get(partition, EARLIEST) if isinstance(starting, dict) else starting
    return low if spec == EARLIEST else high if spec == LATEST else int(spec)  # type: ignore[call-overload]


def backlog(marks: Mapping[tuple[str, int], tuple[int, int]], state: WatchState, starting: object) -> int | None:
    """The records between where the stream goes on and each partition's high watermark
    (``marks``: (log start, high watermark)); None: a partition's position is not known."""
    total = 0
    for (topic, partition), (low, high) in marks.items():
        h = state.partitions.get(f"{topic}|{partition}")
        if h is not None and h.next_offset is None:
            return None
        if h is not None:
            begin = max(low, h.next_offset or 0)
        elif state.batch_id >= 0:  # a partition the checkpoint has not read: from its log start
            begin = low
        else:
            begin = start_offset(starting, topic, partition, low, high)
        total += max(0, high - begin)
    return total


class CatchUp:
    """The catch-up's live line: ``start`` (on a terminal only), ``batch`` per applied batch,
    ``stop`` when the watch stops."""

    def __init__(self, steps: Live | Off | None = None, counter: Counter | None = None, cap: int | None = None) -> None:
        self.steps, self.counter, self.cap = steps or Off(), counter, cap

    @classmethod
    def start(cls, live: bool, session: SessionCaps, options: Mapping[str, str],
              topic_partitions: tuple[tuple[str, int], ...], state: WatchState) -> CatchUp:
        if not live:
            return cls()
        from cdc_monitor.sources.kafka.client import BrokerInspector

        opts = KafkaOptions.from_options(dict(options))
        try:
            with BrokerInspector(opts) as insp:
                marks = insp.watermarks([(t, p) for t, n in topic_partitions for p in range(n)])
            total = backlog(marks, state, opts.starting)
        except Exception:  # the broker is the query's to report: the line counts without a total
            total = None
        if total == 0:
            return cls()
        counter = Counter("records", total)
        steps = Live("catch-up", lambda: Both(counter, spark_tasks(session)))
        steps.start()
        return cls(steps, counter, opts.max_offsets_per_trigger)

    def batch(self, records: int) -> None:
        """A batch applied, ``records`` read: caught up once it read less than a cap allows (any
        batch without a cap), or the backlog."""
        if self.counter is None:
            return
        self.counter.add(records)
        total = self.counter.total
        if self.cap is None or records < self.cap or (total is not None and self.counter.done >= total):
            self.stop()

    def stop(self) -> None:
        self.steps.stop()
        self.counter = None
