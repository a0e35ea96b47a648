"""The scan's counts from the window's census (engine/facts.py, one aggregate): the summary, data
events per table and op, records and null counts per topic, and schema versions per topic."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Row

KINDS = {"data": "data_events", "tombstone": "tombstones", "transaction": "transaction_markers",
         "schema_change": "schema_changes", "heartbeat": "heartbeats"}


def _decoded_data(rows: Iterable[Row]) -> list[Row]:
    return [r for r in rows if r["kind"] == "data" and not r["bad"]]


def nulls_first(*values: Any) -> tuple:
    """A sort key that orders None first, as Spark sorts ascending."""
    return tuple((v is not None, v) for v in values)


def summary_counts(rows: list[Row], rejects_count: int) -> dict[str, int]:
    out = {"records": sum(r["n"] for r in rows)}
    for kind, name in KINDS.items():
        out[name] = sum(r["n"] for r in rows if r["kind"] == kind)
    out["invalid_records"] = sum(r["n"] for r in rows if r["bad"]) + rejects_count
    out["unreadable_lines"] = rejects_count
    return out


def events_by_table(rows: list[Row]) -> list[dict[str, Any]]:
    """Decoded data events per (server, table, op), in that order (nulls first, as Spark sorts)."""
    counts: dict[tuple, int] = {}
    for r in _decoded_data(rows):
        k = (r["server"], r["table"], r["op"])
        counts[k] = counts.get(k, 0) + r["n"]
    return [{"server": s, "table": t, "op": o, "count": n}
            for (s, t, o), n in sorted(counts.items(), key=lambda kv: nulls_first(*kv[0]))]


def topic_counts(rows: list[Row]) -> list[dict[str, Any]]:
    """Per topic: records read, tombstones (records whose value is null), transaction markers,
    decoded data events and those of them without an op or without a transaction block (the
    census's null counts)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        t = out.setdefault(r["topic"], {"topic": r["topic"], "records": 0, "tombstones": 0, "transaction_markers": 0,
                                        "data_events": 0, "op_null": 0, "transaction_null": 0})
        t["records"] += r["n"]
        if r["kind"] == "tombstone":
            t["tombstones"] += r["n"]
        elif r["kind"] == "transaction":
            t["transaction_markers"] += r["n"]
        elif r["kind"] == "data" and not r["bad"]:
            t["data_events"] += r["n"]
            t["op_null"] += r["n"] if r["op"] is None else 0
            t["transaction_null"] += r["n"] - r["in_txn"]
    return [out[k] for k in sorted(out, key=lambda k: nulls_first(k))]


def heartbeats(rows: list[Row]) -> list[dict[str, Any]]:
    """Per server: heartbeat records read and the newest heartbeat's ``ts_ms`` (the connector's clock
    when it wrote it): a connector that is alive keeps it advancing even when its database is idle."""
    out: dict[Any, dict[str, Any]] = {}
    for r in rows:
        if r["kind"] == "heartbeat" and not r["bad"]:
            h = out.setdefault(r["server"], {"server": r["server"], "count": 0, "last_ts_ms": None})
            h["count"] += r["n"]
            if r["max_event_ts_ms"] is not None:
                h["last_ts_ms"] = max(h["last_ts_ms"] or 0, r["max_event_ts_ms"])
    return [out[k] for k in sorted(out, key=lambda k: nulls_first(k))]


def schema_versions(rows: list[Row], ddl: dict[tuple[Any, Any], int] | None = None) -> list[dict[str, Any]]:
    """Distinct value and key schemas of decoded data events per topic; with ``ddl`` ((server, table) ->
    DDL events about it on the schema-change topic), ``ddl_events`` beside the topic's versions."""
    by_topic: dict[str, tuple[set, set, set]] = {}
    for r in _decoded_data(rows):
        v, k, tables = by_topic.setdefault(r["topic"], (set(), set(), set()))
        v.update(r["value_hashes"])
        k.update(r["key_hashes"])
        tables.add((r["server"], r["table"]))
    out = []
    for t, (v, k, tables) in sorted(by_topic.items(), key=lambda kv: nulls_first(kv[0])):
        row: dict[str, Any] = {"topic": t, "value_schemas": len(v), "key_schemas": len(k)}
        n = sum((ddl or {}).get(st, 0) for st in tables)
        if n:
            row["ddl_events"] = n
        out.append(row)
    return out
