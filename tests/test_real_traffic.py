"""Real traffic that gave false alarms or was missed: hand-made records written from the producers'
documented output (each test cites it)."""

from __future__ import annotations

import collections
import json

from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000


def _counts(result) -> collections.Counter:
    return collections.Counter(f["rule"] for f in result.findings)


def test_a_debezium_format_sink_without_source_is_one_note_per_topic(scan, tmp_path):
    """Apache Flink's ``debezium-json`` format, used as a sink, writes a changelog row as ``before``,
    ``after`` and ``op`` only (Flink docs, Connectors > Formats > Debezium): no source block, so no
    source fields, source time or position to judge. One
    ``non_debezium_producer`` note for the topic, with its count; the rules that still apply (op,
    before/after, keys) still run."""
    lines = []
    for i in range(40):
        value = {"before": None, "after": {"id": i, "v": "x"}, "op": "c"}
        lines.append(kcat_line("flink.orders", 0, i, json.dumps({"id": i}), json.dumps(value), BASE + i))
    bad = {"before": {"id": 99}, "after": None, "op": "c"}  # a create with before and no after: still judged
    lines.append(kcat_line("flink.orders", 0, 40, json.dumps({"id": 99}), json.dumps(bad), BASE + 40))
    result = scan([write_lines(tmp_path / "flink.jsonl", lines)])
    assert _counts(result) == {"non_debezium_producer": 1, "before_after_mismatch": 1}, _counts(result)
    (note,) = [f for f in result.findings if f["rule"] == "non_debezium_producer"]
    assert (note["topic"], note["offset"], note["severity"]) == ("flink.orders", 0, "info")
    assert note["message"].startswith("41 change event(s) carry no source block")
    assert result.summary["invalid_records"] == 0


def _mysql(i: int, op: str, row: dict, *, key: str | None = None, pos: int | None = None, snapshot: str = "false",
           table: str = "customers") -> str:
    """A Debezium MySQL change event (Debezium docs, MySQL connector, "Data change events")."""
    source = {"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": BASE + i * 1000,
              "snapshot": snapshot, "db": "inventory", "table": table, "server_id": 223344, "gtid": None,
              "file": "mysql-bin.000003", "pos": 1000 + (i if pos is None else pos), "row": 0}
    value = {"before": row if op == "d" else None, "after": None if op == "d" else row, "source": source, "op": op,
             "ts_ms": BASE + i * 1000 + 50, "transaction": None}
    key_text = key if key is not None else json.dumps({"id": row["id"]})
    return kcat_line(f"dbserver1.inventory.{table}", 0, i, key_text, json.dumps(value), BASE + i * 1000 + 60)


def test_a_key_is_its_payload_value_whatever_its_wrapper_whitespace_or_field_order(scan, tmp_path):
    """The same key written bare, with the JSON converter's schema wrapper, with other whitespace and
    field order (two converters or a converter change mid-stream) is one key: its replays are
    duplicates and its history is one history."""
    schema = {"type": "struct", "name": "dbserver1.inventory.customers.Key", "optional": False,
              "fields": [{"field": "id", "type": "int32", "optional": False},
                         {"field": "region", "type": "string", "optional": False}]}
    row = {"id": 1001, "region": "eu", "name": "Sally"}
    lines = [
        _mysql(0, "c", row, key='{"id":1001,"region":"eu"}'),
        # the same event again, its key wrapped with the schema, fields reordered: a duplicate
        _mysql(0, "c", row, key=json.dumps({"schema": schema, "payload": {"region": "eu", "id": 1001}})).replace(
            '"offset": 0', '"offset": 1'),
        _mysql(2, "d", row, key='{ "region" : "eu", "id" : 1001 }'),
        # an update after the delete, its key bare with other whitespace: the same key's history
        _mysql(3, "u", {**row, "name": "Sal"}, key='{"id": 1001,  "region": "eu"}'),
    ]
    result = scan([write_lines(tmp_path / "keys.jsonl", lines)])
    found = sorted((f["rule"], f["offset"]) for f in result.findings)
    assert found == [("duplicate", 1), ("event_after_delete", 3)], found


