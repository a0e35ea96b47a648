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
