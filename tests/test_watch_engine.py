"""watch's micro-batch engine without a broker: a faulty capture cut into batches (as a stream
would deliver it) must yield every labelled fault exactly once, across batch boundaries."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from pyspark.sql import functions as F

from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import label_dicts, write_capture
from cdc_monitor.sources.capture import read_capture
from cdc_monitor.watch.engine import WatchSettings, overdue, process_batch
from cdc_monitor.watch.state import StateStore, WatchState
from tests.support.watch_stream import run_stream, stage


def batches_by_time(records, cuts: int, ahead: str | None = None):
    """Cut at record-time quantiles: per partition an offset range, as a stream planning at an instant.
    The topic ``ahead`` (if any) is read whole in the first batch, as a per-trigger cap reads a
    small transaction topic ahead of the data topics: ENDs arrive before their transactions' events."""
    ts = sorted(r[0] for r in records.select(F.unix_millis("timestamp")).collect())
    bounds = [ts[len(ts) * i // cuts] for i in range(1, cuts)]
    edges = [None, *bounds, None]
    out = []
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        frame = records
        if lo is not None:
            frame = frame.where(F.unix_millis("timestamp") >= lo)
        if hi is not None:
            frame = frame.where(F.unix_millis("timestamp") < hi)
        if ahead is not None:
            frame = frame.where(F.col("topic") != ahead)
            if i == 0:
                frame = frame.unionByName(records.where(F.col("topic") == ahead))
        out.append(frame)
    return out


def rule_totals(state: WatchState) -> Counter:
    totals: Counter = Counter()
    for key, n in state.totals["findings"].items():
        totals[key.split("|")[3]] += n
    return totals


@pytest.mark.parametrize("flavour,cuts", [("mysql", 2)])  # sqlserver in bursts: tests/test_watch.py
def test_every_fault_is_counted_once_across_batches(spark, tmp_path, flavour, cuts):
    """The real streaming query (stateful carry operator on RocksDB) over micro-batches cut by record
    time, the transaction topic read ahead (whole in the first batch): a transaction whose END comes
    before its events is judged once they are in, not before."""
    traffic = generate(flavour, events=600, seed=13, faults=True, heartbeats=True)
    write_capture(traffic, tmp_path / "f.jsonl")
    expected = Counter(d["rule"] for d in label_dicts(traffic))
    records = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.cache()
    settings = WatchSettings()
    batches = batches_by_time(records, cuts, ahead=f"{traffic.flavour.server}.transaction")
    stage(batches[:1], tmp_path / "in")
    first, _ = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings)
    stage(batches[1:], tmp_path / "in", first=1)  # a restart from the checkpoint: Spark's state store resumes
    second, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings)
    assert [o.batch_id for o in first + second] == [0, 1]
    assert sum(o.records for o in first + second) == records.count()
    assert rule_totals(state) == expected  # heartbeats in the stream change nothing
    beats = [r.value["ts_ms"] for r in traffic.records if r.topic.startswith("__debezium-heartbeat.")]
    assert beats and state.heartbeats == {traffic.flavour.server: max(beats)}  # kept across batches
    # a batch Spark re-runs (it crashed before committing) is not applied twice
    store = StateStore(tmp_path / "ckpt")
    again, after = process_batch(spark, batches[-1], cuts - 1, store.load(), store, settings)
    assert again.skipped and after.totals == state.totals
    # Debezium's newest transaction is open, and overdue once past the grace period
    assert len(state.open_txns) == 1
    assert overdue(state, grace_ms=0) == {traffic.flavour.server: 1}
    assert overdue(state, grace_ms=3_600_000) == {}
