"""The topic side: a window's events folded into each table's latest state per key.

Creates, updates and snapshot reads upsert; deletes and tombstones remove; a truncate removes
every key whose last event came before it. The last event by the connector's source position
wins (then partition and offset: a tombstone has no position and follows its delete). One pass
over the decoded events, grouped by (table, key).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame



def _order() -> Column:
    """What decides which of a key's events is the last: the source position, then partition and offset."""
    return F.struct("position", "partition", "offset")


@dataclass(frozen=True)
class TopicTable:
    """What the window says about one table: its topics, events, the newest source transaction
    id and log position it reached, and its row images' field types from the embedded schema."""

    name: str
    topics: tuple[str, ...]
    events: int
    max_txid: int | None = None
    max_lsn: int | None = None
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # column -> {"logical", "scale"}


def after_fields(schema_text: str | None) -> dict[str, dict[str, Any]]:
    """The ``after`` struct's fields of an envelope's embedded schema: logical type name and scale."""
    schema = _object(schema_text) if schema_text else None
    if not isinstance(schema, dict):
        return {}
    after = next((f for f in schema.get("fields", []) if isinstance(f, dict) and f.get("field") == "after"), None)
    out: dict[str, dict[str, Any]] = {}
    for f in (after or {}).get("fields", []) or []:
        if isinstance(f, dict) and f.get("field"):
            scale = (f.get("parameters") or {}).get("scale")
            out[f["field"]] = {"logical": f.get("name"), "scale": int(scale) if str(scale or "").isdigit() else None}
    return out


def topic_tables(events: DataFrame) -> dict[str, TopicTable]:
    """One small job: per table of the window, its topics, counts, the newest txId/LSN and one schema."""
    rows = (events.where(F.col("data_event") & F.col("table").isNotNull())
            .groupBy("table")
            .agg(F.collect_set("topic").alias("topics"), F.count(F.lit(1)).alias("events"),
                 F.max(F.col("source")["txId"].try_cast("bigint")).alias("max_txid"),
                 F.max(F.col("source")["lsn"].try_cast("bigint")).alias("max_lsn"),
                 F.max_by("value_schema", F.when(F.col("value_schema").isNotNull(), _order())).alias("schema"))
            .collect())
    return {r["table"]: TopicTable(r["table"], tuple(sorted(r["topics"])), int(r["events"]), r["max_txid"],
                                   r["max_lsn"], after_fields(r["schema"])) for r in rows}


def latest_state(events: DataFrame, tables: dict[str, TopicTable]) -> DataFrame:
    """(table, key_payload, after, removed, txid): the last event of each key of ``tables``. A
    tombstone counts for the table of its topic when that topic carries one table only."""
    owners: dict[str, list[str]] = {}
    for t in tables.values():
        for topic in t.topics:
            owners.setdefault(topic, []).append(t.name)
    single = {topic: names[0] for topic, names in owners.items() if len(names) == 1}
    topic_table = F.create_map(*[x for kv in single.items() for x in map(F.lit, kv)]) if single else None
    table = F.col("table")
    if topic_table is not None:
        table = F.when(F.col("kind") == "tombstone", topic_table[F.col("topic")]).otherwise(F.col("table"))
    rows = (events.where((F.col("data_event") & F.col("op").isNotNull()) | (F.col("kind") == "tombstone"))
            .select(table.alias("table"), "key_payload", "op", "after", "position", "partition", "offset",
                    (F.col("kind") == "tombstone").alias("tombstone"),
                    F.col("source")["txId"].try_cast("bigint").alias("txid"))
            .where(F.col("table").isin(list(tables))))
    # a truncate names no key (Debezium's op t has none): taken before keyless records are left out
    truncated = (rows.where(F.col("op") == "t").groupBy("table").agg(F.max(_order()).alias("truncated_at")))
    last = (rows.where((F.coalesce(F.col("op"), F.lit("")) != "t") & F.col("key_payload").isNotNull())
            .groupBy("table", "key_payload")
            .agg(F.max_by(F.struct("op", "after", "tombstone", "txid", _order().alias("at")), _order()).alias("e")))
    return (last.join(F.broadcast(truncated), "table", "left")
            .select("table", "key_payload", F.col("e.after").alias("after"),
                    (F.col("e.tombstone") | (F.col("e.op") == "d")
                     | F.coalesce(F.col("e.at") < F.col("truncated_at"), F.lit(False))).alias("removed"),
                    F.col("e.txid").alias("txid")))


def _object(text: str) -> dict[str, Any] | None:
    """A JSON object's text parsed, else None (an embedded schema that is not one says nothing)."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
