"""watch's server and table groups (``cdc_monitor/java/ServerContext.java``, ``Carry.java``) on
hand-made rows and clocks, called through py4j: what each group keeps for the next micro-batch and
what it emits as context. (The operator in a real streaming query: tests/test_watch_key_history.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import types as T
from pyspark.sql.classic.dataframe import DataFrame

from cdc_monitor.cli.main import cli
from cdc_monitor.watch.carry import CANDIDATE, CARRIED, DATA, FACT, FED, FINAL, MARKER, PENDING, STATE_VERSION, TAIL
from cdc_monitor.watch.state import LAYOUT

S = 1000  # the clock in milliseconds: S per second


class Group:
    """One S group of a server, its state carried from call to call (a Java Row)."""

    def __init__(self, spark, server: str = "s", key_history: int = 2, await_ms: int = 60_000, final_memory: int = 3,
                 transaction_servers: tuple[str, ...] = (), topic_partitions: dict[str, int] | None = None) -> None:
        self.spark, self.server, self.jvm = spark, server, spark._jvm
        self.cfg = self.jvm.cdcmonitor.Carry(key_history, 3_600_000, await_ms, final_memory, list(transaction_servers),
                                             topic_partitions or {})
        self.state = None

    def __call__(self, rows: list[dict], now: float) -> dict[str | None, list[int]]:
        step = self.jvm.cdcmonitor.ServerContext.step(self.state, fed(self.spark, rows), int(now * S), self.cfg, self.server)
        # kept as the operator keeps it (compact bytes) and read back
        carry = self.jvm.cdcmonitor.Carry
        self.state = carry.unpack(carry.pack(step.state(), carry.SSTATE), carry.SSTATE)
        return roles(py_rows(self.spark, step.out(), output(self.jvm)))

    @property
    def st(self) -> dict:
        return py_rows(self.spark, [self.state], self.jvm.cdcmonitor.Carry.SSTATE)[0].asDict(recursive=True)

    def held(self, skind: str | None = None) -> list[int]:
        return sorted(r["offset"] for r in self.st["rows"] if skind is None or r["skind"] == skind)


def schema(jschema) -> T.StructType:
    return T.StructType.fromJson(__import__("json").loads(jschema.json()))


def output(jvm):
    return jvm.cdcmonitor.Carry.output(jvm.org.apache.spark.sql.types.StructType())


def fed(spark, rows: list[dict]):
    """Rows as the operator is fed them (``carry_input``), as Java Rows (no ``rest``: S and L rows have none)."""
    jvm = spark._jvm
    frame = spark.createDataFrame([tuple(r.get(c) for c in FED) for r in rows],
                                  schema(jvm.cdcmonitor.Carry.input(jvm.org.apache.spark.sql.types.StructType())))
    return frame._jdf.collectAsList()


def py_rows(spark, rows, jschema) -> list:
    listed = spark._jvm.java.util.ArrayList()
    for r in rows:
        listed.add(r)
    return DataFrame(spark._jsparkSession.createDataFrame(listed, jschema), spark).collect()


def roles(out: list) -> dict[str | None, list[int]]:
    """Offsets per role of a group's output rows (FACT, rest, role)."""
    got: dict[str | None, list[int]] = {}
    for r in out:
        assert tuple(r.asDict())[:len(FACT)] == FACT
        got.setdefault(r["role"], []).append(r["offset"])
    return got


def rec(ctx: str, topic: str, partition: int, offset: int, **fields) -> dict:
    return {"ctx": ctx, "topic": topic, "partition": partition, "offset": offset, "key": '{"id":1}',
            "record_ts_ms": offset, "kind": "data", **fields}


def marker(offset: int, status: str, txn: str, ts: int, counts: dict | None = None) -> dict:
    colls = None if counts is None else [(c, n) for c, n in counts.items()]
    return rec("S\u001fs", "s.transaction", 0, offset, kind="transaction", skind=MARKER, sstatus=status, txn=txn, order_ts=ts,
               event_count=None if counts is None else sum(counts.values()), collections=colls)


def data(offset: int, txn: str, ts: int, partition: int = 0) -> dict:
    return rec("S\u001fs", "s.t", partition, offset, skind=DATA, txn=txn, order_ts=ts, tbl="db.t")