def _mongo_update(i: int, offset: int, total_order: int, changed: dict, *, txn: str | None = "9d5e1c2a-77aa-4c41-9a0e-1c2f0e0d7b11:3",
                  ord_: int = 7) -> str:
    """Debezium 2.x MongoDB update without full-document lookup (Debezium docs, MongoDB connector,
    "update events": ``after`` null, ``updateDescription``); every operation of one MongoDB
    transaction shares one cluster time, so ``source.ts_ms`` (seconds) and ``ord`` tie, and the
    ``transaction`` block orders them (``<lsid>:<txnNumber>`` ids)."""
    source = {"version": "2.7.3.Final", "connector": "mongodb", "name": "mongo1", "ts_ms": BASE + i * 1000,
              "snapshot": "false", "db": "shop", "rs": "rs0", "collection": "carts", "ord": ord_, "lsid": txn and txn.split(":")[0],
              "txnNumber": 3}
    value = {"after": None, "updateDescription": {"removedFields": None, "updatedFields": json.dumps(changed),
                                                  "truncatedArrays": None},
             "source": source, "op": "u", "ts_ms": BASE + i * 1000 + 20,
             "transaction": {"id": txn, "total_order": total_order, "data_collection_order": total_order} if txn else None}
    key = json.dumps({"id": json.dumps({"$oid": "65a1f0c2e4b0a1b2c3d4e5f6"})})
    return kcat_line("mongo1.shop.carts", 0, offset, key, json.dumps(value), BASE + i * 1000 + 30)


def test_mongodb_updates_in_one_transaction_are_not_duplicates(scan, tmp_path):
    # read from offset 10: the document was created before the window (no missing_create to judge)
    lines = [
        # two updates of one document in one transaction: same cluster time and ord, told apart by total_order
        _mongo_update(0, 10, 1, {"qty": 1}),
        _mongo_update(0, 11, 2, {"qty": 2}),
        # the same change twice in one transaction (set qty to 2 again): still two operations
        _mongo_update(0, 12, 3, {"qty": 2}),
        # a redelivery of the second update (same transaction place, same change): the one duplicate
        _mongo_update(0, 13, 2, {"qty": 2}),
        # outside transactions: two updates tied in position but saying different changes
        _mongo_update(5, 14, 0, {"qty": 5}, txn=None, ord_=1),
        _mongo_update(5, 15, 0, {"qty": 6}, txn=None, ord_=1),
    ]
    result = scan([write_lines(tmp_path / "mongo_txn.jsonl", lines)])
    found = sorted((f["rule"], f["offset"]) for f in result.findings)
    assert found == [("duplicate", 13)], found


def _redelivered(line: str, offset: int) -> str:
    """The same record written to the topic again later: a new offset and Kafka time, the same value."""
    record = json.loads(line)
    return json.dumps({**record, "offset": offset, "ts": BASE + offset * 1000 + 60})


def test_a_replayed_snapshot_read_is_one_duplicate_not_also_a_restarted_snapshot(scan, tmp_path):
    """One cause, one finding: a snapshot read delivered again after streaming began is a redelivery
    (``duplicate``); a table snapshotted again reads at a new position (``snapshot_restarted``)."""
    lines = [
        _mysql(0, "r", {"id": 1, "name": "a"}, snapshot="true", pos=0),
        _mysql(1, "r", {"id": 2, "name": "b"}, snapshot="last", pos=0),
        _mysql(2, "u", {"id": 2, "name": "bb"}),
        _redelivered(_mysql(0, "r", {"id": 1, "name": "a"}, snapshot="true", pos=0), offset=3),
    ]
    result = scan([write_lines(tmp_path / "replay.jsonl", lines)])
    assert sorted((f["rule"], f["offset"]) for f in result.findings) == [("duplicate", 3)]
    # a real second snapshot (a new position) after streaming is still a restart
    again = [*lines[:3], _mysql(3, "r", {"id": 1, "name": "a"}, snapshot="true", pos=500)]
    result = scan([write_lines(tmp_path / "again.jsonl", again)])
    assert sorted((f["rule"], f["offset"]) for f in result.findings) == [("snapshot_restarted", 3)]


