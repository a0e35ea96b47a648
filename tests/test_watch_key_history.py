"""watch's JVM operator (``cdc_monitor/java/Carry.java``) in a real streaming query: what a key
group emits and keeps across micro-batches and a restart, idle keys evicted, records without a key
history emitted as new, a server group's held rows carried, a table group's newest event as tail,
and a state of another format refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import types as T

from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.watch import carry
from cdc_monitor.watch.carry import STREAM_CONF, CarrySettings, carry_operator

FED = T.StructType([
    T.StructField("ctx", T.StringType()), T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()), T.StructField("offset", T.LongType()),
    T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
    T.StructField("record_us", T.LongType()), T.StructField("timestampType", T.IntegerType()),
    T.StructField("headers_json", T.StringType()), T.StructField("skind", T.StringType()),
    T.StructField("status", T.StringType()), T.StructField("txn", T.StringType()),
    T.StructField("record_ts_ms", T.LongType()), T.StructField("tbl", T.StringType()),
    T.StructField("event_count", T.LongType()),
    T.StructField("collections", T.ArrayType(T.StructType([T.StructField("data_collection", T.StringType()),
                                                           T.StructField("event_count", T.LongType())]))),
])
KEY = "K\u001ft\u001f{\"id\":1}"


def rec(ctx: str, partition: int, offset: int, skind: str | None = None, txn: str | None = None,
        ts: int | None = None) -> tuple:
    return (ctx, "t", partition, offset, b'{"id":1}', b"\xff{v}", offset * 1000, 0, '[{"key":"h","value":"dg=="}]',
            skind, None, txn, ts, None, None, None)


def run(spark, source: Path, checkpoint: Path, batches: list[list[tuple]], first: int, cfg: CarrySettings) -> list[list[tuple]]:
    """Stage ``batches`` (one Parquet file each) and run the operator over every staged file not yet
    read (availableNow); the output rows of each micro-batch."""
    source.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches, start=first):
        tmp = source.parent / f".b{i}"
        spark.createDataFrame(rows, FED).coalesce(1).write.mode("overwrite").parquet(str(tmp))
        target = source / f"b{i:03d}.parquet"
        next(tmp.glob("part-*.parquet")).rename(target)
        os.utime(target, (1_000_000 + i, 1_000_000 + i))
    for name, value in STREAM_CONF.items():
        spark.conf.set(name, value)
    got: list[list[tuple]] = []
    stream = spark.readStream.schema(FED).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (carry_operator(stream, cfg).writeStream
             .foreachBatch(lambda frame, _: got.append([tuple(r) for r in frame.collect()]))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return got


def roles(rows: list[tuple]) -> dict[str | None, list[tuple[int, int]]]:
    out: dict[str | None, list[tuple[int, int]]] = {}
    for r in sorted(rows, key=lambda r: (r[1], r[2])):
        out.setdefault(r[-1], []).append((r[1], r[2]))
    return out


def test_a_key_carries_its_last_records_per_partition_across_batches_and_a_restart(spark, tmp_path):
    cfg = CarrySettings(key_history=2, key_ttl_ms=3_600_000)
    first = run(spark, tmp_path / "in", tmp_path / "ckpt",
                [[rec(KEY, 0, 1), rec(KEY, 0, 3), rec(KEY, 0, 2), rec(KEY, 1, 9)]], 0, cfg)
    assert [roles(b) for b in first] == [{"new": [(0, 1), (0, 2), (0, 3), (1, 9)]}]
    # a new query on the same checkpoint: the state store resumes with the last 2 records per partition
    second = run(spark, tmp_path / "in", tmp_path / "ckpt", [[rec(KEY, 0, 4)], [rec(KEY, 0, 5)]], 1, cfg)
    assert [roles(b) for b in second] == [{"carried": [(0, 2), (0, 3), (1, 9)], "new": [(0, 4)]},
                                          {"carried": [(0, 3), (0, 4), (1, 9)], "new": [(0, 5)]}]
    carried = next(r for r in second[0] if r[-1] == "carried")
    # the record's fields travel unchanged (bytes that are not UTF-8 included), the group key with them
    assert carried == ("t", 0, 2, b'{"id":1}', b"\xff{v}", 2000, 0, '[{"key":"h","value":"dg=="}]', "carried")


def test_idle_keys_are_evicted_and_other_groups_carried(spark, tmp_path):
    cfg = CarrySettings(key_history=3, key_ttl_ms=1, transaction_servers=("dbserver1",))
    server, lag = "S\u001fdbserver1", "L\u001fdbserver1\u001fdb.t"
    got = run(spark, tmp_path / "in", tmp_path / "ckpt", [
        [rec(KEY, 0, 1), rec(KEY, 1, 7), rec(server, 0, 3, skind="data", txn="5", ts=100), rec(lag, 0, 1, ts=50)],
        [rec("P\u001ft\u001f0", 0, 2), rec(server, 0, 9, skind="data", txn="6", ts=101), rec(lag, 1, 8, ts=40)],
    ], 0, cfg)
    assert roles(got[0]) == {"new": [(0, 1), (1, 7)]}  # (a server or table group emits no new record)
    # the key saw no record for longer than its TTL: its history goes, one row per partition it held
    evicted = sorted(r for r in got[1] if r[-1] == "evicted")
    assert [r[:5] for r in evicted] == [("t", 0, -1, None, None), ("t", 1, -1, None, None)]
    assert [r[1:3] for r in got[1] if r[-1] == "new"] == [(0, 2)]  # no key history: new as it comes
    # the server's event on no marker yet: held as an orphan candidate (emitted with the server's next
    # rows); the table's newest event: its tail
    assert sorted((r[-1], r[1:3]) for r in got[1] if r[-1] in ("candidate", "tail")) == [("candidate", (0, 3)),
                                                                                           ("tail", (0, 1))]
    # evicted once: a later batch finds no state for it
    again = run(spark, tmp_path / "in", tmp_path / "ckpt", [[rec("P\u001ft\u001f0", 0, 4)]], 2, cfg)
    assert [r[-1] for r in again[0]] == ["new"]


def test_a_session_without_the_operator_jar_gets_a_fix_it_error(spark, monkeypatch):
    """A driver started without the jar (spark-submit without --jars): one line that says how to fix
    it, before any query starts (a class py4j cannot find, looked up in this real session)."""
    monkeypatch.setattr(carry, "OPERATOR_CLASS", "cdcmonitor.NoSuchOperator")
    with pytest.raises(EnvironmentProblem, match=r"not on the Spark driver's classpath.*spark\.jars"):
        carry_operator(spark.createDataFrame([], FED), CarrySettings())
