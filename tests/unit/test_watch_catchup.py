"""``watch``'s catch-up line: the backlog it starts with (where the stream goes on, to each
partition's high watermark) and when it is caught up."""

from __future__ import annotations

from cdc_monitor.runtime.progress import Count, Counter
from cdc_monitor.sources.kafka.options import EARLIEST, LATEST
from cdc_monitor.watch.catchup import CatchUp, backlog
from cdc_monitor.watch.state import PartitionHistory, WatchState

MARKS = {("db.t", 0): (10, 110), ("db.t", 1): (0, 40)}  # (log start, high watermark)


def test_a_new_checkpoint_starts_where_starting_offsets_say():
    assert backlog(MARKS, WatchState(), EARLIEST) == 100 + 40
    assert backlog(MARKS, WatchState(), LATEST) == 0  # nothing to catch up: no line
    assert backlog(MARKS, WatchState(), {"db.t": {0: 60}}) == 50 + 40  # a partition not named: earliest


def test_a_restart_goes_on_after_the_newest_record_its_batches_read():
    state = WatchState(batch_id=4, partitions={"db.t|0": PartitionHistory(0, 10, 0, next_offset=90)})
    assert backlog(MARKS, state, LATEST) == 20 + 40  # db.t|1 not read yet: from its log start
    state.partitions["db.t|0"].next_offset = 5  # (before the log start: records deleted since)
    assert backlog(MARKS, state, LATEST) == 100 + 40
    state.partitions["db.t|0"].next_offset = None  # a state an earlier watch wrote: not known
    assert backlog(MARKS, state, LATEST) is None


def test_caught_up_after_a_batch_under_the_cap_or_the_backlog_read():
    class Steps:
        stopped = False

        def stop(self):
            self.stopped = True

    def catch_up(total, cap):
        steps = Steps()
        return CatchUp(steps, Counter("records", total), cap), steps  # type: ignore[arg-type]

    up, steps = catch_up(250, 100)
    up.batch(100)
    assert up.counter is not None and up.counter.poll() == [Count("records", 100, 250)] and not steps.stopped
    up.batch(100)
    up.batch(50)  # under the cap: everything there was
    assert steps.stopped and up.counter is None
    up.batch(10)  # (later batches: nothing more)
    up, steps = catch_up(None, None)
    up.batch(7)  # without a cap the first batch reads the whole backlog
    assert steps.stopped
    up, steps = catch_up(200, 100)
    up.batch(100)
    up.batch(100)
    assert steps.stopped
    off = CatchUp.start(False, None, {}, (), WatchState())  # type: ignore[arg-type]
    assert off.counter is None  # off a terminal: nothing