def test_snapshot_flag_against_op(scan, tmp_path):
    """Debezium's connectors write snapshot reads as op r with source.snapshot true/first/last (or
    *_in_data_collection, incremental for incremental snapshot chunks) and streamed changes with
    false (Debezium docs, MySQL connector, "snapshot" in the source metadata table)."""
    lines = [
        _mysql(0, "r", {"id": 1}, snapshot="first", pos=0),
        _mysql(1, "r", {"id": 2}, snapshot="last_in_data_collection", pos=0),
        _mysql(2, "r", {"id": 3}, snapshot="incremental", pos=0),
        _mysql(3, "c", {"id": 4}),
        _mysql(4, "u", {"id": 4}, snapshot="true"),  # a streamed change marked as a snapshot
        _mysql(5, "r", {"id": 5}, snapshot="false"),  # a snapshot read marked as streamed
        _mysql(6, "c", {"id": 6}, snapshot="incremental"),
    ]
    result = scan([write_lines(tmp_path / "snap.jsonl", lines)])
    found = sorted((f["rule"], f["offset"]) for f in result.findings)
    assert found == [("snapshot_op_mismatch", 4), ("snapshot_op_mismatch", 5), ("snapshot_op_mismatch", 6)], found


def _marker(offset: int, status: str, txn_id: str | None, ts_ms: int, count: int = 1) -> str:
    """A transaction metadata marker (Debezium docs, "Transaction metadata": BEGIN/END with id, ts_ms,
    event_count and data_collections on END)."""
    value: dict = {"status": status, "id": txn_id, "ts_ms": ts_ms, "event_count": None, "data_collections": None}
    if status == "END":
        value |= {"event_count": count,
                  "data_collections": [{"data_collection": "inventory.customers", "event_count": count}]}
    return kcat_line("dbserver1.transaction", 0, offset, json.dumps({"id": txn_id}), json.dumps(value), BASE + offset * 1000)


def _txn_event(i: int, txn_id: str, order: int) -> str:
    line = json.loads(_mysql(i, "c", {"id": 100 + i}))
    value = json.loads(line["payload"])
    value["transaction"] = {"id": txn_id, "total_order": order, "data_collection_order": order}
    return json.dumps({**line, "payload": json.dumps(value)})


def test_transaction_markers_ids_times_and_repeated_orders(scan, tmp_path):
    lines = [
        # a complete transaction whose END is stamped before its BEGIN
        _marker(0, "BEGIN", "gtid:1", BASE + 5000), _marker(1, "END", "gtid:1", BASE + 4000),
        # markers with a null and an empty id
        _marker(2, "BEGIN", None, BASE + 6000), _marker(3, "END", "", BASE + 6001),
        # a transaction of three events whose total_order repeats (1, 2, 2)
        _marker(4, "BEGIN", "gtid:2", BASE + 7000), _marker(5, "END", "gtid:2", BASE + 7100, count=3),
    ]
    # the data partition read whole (from offset 0, no gaps), so every transaction can be verified
    data = [_txn_event(0, "gtid:1", 1), _txn_event(1, "gtid:2", 1), _txn_event(2, "gtid:2", 2),
            _txn_event(3, "gtid:2", 2)]
    result = scan([write_lines(tmp_path / "markers.jsonl", lines), write_lines(tmp_path / "data.jsonl", data)])
    found = sorted((f["rule"], f["topic"].rsplit(".", 1)[-1], f["offset"]) for f in result.findings)
    assert found == [("end_before_begin", "transaction", 1), ("invalid_marker_id", "transaction", 2),
                     ("invalid_marker_id", "transaction", 3), ("order_gap", "customers", 3)], found


def _pg(i: int, lsn: object, *, op: str = "u", ts: int | None = None) -> str:
    """A Debezium PostgreSQL change event (Debezium docs, PostgreSQL connector, "Data change events")."""
    source = {"version": "2.7.3.Final", "connector": "postgresql", "name": "pg1", "ts_ms": BASE + i * 1000 if ts is None else ts,
              "snapshot": "true" if op == "r" else "false", "db": "shop", "schema": "public", "table": "items",
              "txId": 700 + i, "lsn": lsn, "xmin": None, "sequence": json.dumps([None, str(lsn)])}
    value = {"before": None, "after": {"id": 1, "n": i}, "source": source, "op": op, "ts_ms": BASE + i * 1000 + 40}
    return kcat_line("pg1.public.items", 0, i, json.dumps({"id": 1}), json.dumps(value), BASE + i * 1000 + 50)


