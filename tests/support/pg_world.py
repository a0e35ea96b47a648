"""A small shop in a real PostgreSQL and the Debezium events a connector would have written for it,
with known differences between the two (tests/test_reconcile.py counts them exactly).

The events follow Debezium's PostgreSQL connector's documented type mapping: Decimal (base64, or
text with decimal.handling.mode=string), MicroTimestamp, ZonedTimestamp, Date, Json, arrays, enums,
and ``__debezium_unavailable_value`` for a toasted column an update did not touch.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.support.postgres import Postgres

EPOCH = datetime(1970, 1, 1)
MOODS = ("sad", "ok", "happy")
LONG_NOTE_ID = 12
SCHEMA_SQL = """
create type mood as enum ('sad', 'ok', 'happy');
create schema inventory;
create table public.orders (id int primary key, amount numeric(12,3), placed timestamp, placed_tz timestamptz,
  day date, doc jsonb, tags text[], mood mood, note text, paid boolean);
create table public.items (id bigint primary key, sku text);
create table inventory.stock (sku text, store int, qty int, primary key (sku, store));
create table public.audit (at timestamp, what text);
"""


def order(i: int) -> dict[str, Any]:
    amount = Decimal(f"{i}.{(i * 7) % 1000:03d}") * (-1 if i % 5 == 3 else 1)
    return {"id": i, "amount": amount, "placed": datetime(2024, 1, 1, 10, 0, 0, 123456) + timedelta(hours=i),
            "placed_tz": datetime(2024, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2))) + timedelta(minutes=i, microseconds=i),
            "day": date(1969, 12, 1) if i == 4 else date(2024, 1, 1) + timedelta(days=i),
            "doc": {"b": i, "a": [1, 2, {"c": "x"}]}, "tags": [f"t{i}", "all"], "mood": MOODS[i % 3],
            "note": ("toast " * 2000 + str(i)) if i == LONG_NOTE_ID else f"note {i}", "paid": i % 2 == 0}


def _sql_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, Decimal)):
        return str(v)
    if isinstance(v, dict):
        return "'" + json.dumps(v).replace("'", "''") + "'"
    if isinstance(v, list):
        return "array[" + ", ".join(_sql_value(x) for x in v) + "]"
    return "'" + str(v).replace("'", "''") + "'"


def insert_sql(table: str, rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    values = ", ".join("(" + ", ".join(_sql_value(r[c]) for c in cols) + ")" for r in rows)
    return f"insert into {table} ({', '.join(cols)}) values {values}"


def _decimal_b64(v: Decimal, scale: int) -> str:
    unscaled = int(v.scaleb(scale))
    return base64.b64encode(unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)).decode()


def debezium_order(row: dict[str, Any], schemas: bool, toasted: bool = False) -> dict[str, Any]:
    """The row image the connector writes (decimal.handling.mode precise with schemas, string without)."""
    placed_us = (row["placed"] - EPOCH) // timedelta(microseconds=1)
    tz = row["placed_tz"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"id": row["id"], "amount": _decimal_b64(row["amount"], 3) if schemas else str(row["amount"]),
            "placed": placed_us, "placed_tz": tz, "day": (row["day"] - date(1970, 1, 1)).days,
            "doc": json.dumps(row["doc"]), "tags": row["tags"], "mood": row["mood"],
            "note": "__debezium_unavailable_value" if toasted else row["note"], "paid": row["paid"]}


def _field(name: str, typ: str, logical: str | None = None, **params: Any) -> dict[str, Any]:
    f: dict[str, Any] = {"field": name, "type": typ, "optional": name != "id"}
    if logical:
        f["name"] = logical
    if params:
        f["parameters"] = {k: str(v) for k, v in params.items()}
    return f


ROW_FIELDS = {
    "public.orders": [_field("id", "int32"), _field("amount", "bytes", "org.apache.kafka.connect.data.Decimal", scale=3),
                      _field("placed", "int64", "io.debezium.time.MicroTimestamp"),
                      _field("placed_tz", "string", "io.debezium.time.ZonedTimestamp"),
                      _field("day", "int32", "io.debezium.time.Date"), _field("doc", "string", "io.debezium.data.Json"),
                      {"field": "tags", "type": "array", "optional": True, "items": {"type": "string"}},
                      _field("mood", "string", "io.debezium.data.Enum"), _field("note", "string"),
                      _field("paid", "boolean")],
    "public.items": [_field("id", "int64"), _field("sku", "string")],
    "inventory.stock": [_field("sku", "string"), _field("store", "int32"), _field("qty", "int32")],
}
KEYS = {"public.orders": ("id",), "public.items": ("id",), "inventory.stock": ("sku", "store")}


@dataclass
class Capture:
    schemas: bool
    lines: list[str] = field(default_factory=list)
    lsn: int = 23_000_000
    offsets: dict[str, int] = field(default_factory=dict)

    def event(self, table: str, op: str, txid: int, after: dict[str, Any] | None, before: dict[str, Any] | None = None,
              snapshot: str = "false", tombstone: bool = False) -> None:
        schema_name, tbl = table.split(".")
        row = after or before or {}
        key = {k: row[k] for k in KEYS[table]}
        self.lsn += 64
        source = {"version": "2.7.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": 1_732_000_000_000,
                  "snapshot": snapshot, "db": "shop", "schema": schema_name, "table": tbl, "txId": txid, "lsn": self.lsn}
        payload = {"before": before, "after": after, "source": source, "op": op, "ts_ms": 1_732_000_000_100}
        key_fields = [f for f in ROW_FIELDS[table] if f["field"] in KEYS[table]]
        if self.schemas:
            row_schema = {"type": "struct", "optional": True, "name": f"pg.{table}.Value", "fields": ROW_FIELDS[table]}
            value = {"schema": {"type": "struct", "name": f"pg.{table}.Envelope", "fields": [
                {**row_schema, "field": "before"}, {**row_schema, "field": "after"},
                {"field": "source", "type": "struct", "fields": []}, {"field": "op", "type": "string"},
                {"field": "ts_ms", "type": "int64", "optional": True}]}, "payload": payload}
            key_doc: Any = {"schema": {"type": "struct", "name": f"pg.{table}.Key", "fields": key_fields}, "payload": key}
        else:
            value, key_doc = payload, key
        self._line(f"pg.{table}", json.dumps(key_doc), json.dumps(value))
        if tombstone:
            self._line(f"pg.{table}", json.dumps(key_doc), None)

    def _line(self, topic: str, key: str, value: str | None) -> None:
        offset = self.offsets.get(topic, 0)
        self.offsets[topic] = offset + 1
        self.lines.append(json.dumps({"topic": topic, "partition": 0, "offset": offset, "tstype": "create",
                                      "ts": 1_732_000_000_200 + offset, "broker": 0, "headers": [], "key": key,
                                      "payload": value}))

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n")
        return path


def build(pg: Postgres, folder: Path) -> dict[str, Path]:
    """The shop's history, run in the database, and its captures (with and without schemas)."""
    pg.sql(SCHEMA_SQL)

    def tx(sql: str) -> int:
        return int(pg.sql(f"{sql}; select txid_current()").splitlines()[-1])

    orders = {i: order(i) for i in range(1, 21)}
    items = [{"id": i, "sku": f"sku-{i}"} for i in range(1, 11)]
    stock = [{"sku": "a", "store": 1, "qty": 5}, {"sku": "a", "store": 2, "qty": 0}, {"sku": "b", "store": 1, "qty": 9}]
    t_orders = tx(insert_sql("public.orders", list(orders.values())))
    t_items = tx(insert_sql("public.items", items))
    t_stock = tx(insert_sql("inventory.stock", stock))
    t_update = tx(f"update public.orders set amount = 99.5 where id in (5, {LONG_NOTE_ID})")
    t_delete = tx("delete from public.orders where id = 6")
    t_delete_unseen = tx("delete from public.orders where id = 9")  # no event: extra
    t_changed_unseen = tx("update public.orders set note = 'changed in the source' where id = 10")  # no event: differs
    t_stock_update = tx("update inventory.stock set qty = 4 where sku = 'a' and store = 1")
    tx("update public.orders set paid = not paid where id = 11")  # after the window: in flight
    tx(insert_sql("public.audit", [{"at": "2024-01-01 00:00:00", "what": "no key"}]))
    assert t_delete_unseen < t_changed_unseen < t_stock_update
    out = {}
    for schemas in (True, False):
        cap = Capture(schemas)
        for i, row in orders.items():
            if i != 7:  # its create event was lost
                cap.event("public.orders", "c", t_orders, debezium_order(row, schemas))
        for row in items[:6]:  # a snapshot that died part-way
            cap.event("public.items", "r", t_items, row, snapshot="true")
        for row in stock:
            cap.event("inventory.stock", "c", t_stock, row)
        for i in (5, LONG_NOTE_ID):
            updated = dict(orders[i], amount=Decimal("99.5"))
            cap.event("public.orders", "u", t_update, debezium_order(updated, schemas, toasted=i == LONG_NOTE_ID))
        cap.event("public.orders", "d", t_delete, None, before={"id": 6}, tombstone=True)
        cap.event("public.orders", "d", t_delete, None, before={"id": 8}, tombstone=True)  # the source still has 8
        cap.event("inventory.stock", "u", t_stock_update, dict(stock[0], qty=4))
        out["schemas" if schemas else "plain"] = cap.write(folder / f"shop-{'schemas' if schemas else 'plain'}.jsonl")
    return out