def test_server_keeps_open_transactions_and_orphan_candidates_and_remembers_final_ones(spark):
    g = Group(spark)
    out = g([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110), marker(2, "BEGIN", "2", 120),
             data(10, "1", 105), data(11, "2", 121), data(12, "9", 500)], now=1000.0)
    assert out == {}  # nothing held yet; new records are emitted by their key's group
    # txn 1 is complete (final), txn 2 is open (its BEGIN and event kept), txn 9 is on no marker and
    # later than the transaction topic: an orphan candidate
    assert g.st["open"] == ["2"] and g.st["final"] == ["1"] and g.st["horizon"] == 120
    assert g.held() == [2, 11, 12]
    # next batch: BEGIN of txn 3 makes txn 2 final (missing_end); markers pass 500 so the candidate is judged
    out = g([marker(3, "BEGIN", "3", 600), data(13, "1", 130)], now=1001.0)
    assert out == {CARRIED: [2, 11], CANDIDATE: [12], FINAL: [13]}  # a late event of finished txn 1
    assert g.st["open"] == ["3"] and g.st["final"] == ["1", "2"]
    assert g.held() == [3]


def test_server_holds_no_candidates_without_a_transaction_topic_and_drops_them_after_the_wait(spark):
    g = Group(spark)
    g([data(1, "9", 100)], now=0.0)
    assert g.st["rows"] == []  # no marker ever seen: no orphans to judge later
    g = Group(spark)
    g([marker(0, "BEGIN", "1", 50), data(1, "9", 100)], now=0.0)
    assert g.held(DATA) == [1]
    g([], now=61.0)  # past await_ms
    assert g.held(DATA) == []


def test_a_server_whose_transaction_topic_is_in_the_stream_holds_events_read_before_its_first_marker(spark):
    g = Group(spark, transaction_servers=("s",))
    g([data(1, "1", 105), data(2, "1", 106)], now=0.0)
    assert g.held() == [1, 2]  # the transaction topic has not been read yet
    other = Group(spark, server="t", transaction_servers=("s",))
    other([data(1, "1", 105)], now=0.0)
    assert other.st["rows"] == []  # (another server, whose transaction topic the stream does not read)
    out = g([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}), marker(2, "BEGIN", "2", 120)],
            now=1.0)
    assert out == {CANDIDATE: [1, 2]}  # judged with their transaction, now final
    assert g.st["final"] == ["1"] and g.held() == [2]  # (only the open BEGIN of txn 2 left)


def test_an_ended_transaction_is_held_while_its_events_are_on_their_way(spark):
    """A per-trigger cap reads the transaction topic ahead: END (2 events of db.t) arrives with one
    of them, its partition's newest record still before the END's time: held (pending), not final."""
    g = Group(spark)
    out = g([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}), marker(2, "BEGIN", "2", 120),
             data(10, "1", 105)], now=0.0)
    assert out == {PENDING: [1]} and g.st["open"] == ["1", "2"] and g.st["final"] == []
    # the second event arrives: complete, final; its markers and events go with it
    out = g([data(11, "1", 108)], now=1.0)
    assert sorted(out[CARRIED]) == [0, 1, 2, 10] and PENDING not in out and g.st["final"] == ["1"] and g.st["open"] == ["2"]
    assert g.held() == [2]
    # short but its collection's partition has passed the END's time: nothing more is coming, final now
    out = g([marker(3, "END", "2", 130, {"db.t": 2}), marker(4, "BEGIN", "3", 140), data(12, "2", 125),
             data(13, "3", 141)], now=2.0)
    assert PENDING not in out and g.st["final"] == ["1", "2"]
    # short, its partition read up to before the END's time: held; after await_ms with the same
    # partition behind, final (a genuinely incomplete transaction)
    out = g([marker(5, "END", "3", 150, {"db.t": 3}), marker(6, "BEGIN", "4", 160), data(14, "4", 145)], now=3.0)
    assert out[PENDING] == [5]
    out = g([data(15, "4", 146)], now=3.0 + 60)
    assert PENDING not in out and g.st["final"][-1] == "3"
    # one partition of the short collection passed the END, another (quiet) has not: held, as its
    # missing events may be there; a collection never seen at all: held too
    out = g([marker(7, "END", "4", 170, {"db.t": 5}), marker(8, "BEGIN", "5", 180), data(16, "4", 175),
             data(17, "5", 165, partition=1), marker(9, "END", "5", 190, {"db.u": 1}), marker(10, "BEGIN", "6", 200)],
            now=70.0)
    assert sorted(out[PENDING]) == [7, 9]
    out = g([data(18, "6", 201, partition=0), data(19, "6", 202, partition=1)], now=71.0)
    assert out[PENDING] == [9] and g.st["final"][-1] == "4"  # partition 1 passes END 4's time: final; db.u still never seen