def _sqlserver(i: int, commit_lsn: str, change_lsn: str) -> str:
    """A Debezium SQL Server change event (Debezium docs, SQL Server connector: LSNs as XXXXXXXX:XXXXXXXX:XXXX)."""
    source = {"version": "2.7.3.Final", "connector": "sqlserver", "name": "server1", "ts_ms": BASE + i * 1000,
              "snapshot": "false", "db": "testDB", "schema": "dbo", "table": "customers",
              "change_lsn": change_lsn, "commit_lsn": commit_lsn, "event_serial_no": 1}
    value = {"before": {"id": 1}, "after": {"id": 1, "n": i}, "source": source, "op": "u", "ts_ms": BASE + i * 1000 + 40}
    return kcat_line("server1.testDB.dbo.customers", 0, i, json.dumps({"id": 1}), json.dumps(value), BASE + i * 1000 + 50)


def test_positions_of_the_wrong_form_are_one_finding_each(scan, tmp_path):
    lines = [_pg(1, 33_554_432), _pg(2, -5), _pg(3, 33_554_600),
             _sqlserver(4, "00000027:00000758:0005", "00000027:00000758:0003"),
             _sqlserver(5, "27:758:5", "00000027:00000758:0004"),
             _sqlserver(6, "00000027:00000759:0005", "00000027:00000759:0002")]
    result = scan([write_lines(tmp_path / "positions.jsonl", lines)])
    found = sorted((f["rule"], f["offset"]) for f in result.findings)
    # the malformed positions are not also position regressions against their neighbours
    assert found == [("invalid_position", 2), ("invalid_position", 5)], found


def test_a_snapshot_read_with_source_time_zero_is_flagged(scan, tmp_path):
    lines = [_pg(0, 33_554_000, op="r", ts=0), _pg(1, 33_554_432)]
    result = scan([write_lines(tmp_path / "zero.jsonl", lines)])
    assert sorted((f["rule"], f["offset"]) for f in result.findings) == [("invalid_source_ts", 0)]


def test_delete_images_per_connector(scan, tmp_path):
    """A delete says which row went: in ``before`` (MySQL, PostgreSQL, ...); in ``after`` with each key
    column's deletion_ts (Debezium docs, Cassandra connector, "Data change events"); MongoDB deletes
    carry neither without pre-images (MongoDB connector docs, "delete events")."""
    cassandra_source = {"version": "2.7.3.Final", "connector": "cassandra", "name": "cass1", "cluster": "Test Cluster",
                        "snapshot": False, "keyspace": "ks1", "table": "users", "file": "CommitLog-7-1.log", "pos": 54,
                        "ts_micro": (BASE + 2000) * 1000}
    cassandra_delete = {"before": None, "op": "d", "ts_ms": BASE + 2300, "source": cassandra_source,
                        "after": {"id": {"value": 7, "deletion_ts": (BASE + 2000) * 1000, "set": True}}}
    mongo_source = {"version": "2.7.3.Final", "connector": "mongodb", "name": "mongo1", "ts_ms": BASE + 3000,
                    "snapshot": "false", "db": "shop", "rs": "rs0", "collection": "carts", "ord": 1}
    mongo_delete = {"before": None, "after": None, "source": mongo_source, "op": "d", "ts_ms": BASE + 3020}
    mysql_delete = json.loads(json.loads(_mysql(4, "d", {"id": 9}))["payload"])
    mysql_delete["before"] = None
    lines = [
        kcat_line("cass1.ks1.users", 0, 5, json.dumps({"id": 7}), json.dumps(cassandra_delete), BASE + 2400),
        kcat_line("mongo1.shop.carts", 0, 5, json.dumps({"id": '{"$oid": "65a1f0c2e4b0a1b2c3d4e5f6"}'}),
                  json.dumps(mongo_delete), BASE + 3030),
        kcat_line("dbserver1.inventory.customers", 0, 5, json.dumps({"id": 9}), json.dumps(mysql_delete), BASE + 4060),
    ]
    result = scan([write_lines(tmp_path / "deletes.jsonl", lines)])
    found = sorted((f["rule"], f["topic"], f["offset"]) for f in result.findings)
    assert found == [("before_after_mismatch", "dbserver1.inventory.customers", 5)], found
    lag = {r["table"]: r["max_ms"] for r in result.lag}
    assert lag["ks1.users"] == 300  # Cassandra's source time is ts_micro


