"""One judge per pass, whatever feeds it: each pass's output over a faulted window is the same when its
groups are read as sorted streams (a classic session: checks/passes.py) and when each group is collected
and handed to the judge's UDF (as over Spark Connect), in one partition and in several."""

from __future__ import annotations

import pytest

from cdc_monitor.checks.context import CheckContext
from cdc_monitor.checks.ordering import key_pass
from cdc_monitor.checks.passes import pass_frame
from cdc_monitor.checks.table_pass import TableRules, table_pass
from cdc_monitor.checks.transactions import data_pass
from cdc_monitor.config import ScanConfig
from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.read_window import read_window
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from cdc_monitor.sources.capture import read_capture


@pytest.fixture(scope="module", params=["mysql", "postgresql", "mongodb"])
def window(request, spark, caps, tmp_path_factory):
    path = tmp_path_factory.mktemp("feedings") / f"{request.param}.jsonl"
    write_capture(generate(request.param, events=1_500, seed=21, faults=True), path)
    cfg = ScanConfig(one_partition_rows=0)  # several partitions: the pass's own shuffle
    cache = FrameCache()
    got = read_window(read_capture(spark, [str(path)]), cfg, cache, caps, lambda *_: None)
    yield got.frames.events, CheckContext(caps, got.facts, cfg, cache)
    cache.release()


def _rows(frame) -> list[tuple]:
    return sorted(tuple(repr(v) for v in r) for r in frame.collect())


def _both(spec, events, ctx, args=None) -> tuple[list[tuple], list[tuple]]:
    streamed = _rows(pass_frame(spec, {"events": events}, ctx.session, args, streamed=True))
    collected = _rows(pass_frame(spec, {"events": events}, ctx.session, args, streamed=False))
    return streamed, collected


def test_the_key_pass_streamed_equals_collected(window):
    events, ctx = window
    from_start, args = ctx.facts.from_start_sql()
    for distribute in (True, False):
        streamed, collected = _both(key_pass(from_start, distribute), events, ctx, args)
        assert streamed == collected
        assert streamed, "the faulted window has ordering findings"


def test_the_table_pass_streamed_equals_collected(window):
    events, ctx = window
    rules = TableRules(1_000, snapshots=True, ddl_servers=ctx.facts.ddl_servers or None,
                       since=ctx.facts.lookup_sql("first_change", "concat_ws('|', server, `table`)"))
    streamed, collected = _both(table_pass(rules), events, ctx, rules.args())
    assert streamed == collected
    assert streamed, "the faulted window has lag spikes"


def test_the_transaction_pass_streamed_equals_collected(window):
    events, ctx = window
    spec, args = data_pass(ctx)
    streamed, collected = _both(spec, events, ctx, args)
    assert streamed == collected
    assert streamed, "the faulted window has transactions"


# a transaction's data events (TxnJudge's Rec fields), in no particular order: A's copies lie in another
# partition and later in A's own, between other events of the same topic; C breaks its collection's 1..n
_TXN_ROWS = [  # marker, topic, partition, offset, table, total_order, collection_order, record_ts_ms, key, txn_id, same
    (False, "t1", 0, 0, "a", 1, 1, 10, "kA", "x", 11),
    (False, "t1", 1, 3, "a", 1, 1, 10, "kA", "x", 11),  # A again, in another partition
    (False, "t1", 1, 4, "b", 2, 1, 11, "kB", "x", 22),
    (False, "t1", 0, 7, "a", 1, 1, 12, "kA", "x", 11),  # A again, later in its partition
    (False, "t1", 0, 8, "a", 3, 3, 13, "kC", "x", 33),  # collection a's second event says 3
    (False, "t1", 0, 9, "b", 4, 2, 14, "kD", "x", 44),
    (True, "txn", 0, 0, None, None, None, 9, "m", "x", None),
]


def test_the_transaction_walk_counts_copies_once_and_ranks_by_collection(spark, caps):
    from dataclasses import replace

    from cdc_monitor.checks.transactions import _FIELDS

    spec = replace(data_pass(_NoFacts())[0], records="SELECT 's' AS server, 'k' AS txn_key, *, "
                   "CAST(NULL AS bigint) AS lo, CAST(NULL AS bigint) AS hi FROM {rows}")
    rows = spark.createDataFrame(_TXN_ROWS, ", ".join(f"`{f}` {t}" for f, t in zip(_FIELDS, (
        "boolean", "string", "int", "bigint", "string", "bigint", "bigint", "bigint", "string", "string", "bigint"),
        strict=True))).repartition(3)
    for streamed in (True, False):
        (got,) = pass_frame(spec, {"rows": rows}, caps, streamed=streamed).collect()
        assert (got.seen, dict(got.seen_by_collection), got.breaks) == (4, {"a": 2, "b": 2}, 1), (streamed, got)
        assert (got.brk.offset, got.brk.total_break) == (8, False), (streamed, got)
        assert got.orphan is None


class _NoFacts:
    """The context data_pass reads: no transaction topic span."""

    class facts:
        @staticmethod
        def lookup_sql(name, key):
            return "CAST(NULL AS bigint)", {}