def test_a_held_end_waits_for_partitions_that_have_shown_no_event_of_a_transaction(spark):
    """db.t has two partitions; partition 0 has passed the END's time, partition 1 has shown only
    records outside transactions (a snapshot) so far: with the topics' partition counts, held;
    without them (a partition never seen is not known to exist), judged at once."""
    batch = [marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}), marker(2, "BEGIN", "2", 120),
             data(10, "1", 105), data(11, "2", 121)]
    g = Group(spark, topic_partitions={"s.t": 2})
    assert g(batch, now=0.0) == {PENDING: [1]} and g.st["final"] == []
    out = g([data(3, "1", 107, partition=1)], now=1.0)
    assert PENDING not in out and g.st["final"] == ["1"]  # its second event: complete
    assert PENDING not in Group(spark)(batch, now=0.0)


def test_final_memory_is_bounded(spark):
    g = Group(spark)
    for i in range(5):
        g([marker(2 * i, "BEGIN", str(i), i), marker(2 * i + 1, "END", str(i), i)], now=0.0)
    assert g.st["final"] == ["2", "3", "4"]


def tail(spark, held, rows: list[dict]):
    out = spark._jvm.java.util.ArrayList()
    kept = spark._jvm.cdcmonitor.Carry.tail(held, fed(spark, rows), out)
    return roles(py_rows(spark, out, output(spark._jvm))), kept


def test_tail_keeps_the_newest_change_event_per_table(spark):
    lag = "L\u001fs\u001fdb.t"
    out, held = tail(spark, None, [rec(lag, "t", 0, 1, order_ts=50), rec(lag, "t", 1, 7, order_ts=40)])
    assert out == {} and held.getLong(2) == 1
    out, held = tail(spark, held, [rec(lag, "t", 1, 8, order_ts=45)])
    assert out == {TAIL: [1]} and held.getLong(2) == 1  # an older event does not replace it
    out, held = tail(spark, held, [rec(lag, "t", 0, 1, order_ts=30)])  # the topic created again: offset 1 anew
    assert out == {} and held.getLong(2) == 1 and held.getLong(len(FACT)) == 30  # the earlier log's event is not carried


@pytest.mark.parametrize("old", [None, "state beside the checkpoint", "one Python operator", "a Python server operator",
                                 "whole records as state", "facts in the earlier format", "Spark's checkpoint only",
                                 "this layout"])
def test_a_checkpoint_of_the_earlier_format_is_refused_before_spark(tmp_path, old):
    state = tmp_path / "cdc-state"
    state.mkdir()
    if old == "state beside the checkpoint":
        (state / "CURRENT").write_text("batch-3")
    elif old == "one Python operator":  # driver state saved, no layout written
        (state / "state.json").write_text("{}")
    elif old == "a Python server operator":
        (state / "state.json").write_text("{}")
        (state / "layout").write_text("2\n")
    elif old == "whole records as state":  # (Carry.VERSION 1: the JVM operator holding whole Kafka records)
        (state / "state.json").write_text("{}")
        (state / "layout").write_text("3\n")
    elif old == "facts in the earlier format":  # (Carry.VERSION 2: every kept record's facts whole)
        (state / "state.json").write_text("{}")
        (state / "layout").write_text("4\n")
    elif old == "Spark's checkpoint only":
        (tmp_path / "spark" / "commits").mkdir(parents=True)
        (tmp_path / "spark" / "commits" / "0").write_text("v1\n{}")
    elif old == "this layout":
        (state / "state.json").write_text("{}")
        (state / "layout").write_text(f"{LAYOUT}\n")
    refused = old not in (None, "this layout")
    result = CliRunner().invoke(cli, ["watch", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint", str(tmp_path)])
    assert result.exit_code == 2
    assert ("new --checkpoint" in result.output) == refused
    if old == "a Python server operator":
        assert "Python operator" in result.output and len(result.output.strip().splitlines()) == 1
    if old == "whole records as state":
        assert "whole Kafka records" in result.output and len(result.output.strip().splitlines()) == 1
    if old == "facts in the earlier format":
        assert "earlier format" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_state_of_another_format_version_is_refused_with_what_to_do(spark):
    jvm = spark._jvm
    g = Group(spark)
    g([marker(0, "BEGIN", "1", 100)], now=0.0)
    kept = jvm.cdcmonitor.Carry.pack(g.state, jvm.cdcmonitor.Carry.SSTATE)
    assert jvm.cdcmonitor.Carry.checked(kept).getInt(0) == jvm.cdcmonitor.Carry.VERSION == STATE_VERSION == 3
    # version 1: the operator that held whole Kafka records (its state had 8 fields, the version first)
    fields = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 8)
    fields[0] = 1
    other = jvm.org.apache.spark.sql.RowFactory.create(fields)
    with pytest.raises(Exception, match=r"format version 1, this cdc-monitor reads version 3: start watch with a new --checkpoint"):
        jvm.cdcmonitor.Carry.checked(other)
    with pytest.raises(Exception, match=r"format version 1, this cdc-monitor reads version 3"):
        jvm.cdcmonitor.Carry.unpack(other, jvm.cdcmonitor.Carry.SSTATE)
    # version 2: the same facts in the earlier bytes (version, bytes), as version 3 keeps them
    two = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 2)
    two[0], two[1] = 2, kept.get(1)
    earlier = jvm.org.apache.spark.sql.RowFactory.create(two)
    with pytest.raises(Exception, match=r"format version 2, this cdc-monitor reads version 3: start watch with a new --checkpoint"):
        jvm.cdcmonitor.Carry.unpack(earlier, jvm.cdcmonitor.Carry.SSTATE)