def _heartbeat(server: str, offset: int, ts: int) -> str:
    """A Debezium heartbeat (Debezium docs, "heartbeat.interval.ms": key {"serverName"}, value {"ts_ms"},
    topic __debezium-heartbeat.<prefix>)."""
    return kcat_line(f"__debezium-heartbeat.{server}", 0, offset, json.dumps({"serverName": server}),
                     json.dumps({"ts_ms": ts}), ts)


def _at(line: str, ts: int, offset: int) -> str:
    """A MySQL event written at record time ``ts`` (its source and processing times just before)."""
    record = json.loads(line)
    value = json.loads(record["payload"])
    value["source"]["ts_ms"], value["ts_ms"] = ts - 100, ts - 10
    return json.dumps({**record, "offset": offset, "ts": ts, "payload": json.dumps(value)})


def test_a_connector_that_falls_silent_is_stalled_but_an_idle_table_is_not(scan, tmp_path):
    """Heartbeats every 10 s; the data table idles for 4 minutes while heartbeats continue (not a
    stall), then heartbeats and data both stop for 5 minutes and resume (a stall: threshold 5 x the
    median heartbeat interval, 50 s)."""
    lines, beat = [], 0
    for t in range(0, 600, 10):  # seconds: heartbeats, except from 300 to 600
        if not 300 < t < 600:
            lines.append(_heartbeat("dbserver1", beat, BASE + t * 1000))
            beat += 1
    stamps = [5, 15, 25, 265, 275, 295, 605, 615]  # idle 25..265 with heartbeats; silent 295..605
    for n, t in enumerate(stamps):
        lines.append(_at(_mysql(n, "c", {"id": n}), BASE + t * 1000, n))
    lines.append(_heartbeat("dbserver1", beat, BASE + 600_000))
    result = scan([write_lines(tmp_path / "stall.jsonl", lines)])
    stalls = [f for f in result.findings if f["rule"] == "connector_stalled"]
    assert [(f["topic"], f["offset"]) for f in stalls] == [("__debezium-heartbeat.dbserver1", 30)], result.findings
    assert "wrote nothing for 300.000 s" in stalls[0]["message"] and "threshold 50.000 s" in stalls[0]["message"]
    assert [f["rule"] for f in result.findings] == ["connector_stalled"]


def test_without_heartbeats_a_silence_is_a_stall_when_the_source_committed_during_it(scan, tmp_path):
    """No heartbeats: 90 s without records between 20 s and 110 s. The events written after it were
    committed at 30 s and 40 s, during the silence (the connector sat on them): a stall, and their lag a
    spike. The same silence with the events committed as they were written is an idle database."""
    stamps = [0, 10, 20, 110, 120]
    idle = [_at(_mysql(n, "c", {"id": n}), BASE + t * 1000, n) for n, t in enumerate(stamps)]
    backlog = [_committed(line, BASE + t * 1000) if t in (30, 40) else line
               for line, t in zip(idle, [None, None, None, 30, 40], strict=True)]
    path = write_lines(tmp_path / "backlog.jsonl", backlog)
    result = scan([path])
    assert [(f["rule"], f["offset"]) for f in result.findings] == [("connector_stalled", 2), ("lag_spike", 3)]
    assert "source commits during the silence: the first written after it was committed at 2026-01-01 00:00:30" \
        in result.findings[0]["message"]
    assert [f["rule"] for f in scan([path], stall_threshold_ms=120_000).findings] == ["lag_spike"]
    assert scan([write_lines(tmp_path / "idle.jsonl", idle)]).findings == []


def _committed(line: str, source_ts: int) -> str:
    """A MySQL event committed at ``source_ts`` (written when it was)."""
    record = json.loads(line)
    value = json.loads(record["payload"])
    value["source"]["ts_ms"] = source_ts
    return json.dumps({**record, "payload": json.dumps(value)})


