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
from cdc_monitor.runtime.session import capabilities
from cdc_monitor.watch import carry
from cdc_monitor.watch.carry import STREAM_CONF, CarrySettings, carry_operator

KEY = "K\u001ft\u001f{\"id\":1}"
REST = T.StructType([T.StructField("value_text", T.StringType())])  # (a new record's other columns: one here)


def fed_schema(spark) -> T.StructType:
    jvm = spark._jvm
    rest = jvm.org.apache.spark.sql.types.DataType.fromJson(REST.json())
    return T.StructType.fromJson(__import__("json").loads(jvm.cdcmonitor.Carry.input(rest).json()))


def rec(ctx: str, partition: int, offset: int, skind: str | None = None, txn: str | None = None,
        ts: int | None = None) -> dict:
    grouped = ctx[0] in "SL"
    return {"ctx": ctx, "topic": "t", "partition": partition, "offset": offset, "record_ts_ms": offset * 1000,
            "key": '{"id":1}', "key_payload": '{"id":1}', "kind": "data", "op": "u", "after": "-42",
            "ts_ms_raw": str(offset * 1000 + 5), "skind": skind, "txn": txn, "order_ts": ts,
            "rest": None if grouped else ("\xff{v}",)}


def run(spark, source: Path, checkpoint: Path, batches: list[list[dict]], first: int, cfg: CarrySettings) -> list[list]:
    """Stage ``batches`` (one Parquet file each) and run the operator over every staged file not yet
    read (availableNow); the output rows of each micro-batch."""
    source.mkdir(parents=True, exist_ok=True)
    fed = fed_schema(spark)
    for i, rows in enumerate(batches, start=first):
        tmp = source.parent / f".b{i}"
        spark.createDataFrame([tuple(r.get(c) for c in fed.fieldNames()) for r in rows], fed).coalesce(1) \
            .write.mode("overwrite").parquet(str(tmp))
        target = source / f"b{i:03d}.parquet"
        next(tmp.glob("part-*.parquet")).rename(target)
        os.utime(target, (1_000_000 + i, 1_000_000 + i))
    for name, value in STREAM_CONF.items():
        spark.conf.set(name, value)
    got: list[list[tuple]] = []
    stream = spark.readStream.schema(fed).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (carry_operator(stream, cfg, capabilities(spark)).writeStream
             .foreachBatch(lambda frame, _: got.append([r for r in frame.collect()]))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return got


def roles(rows: list) -> dict[str | None, list[tuple[int, int]]]:
    """Per role, the records the rows are (the findings the groups' walks judged aside: ``found``)."""
    out: dict[str | None, list[tuple[int, int]]] = {}
    for r in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        if r["role"] != carry.FOUND:
            out.setdefault(r["role"], []).append((r["partition"], r["offset"]))
    return out


def found(rows: list) -> list[tuple[str, int, int, bool]]:
    """The findings the groups' walks judged: rule, partition, offset, whether only a partition read from its start has it."""
    return sorted((r["found"]["rule"], r["partition"], r["offset"], r["found"]["first"]) for r in rows if r["role"] == carry.FOUND)


def test_a_key_carries_its_last_records_per_partition_across_batches_and_a_restart(spark, tmp_path):
    cfg = CarrySettings(key_history=2, key_ttl_ms=3_600_000)
    first = run(spark, tmp_path / "in", tmp_path / "ckpt",
                [[rec(KEY, 0, 1), rec(KEY, 0, 3), rec(KEY, 0, 2), rec(KEY, 1, 9)]], 0, cfg)
    assert [roles(b) for b in first] == [{"new": [(0, 1), (0, 2), (0, 3), (1, 9)]}]
    # the key pass judged in the operator: a key in two partitions (its home the one of its earliest record)
    assert found(first[0]) == [("key_in_multiple_partitions", 1, 9, False)]
    # a new query on the same checkpoint: the state store resumes with the last 2 records per partition
    second = run(spark, tmp_path / "in", tmp_path / "ckpt", [[rec(KEY, 0, 4)], [rec(KEY, 0, 5)]], 1, cfg)
    assert [roles(b) for b in second] == [{"carried": [(0, 2), (0, 3), (1, 9)], "new": [(0, 4)]},
                                          {"carried": [(0, 3), (0, 4), (1, 9)], "new": [(0, 5)]}]
    # a finding on a kept record was counted in its own batch; the key is still in two partitions (no missing_create)
    assert [found(b) for b in second] == [[], []]
    carried = next(r for r in second[0] if r["role"] == "carried").asDict()
    # the record's facts travel unchanged, the group key (topic, key payload) with them; not its key
    # text (a finding on a carried record is not counted) nor its other columns (the new record's)
    assert {k: v for k, v in carried.items() if v is not None} == {
        "topic": "t", "partition": 0, "offset": 2, "record_ts_ms": 2000, "ts_ms_raw": "2005", "kind": "data", "op": "u",
        "after": "-42", "key_payload": '{"id":1}', "role": "carried"}
    new = next(r for r in second[0] if r["role"] == "new").asDict(recursive=True)
    assert new["key"] == '{"id":1}' and new["rest"] == {"value_text": "\xff{v}"}


def test_a_keys_older_records_are_kept_thin_and_their_copies_still_found(spark, tmp_path):
    """Of a key's kept records, the newest and its newest change event that copies none keep their facts;
    older ones only their place, times, op and content digest (``content_hash``). Carried again, a thin
    record shows the content fields of a record of the batch with its digest (so the checks find that
    record a copy of it, as from its own fields), else a stand-in only records of its digest share."""
    cfg = CarrySettings(key_history=3, key_ttl_ms=3_600_000)

    def data(offset: int, content: int, after: str) -> dict:
        return {**rec(KEY, 0, offset), "content_hash": content, "after": after, "position": [offset, 1],
                "txn_id": f"tx{offset}", "txn_total_order": offset}

    batches = [[data(1, 11, "-1"), data(2, 22, "-2"), data(3, 33, "-3")],
               [{**data(4, 11, "-1"), "position": [1, 1], "txn_id": "tx1", "txn_total_order": 1}]]
    got = run(spark, tmp_path / "in", tmp_path / "ckpt", batches, 0, cfg)
    # the key pass judged in the operator: an update first (only where the partition was read from its
    # start), then a copy of the thin record at offset 1 processed again (found by its digest)
    assert [found(b) for b in got] == [[("missing_create", 0, 1, True)], [("replayed_after_restart", 0, 4, False)]]
    carried = {r["offset"]: r.asDict() for r in got[1] if r["role"] == "carried"}
    assert sorted(carried) == [1, 2, 3]
    content = ("before", "after", "position", "value_hash", "txn_total_order", "update_hash")
    # offset 1: thin, its content as the new copy's (its own: the copy has the same digest)
    assert {c: carried[1][c] for c in content} == {**dict.fromkeys(content), "after": "-1", "position": [1, 1],
                                                  "txn_total_order": 1}
    # offset 2: thin, no record of the batch with its content: a stand-in
    assert {c: carried[2][c] for c in content} == {**dict.fromkeys(content), "before": "~22"}
    assert carried[2]["txn_id"] is None and (carried[2]["op"], carried[2]["ts_ms_raw"]) == ("u", "2005")
    # offset 3: the newest, every fact but its transaction id (the server group's copy of an event has it)
    assert (carried[3]["after"], carried[3]["position"], carried[3]["txn_total_order"]) == ("-3", [3, 1], 3)
    assert carried[3]["txn_id"] is None


def test_idle_keys_are_evicted_and_other_groups_carried(spark, tmp_path):
    cfg = CarrySettings(key_history=3, key_ttl_ms=1, transaction_servers=("dbserver1",))
    server, lag = "S\u001fdbserver1", "L\u001fdbserver1\u001fdb.t"
    got = run(spark, tmp_path / "in", tmp_path / "ckpt", [
        [rec(KEY, 0, 1), rec(KEY, 1, 7), rec(server, 0, 3, skind="data", txn="5", ts=100), rec(lag, 0, 1, ts=50)],
        [rec("P\u001ft\u001f0", 0, 2), rec(server, 0, 9, skind="data", txn="6", ts=101), rec(lag, 1, 8, ts=40)],
    ], 0, cfg)
    assert roles(got[0]) == {"new": [(0, 1), (1, 7)]}  # (a server or table group emits no new record)
    # the key saw no record for longer than its TTL: its history goes, one row per partition it held
    evicted = sorted((r["topic"], r["partition"], r["offset"], r["key"]) for r in got[1] if r["role"] == "evicted")
    assert evicted == [("t", 0, -1, None), ("t", 1, -1, None)]
    assert [(r["partition"], r["offset"]) for r in got[1] if r["role"] == "new"] == [(0, 2)]  # no key history: new as it comes
    # the server's event on no marker yet: held as an orphan candidate (emitted with the server's next
    # rows, its key text with it: an orphan is reported there); the table's newest event: its tail
    assert sorted((r["role"], (r["partition"], r["offset"])) for r in got[1] if r["role"] in ("candidate", "tail")) == [
        ("candidate", (0, 3)), ("tail", (0, 1))]
    assert next(r for r in got[1] if r["role"] == "candidate")["key"] == '{"id":1}'
    # evicted once: a later batch finds no state for it
    again = run(spark, tmp_path / "in", tmp_path / "ckpt", [[rec("P\u001ft\u001f0", 0, 4)]], 2, cfg)
    assert [r["role"] for r in again[0]] == ["new"]


def test_a_session_without_the_operator_jar_gets_a_fix_it_error(spark, caps, monkeypatch):
    """A driver started without the jar (spark-submit without --jars): one line that says how to fix
    it, before any query starts (a class py4j cannot find, looked up in this real session)."""
    monkeypatch.setattr(carry, "OPERATOR_CLASS", "cdcmonitor.NoSuchOperator")
    with pytest.raises(EnvironmentProblem, match=r"not on the Spark driver's classpath.*spark\.jars"):
        carry_operator(spark.createDataFrame([], fed_schema(spark)), CarrySettings(), caps)


def test_more_keys_than_max_keys_are_capped_counted_and_no_finding_is_false(spark, tmp_path):
    """watch's real query (operator, then the checks) over clean MySQL traffic with many more
    distinct keys than ``max_keys``, in small batches: after each batch the key histories held stay
    within the budget, the keys capped are counted, and the rules that would need a capped key's
    history (an update after its create, a tombstone after its delete, the transactions) report
    nothing false: a capped key's next record is judged as a key seen for the first time."""
    from cdc_monitor.generator import generate
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support.watch_stream import run_stream, stage_stream

    max_keys = 16
    n = stage_stream(spark, tmp_path, events=300, batch=60, schemas=False)
    traffic = generate("mysql", events=300, seed=3, schemas=False)  # (the stream stage_stream wrote)
    keys = {(r.topic, str(r.key)) for r in traffic.records if r.key is not None and ".transaction" not in r.topic}
    assert len(keys) > 4 * max_keys
    progress: list[dict] = []
    settings = WatchSettings(max_keys=max_keys, review_ms=1,
                             transaction_servers=(traffic.flavour.server,))
    outcomes, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings, progress=progress)
    assert sum(o.records for o in outcomes) == n
    # besides the key histories the store holds a row per server, per table with a lag tail and per
    # state partition (the budget's own)
    others = 1 + len({r.topic for r in traffic.records if r.topic.count(".") == 2 and ".transaction" not in r.topic}) \
        + int(spark.conf.get("spark.sql.shuffle.partitions"))
    held = [sum(o["numRowsTotal"] for o in p["stateOperators"]) - others for p in progress if p.get("stateOperators")]
    # a key past the horizon leaves when its timeout comes (within a review: here the next batch), so a
    # batch can end with the keys it brought beyond the budget, never more (without it: every key)
    most = max(o.records for o in outcomes)
    assert len(held) == len(outcomes) and max(held) <= max_keys + most < len(keys), (held, most)
    capped = state.totals.get("keys_evicted", {}).get("max_keys", 0)
    assert capped >= len(keys) - max_keys - most
    assert sum(rule_totals(state).values()) == 0, rule_totals(state)
    txns = {r.txn_id for r in traffic.records if r.txn_id}
    assert state.totals["transactions"] == {f"{traffic.flavour.server}|complete": len(txns) - 1}


def rule_totals(state):
    from collections import Counter

    totals: Counter = Counter()
    for key, n in state.totals["findings"].items():
        totals[key.split("|")[3]] += n
    return totals