# A checkpoint written by the watch before this operator (5cea2be: the server and table groups in a
# Python operator), three micro-batches of a small stream (tests/support/watch_stream.run_stream run
# in a worktree of that commit); kept: cdc-state and Spark's metadata, offsets and commits, not the
# state store's files (Spark never reads them: the refusal comes first).
LAYOUT2 = Path(__file__).parent / "golden" / "watch-checkpoint-layout2"


@pytest.mark.parametrize("kept", ["whole", "without cdc-state/layout", "without cdc-state"])
def test_a_checkpoint_written_before_the_jvm_context_is_refused_in_one_line(tmp_path, kept):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(LAYOUT2, ckpt)
    if kept == "without cdc-state/layout":
        (ckpt / "cdc-state" / "layout").unlink()
    elif kept == "without cdc-state":
        shutil.rmtree(ckpt / "cdc-state")
    result = CliRunner().invoke(cli, ["watch", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint", str(ckpt)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "written by an earlier cdc-monitor watch" in lines[0]
    assert "start watch with a new --checkpoint folder" in lines[0]
    if kept == "whole":
        assert "Python operator" in lines[0]


def test_a_keys_state_round_trips_in_a_few_dozen_bytes_a_record(spark):
    """A K group's state as the operator keeps it (``Codec``, the group's key as context) reads back
    equal, whatever its texts (integers, texts ending in one, parts of the key, others, non-ASCII) and
    absent fields; a key's records and a server's finished ids cost a few bytes each."""
    jvm = spark._jvm
    carry = jvm.cdcmonitor.Carry
    ctx = "K\u001fmysql_server_1.inventory.customers\u001f{\"id\":7}"
    records = []
    for i in range(3):
        records.append({
            "partition": 2, "offset": 1_000 + 3 * i, "record_ts_ms": 1_767_225_603_000 + 40 * i,
            "ts_ms": 1_767_225_603_200 + 40 * i, "ts_ms_raw": str(1_767_225_603_200 + 40 * i), "kind": "data",
            "server": "mysql_server_1", "table": "inventory.customers", "op": "cu"[min(i, 1)], "snapshot": False,
            "snapshot_marker": "false", "txn_id": f"3e11fa47-71ca-11e1-9e33-c80aa9429562:{20 + i}",
            "txn_total_order": 1 + i, "position": [3, 154 + 90 * i, None], "flavour": "mysql", "has_source": True,
            "before": None if i == 0 else str(-4_611_686_018_427_387_904 + i), "after": f"ä€-{i}",
            "value_schema_hash": 8_070_450_532_247_928_832, "data_event": True, "change_event": True,
            "snapshot_event": False, "content_hash": -1_234_567_890_123 * (i + 1), "source_lsn": "0001:x00",
        })
    kstate = schema(carry.KSTATE)
    row = (1_767_225_700_000, [tuple(r.get(f.name) for f in kstate["h"].dataType.elementType.fields) for r in records], [0])
    j = spark.createDataFrame([row], kstate)._jdf.collectAsList().get(0)
    kept = carry.pack(j, carry.KSTATE, ctx)
    back = py_rows(spark, [carry.unpack(kept, carry.KSTATE, ctx)], carry.KSTATE)[0]
    assert back == spark.createDataFrame([row], kstate).collect()[0]
    assert len(kept.get(1)) <= 3 * 80  # (its GTID prefix once; as whole texts and 64-bit longs: about 600 bytes)
    # a server's finished transaction ids: MySQL GTIDs and PostgreSQL txIds, a few bytes each
    sstate = schema(carry.SSTATE)
    for ids in ([f"3e11fa47-71ca-11e1-9e33-c80aa9429562:{n}" for n in range(5_000, 6_000)],
                [str(n) for n in range(571, 1_571)]):
        j = spark.createDataFrame([([], ids, 5, [], [])], sstate)._jdf.collectAsList().get(0)
        kept = carry.pack(j, carry.SSTATE, "S\u001fs")
        assert py_rows(spark, [carry.unpack(kept, carry.SSTATE, "S\u001fs")], carry.SSTATE)[0]["final"] == ids
        assert len(kept.get(1)) <= 4 * len(ids)  # (as whole texts: 4-42 bytes each)