def _moved(line: str, written_ms: int, committed_ms: int) -> str:
    """A generated record moved: its Kafka time and the connector's times (ts_ms, ts_us, ts_ns)
    ``written_ms`` later, its source times (source's, and a transaction marker's ts_ms: the transaction's
    time at the source) ``committed_ms`` later."""
    record = json.loads(line)
    record["ts"] += written_ms
    if record["payload"] is not None:
        doc = json.loads(record["payload"])
        value = doc["payload"] if "schema" in doc else doc
        marker = "status" in value
        for block, ms in ((value, committed_ms if marker else written_ms), (value.get("source") or {}, committed_ms)):
            for field, scale in (("ts_ms", 1), ("ts_us", 1000), ("ts_ns", 1_000_000)):
                if isinstance(block.get(field), int):
                    block[field] += ms * scale
        record["payload"] = json.dumps(doc)
    return json.dumps(record)


def _pg_halves() -> tuple[list[str], int]:
    """A clean PostgreSQL capture (no heartbeats) and its middle: the record time of a BEGIN halfway."""
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import kcat_lines

    lines = list(kcat_lines(generate("postgresql", events=400, seed=11, schemas=False)))
    begins = sorted(r["ts"] for r in map(json.loads, lines)
                    if r["topic"].endswith(".transaction") and json.loads(r["payload"])["status"] == "BEGIN")
    return lines, begins[len(begins) // 2]


def test_an_idle_database_without_heartbeats_is_no_stall(scan, tmp_path):
    """The issue's capture: a clean PostgreSQL capture whose second half is 5 minutes later (Kafka time,
    ts_ms and source.ts_ms alike: the database wrote nothing for 5 minutes, so neither did the connector),
    no heartbeat topic. It was a connector_stalled warning; the source's clock says the database was idle."""
    lines, middle = _pg_halves()
    shifted = [_moved(line, 300_000, 300_000) if json.loads(line)["ts"] >= middle else line for line in lines]
    result = scan([write_lines(tmp_path / "idle.jsonl", shifted)])
    assert [(f["rule"], f["severity"]) for f in result.findings if f["severity"] != "info"] == []


def test_a_stall_with_a_backlog_and_no_heartbeats_is_one_finding(scan, tmp_path):
    """The same capture, its connector stopped for 5 minutes halfway while the database kept committing:
    the second half written after the stall in a burst (ten times its pace), committed when it was."""
    lines, middle = _pg_halves()
    late = [_moved(line, middle + 300_000 + (ts - middle) // 10 - ts, 0) if (ts := json.loads(line)["ts"]) >= middle
            else line for line in lines]
    result = scan([write_lines(tmp_path / "stall.jsonl", late)])
    (stall,) = [f for f in result.findings if f["rule"] == "connector_stalled"]
    assert stall["server"] == "pgserver1" and "source commits during the silence" in stall["message"]
    assert {f["rule"] for f in result.findings} == {"connector_stalled", "lag_spike"}  # (the backlog's lag: true)


def test_one_postgresql_sequence_on_two_lsns_is_a_conflict(scan, tmp_path):
    """PostgreSQL's source.sequence is ["<last commit LSN>","<LSN>"] (Debezium docs, PostgreSQL connector,
    source metadata): two events may not share it with different LSNs; an exact replay is a duplicate."""
    first, second = json.loads(_pg(1, 33_554_432)), json.loads(_pg(2, 33_554_600))
    value = json.loads(second["payload"])
    value["source"]["sequence"] = json.loads(first["payload"])["source"]["sequence"]
    conflicting = json.dumps({**second, "payload": json.dumps(value)})
    replay = json.dumps({**first, "offset": 3, "ts": first["ts"] + 5000})
    result = scan([write_lines(tmp_path / "sequence.jsonl", [json.dumps(first), conflicting, _pg(4, 33_554_700), replay])])
    found = sorted((f["rule"], f["offset"]) for f in result.findings)
    assert found == [("duplicate", 3), ("sequence_conflict", 2)], found


def _f(name: str, typ: str, optional: bool, **extra) -> dict:
    return {"field": name, "type": typ, "optional": optional, **extra}


def test_row_images_and_array_elements_are_judged_against_their_schema(scan, tmp_path):
    """A before image missing a column its schema declares non-optional; a MongoDB update whose
    updateDescription.truncatedArrays element has a null ``field`` (Debezium docs, MongoDB connector:
    truncatedArrays is an array of {field: string, size: int32}, both required)."""
    row = {"type": "struct", "name": "dbserver1.inventory.customers.Value", "optional": True,
           "fields": [_f("id", "int32", False), _f("name", "string", False)]}
    source = {"type": "struct", "name": "io.debezium.connector.mysql.Source", "optional": False, "fields": [
        _f(n, t, True) for n, t in (("version", "string"), ("connector", "string"), ("name", "string"), ("ts_ms", "int64"),
                                    ("snapshot", "string"), ("db", "string"), ("table", "string"), ("server_id", "int64"),
                                    ("gtid", "string"), ("file", "string"), ("pos", "int64"), ("row", "int32"))]}
    envelope = {"type": "struct", "name": "dbserver1.inventory.customers.Envelope", "optional": False, "fields": [
        {**row, "field": "before"}, {**row, "field": "after"}, {**source, "field": "source"}, _f("op", "string", False),
        _f("ts_ms", "int64", True), _f("transaction", "string", True)]}
    good = json.loads(json.loads(_mysql(1, "u", {"id": 1, "name": "b"}))["payload"])
    good["before"] = {"id": 1, "name": "a"}
    bad = json.loads(json.loads(_mysql(2, "u", {"id": 1, "name": "c"}))["payload"])
    bad["before"] = {"id": 1}  # the non-optional name is missing from the before image
    mysql = [kcat_line("dbserver1.inventory.customers", 0, i, json.dumps({"id": 1}),
                       json.dumps({"schema": envelope, "payload": p}), BASE + i * 1000) for i, p in ((1, good), (2, bad))]

    truncated = {"type": "array", "optional": True, "field": "truncatedArrays", "items": {
        "type": "struct", "optional": False, "fields": [_f("field", "string", False), _f("size", "int32", False)]}}
    update_desc = {"type": "struct", "optional": True, "field": "updateDescription",
                   "name": "io.debezium.connector.mongodb.changestream.updatedescription",
                   "fields": [_f("removedFields", "array", True, items={"type": "string", "optional": False}),
                              _f("updatedFields", "string", True), truncated]}
    mongo_source = {"type": "struct", "optional": False, "field": "source", "name": "io.debezium.connector.mongo.Source",
                    "fields": [_f(n, t, True) for n, t in (("version", "string"), ("connector", "string"), ("name", "string"),
                                                            ("ts_ms", "int64"), ("snapshot", "string"), ("db", "string"),
                                                            ("rs", "string"), ("collection", "string"), ("ord", "int32"))]}
    mongo_envelope = {"type": "struct", "optional": False, "name": "mongo1.shop.carts.Envelope", "fields": [
        _f("after", "string", True), _f("before", "string", True), update_desc, mongo_source, _f("op", "string", True),
        _f("ts_ms", "int64", True)]}
    mongo = []
    for i, arrays in ((3, [{"field": "items", "size": 2}]), (4, [{"field": None, "size": 2}])):
        payload = {"after": None, "before": None, "op": "u", "ts_ms": BASE + i * 1000 + 20,
                   "updateDescription": {"removedFields": None, "updatedFields": json.dumps({"n": i}), "truncatedArrays": arrays},
                   "source": {"version": "2.7.3.Final", "connector": "mongodb", "name": "mongo1", "ts_ms": BASE + i * 1000,
                              "snapshot": "false", "db": "shop", "rs": "rs0", "collection": "carts", "ord": 1}}
        mongo.append(kcat_line("mongo1.shop.carts", 0, i, json.dumps({"id": '{"$oid": "65a1f0c2e4b0a1b2c3d4e5f6"}'}),
                               json.dumps({"schema": mongo_envelope, "payload": payload}), BASE + i * 1000 + 30))
    result = scan([write_lines(tmp_path / "images.jsonl", mysql + mongo)])
    found = sorted((f["rule"], f["offset"], f["message"]) for f in result.findings)
    assert [(r, o) for r, o, _ in found] == [("non_optional_null", 2), ("non_optional_null", 4)], found
    assert found[0][2].endswith("before.name") and found[1][2].endswith("updateDescription.truncatedArrays[].field"), found
