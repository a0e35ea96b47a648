"""The schema-change topic: DDL events counted per table beside its schema versions, and a value
schema that changes without a DDL event for its table (schema_change_without_ddl)."""

from __future__ import annotations

import json

from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000
SOURCE_FIELDS = [{"type": "string", "optional": False, "field": "connector"}, {"type": "string", "optional": False, "field": "name"},
                 {"type": "int64", "optional": False, "field": "ts_ms"}, {"type": "string", "optional": False, "field": "db"},
                 {"type": "string", "optional": True, "field": "table"}, {"type": "string", "optional": False, "field": "file"},
                 {"type": "int64", "optional": False, "field": "pos"}, {"type": "int32", "optional": False, "field": "row"}]


def _schemas(topic: str, version: int) -> tuple[dict, dict]:
    cols = [{"type": "int32", "optional": False, "field": "id"}, {"type": "string", "optional": True, "field": "name"}]
    if version == 2:
        cols.append({"type": "string", "optional": True, "field": "email"})
    row = {"type": "struct", "name": f"{topic}.Value", "optional": True, "fields": cols}
    value = {"type": "struct", "name": f"{topic}.Envelope", "optional": False, "fields": [
        {**row, "field": "before"}, {**row, "field": "after"},
        {"type": "struct", "name": "io.debezium.connector.mysql.Source", "optional": False, "field": "source",
         "fields": SOURCE_FIELDS},
        {"type": "string", "optional": False, "field": "op"}, {"type": "int64", "optional": True, "field": "ts_ms"}]}
    key = {"type": "struct", "name": f"{topic}.Key", "optional": False,
           "fields": [{"type": "int32", "optional": False, "field": "id"}]}
    return key, value


def _change(server: str, table: str, i: int, version: int) -> str:
    topic = f"{server}.inventory.{table}"
    key_schema, value_schema = _schemas(topic, version)
    after = {"id": i, "name": f"n{i}", **({"email": f"e{i}"} if version == 2 else {})}
    payload = {"before": None, "after": after, "op": "c", "ts_ms": BASE + i * 1000 + 20,
               "source": {"connector": "mysql", "name": server, "ts_ms": BASE + i * 1000, "db": "inventory",
                          "table": table, "file": "mysql-bin.000003", "pos": 1000 + i, "row": 0}}
    return kcat_line(topic, 0, i, json.dumps({"schema": key_schema, "payload": {"id": i}}),
                     json.dumps({"schema": value_schema, "payload": payload}), BASE + i * 1000 + 30)


def _ddl(server: str, offset: int, ddl: str, table_ids: list[str]) -> str:
    """A schema-change event as Debezium's MySQL connector writes it (dtle's has no tableChanges)."""
    # written between the tables' last version-1 record (i=2) and first version-2 record (i=3)
    payload = {"source": {"connector": "mysql", "name": server, "ts_ms": BASE + 2500 + offset, "db": "inventory",
                          "file": "mysql-bin.000003", "pos": 900 + offset, "row": 0},
               "ts_ms": BASE + 2510 + offset, "databaseName": "inventory", "ddl": ddl,
               "tableChanges": [{"type": "ALTER", "id": tid, "table": {"columns": []}} for tid in table_ids]}
    return kcat_line(server, 0, offset, json.dumps({"databaseName": "inventory"}), json.dumps(payload), BASE + 2600 + offset)


def test_ddl_events_are_counted_and_schema_changes_without_one_are_found(scan, tmp_path):
    lines = [
        # the schema-change topic of server "shop": orders altered (tableChanges), items altered (DDL text only)
        _ddl("shop", 0, "ALTER TABLE orders ADD COLUMN email varchar(255)", ['"inventory"."orders"']),
        _ddl("shop", 1, "ALTER TABLE `items` ADD COLUMN email varchar(255)", []),
        _ddl("shop", 2, "CREATE TABLE `inventory`.`orders_archive` (id int)", []),
    ]
    offsets = {}
    for table in ("orders", "items", "users"):
        for i in range(6):
            lines.append(_change("shop", table, i, 1 if i < 3 else 2))
        offsets[table] = 3  # the first record of each table's second version
    for i in range(4):  # server "other": its schema-change topic was not read, so its tables are not judged
        lines.append(_change("other", "users", i, 1 if i < 2 else 2))
    result = scan([write_lines(tmp_path / "ddl.jsonl", lines)])
    found = [f for f in result.findings if f["rule"] == "schema_change_without_ddl"]
    assert [(f["topic"], f["offset"], f["table"]) for f in found] == [("shop.inventory.users", 3, "inventory.users")]
    assert found[0]["message"] == ("value schema of inventory.users changed (version 2 of 2) with no DDL event for it on "
                                   "the schema-change topic between the last record of the old version and this one")
    assert found[0]["severity"] == "warning" and found[0]["key"] == '{"id":3}'
    assert [f["rule"] for f in result.findings] == ["schema_change_without_ddl"]  # nothing else in this traffic
    schemas = {s["topic"]: s for s in result.schemas}
    assert schemas["shop.inventory.orders"]["ddl_events"] == 1 and schemas["shop.inventory.items"]["ddl_events"] == 1
    assert schemas["shop.inventory.orders"]["value_schemas"] == 2
    assert "ddl_events" not in schemas["shop.inventory.users"] and "ddl_events" not in schemas["other.inventory.users"]
    assert result.summary["schema_changes"] == 3


def test_a_ddl_elsewhere_in_the_window_does_not_cover_a_schema_change(scan, tmp_path):
    """The DDL must sit between the old version's last record and the new one's first: the snapshot's
    CREATE TABLE before the window's records and an ADD INDEX after the change cover nothing, so a full
    capture (with its CREATE TABLE) can still show a change without its DDL. A later change covered by
    its own ALTER is fine."""
    early = _ddl("shop", 0, "CREATE TABLE orders (id int, name varchar(255))", ['"inventory"."orders"']).replace(
        str(BASE + 2600), str(BASE - 5000))
    late = _ddl("shop", 1, "ALTER TABLE orders ADD INDEX by_name (name)", ['"inventory"."orders"']).replace(
        str(BASE + 2601), str(BASE + 9000))
    lines = [early, late, *[_change("shop", "orders", i, 1 if i < 3 else 2) for i in range(6)]]
    result = scan([write_lines(tmp_path / "ddl_elsewhere.jsonl", lines)])
    found = [(f["rule"], f["offset"]) for f in result.findings]
    assert found == [("schema_change_without_ddl", 3)], found
    covered = [*lines, _ddl("shop", 2, "ALTER TABLE orders ADD COLUMN email varchar(255)", ['"inventory"."orders"'])]
    result = scan([write_lines(tmp_path / "ddl_covered.jsonl", covered)])
    assert result.findings == []
