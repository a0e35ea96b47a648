"""What a window holds, from one aggregate: the census behind the summary, events per table and
schema versions, the partitions read (what a window can prove), and the per-server facts the
transaction and ordering checks need. Checks receive these as literals: no extra job, join or
broadcast per fact (each was a Spark job or a shuffle before).

Each per-server or per-partition fact reaches a plan as one JSON text literal parsed into a map
(``fact_lookup``; Spark folds the parse into a map literal before the plan runs): one literal
however many entries, where a ``create_map`` of literals is a column expression per entry."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

GRAIN = ["topic", "partition", "kind", "bad", "server", "table", "op", "enveloped"]


@dataclass
class WindowFacts:
    rows: list[Row]  # the census: one row per GRAIN
    partitions: list[dict[str, Any]]  # per (topic, partition), in that order
    data_start: dict[str, int] = field(default_factory=dict)  # server -> when every later-started data partition has records
    txn_span: dict[str, tuple[int, int]] = field(default_factory=dict)  # server -> record times its transaction topic covers
    read: dict[str, list[str]] = field(default_factory=dict)  # server -> data collections with decoded change events

    @property
    def window(self) -> dict[str, Any]:
        starts = [p["min_ts_ms"] for p in self.partitions if p["min_ts_ms"] is not None]
        ends = [p["max_ts_ms"] for p in self.partitions if p["max_ts_ms"] is not None]
        return {"start_ms": min(starts, default=None), "end_ms": max(ends, default=None),
                "partitions": [{k: p[k] for k in ("topic", "partition", "first_offset", "last_offset", "records",
                                                  "from_start")} for p in self.partitions]}

    # What the window holds decides which checks can find anything: a check whose input is empty
    # is not planned (its findings would be none; fewer plans, stages and a job less per window).
    @property
    def has_transactions(self) -> bool:
        """A record of a transaction topic, or a data event naming a transaction."""
        return any(r["kind"] == "transaction" or r["in_txn"] for r in self.rows)

    @property
    def has_embedded_schemas(self) -> bool:
        """A key or value with a schema (JSON with schemas.enable, or Avro)."""
        return any(r["value_hashes"] or r["key_hashes"] for r in self.rows)

    @property
    def has_schema_changes(self) -> bool:
        """A record of a schema-change topic beside values with schemas (without both, no
        ``schema_change_without_ddl`` can be judged)."""
        return any(r["kind"] == "schema_change" for r in self.rows) and any(r["value_hashes"] for r in self.rows)

    @property
    def has_snapshot_events(self) -> bool:
        return any(r["snapshot_events"] for r in self.rows)

    def maps(self) -> dict[str, tuple[dict[str, Any], str]]:
        """Every fact a check looks up per record: name -> (mapping, type of its values)."""
        return {
            "from_start": ({f"{p['topic']}|{p['partition']}": p["from_start"] for p in self.partitions}, "boolean"),
            "data_start": (self.data_start, "bigint"),
            "read": (self.read, "array<string>"),
            "txn_lo": ({k: v[0] for k, v in self.txn_span.items()}, "bigint"),
            "txn_hi": ({k: v[1] for k, v in self.txn_span.items()}, "bigint"),
        }

    def lookup(self, name: str, key: Column, default: Column | None = None) -> Column:
        """Per record: fact ``name`` for ``key`` (null, or ``default``, when absent)."""
        mapping, typ = self.maps()[name]
        return fact_lookup(mapping, key, typ, default)

    def from_start(self) -> Column:
        """Per record: was its partition read from offset 0 without gaps (false when unknown)."""
        return self.lookup("from_start", F.concat_ws("|", F.col("topic"), F.col("partition").cast("string")), F.lit(False))


def fact_lookup(mapping: dict[str, Any], key: Column, typ: str, default: Column | None = None) -> Column:
    """``mapping[key]``, ``mapping`` given to the plan as JSON text parsed into a map of values of
    type ``typ``; null, or ``default``, when absent."""
    text = json.dumps({str(k): v for k, v in mapping.items()}, separators=(",", ":"))
    value = F.element_at(F.from_json(F.lit(text), f"map<string,{typ}>"), key)
    return F.coalesce(value, default) if default is not None else value


def census_frame(events: DataFrame) -> DataFrame:
    enveloped = F.col("envelope")
    return events.groupBy(
        "topic", "partition", "kind", F.col("decode_error").isNotNull().alias("bad"), "server", "table", "op",
        enveloped.alias("enveloped"),
    ).agg(
        F.count(F.lit(1)).alias("n"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        # an offset read twice is the same record, so it falls in one group: distinct offsets add up
        F.countDistinct("offset").alias("distinct_offsets"),
        F.min("record_ts_ms").alias("min_ts_ms"),
        F.max("record_ts_ms").alias("max_ts_ms"),
        F.max("ts_ms").alias("max_event_ts_ms"),  # a heartbeat group: the newest heartbeat
        F.collect_set("value_schema_hash").alias("value_hashes"),
        F.collect_set("key_schema_hash").alias("key_hashes"),
        F.count("txn_id").alias("in_txn"),  # events naming a transaction
        F.count(F.when(F.col("snapshot_event"), 1)).alias("snapshot_events"),
    )


def window_facts(events: DataFrame) -> WindowFacts:
    """One Spark job."""
    return facts_from_rows(census_frame(events).collect())


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def facts_from_rows(rows: list[Row], partitions: list[dict[str, Any]] | None = None) -> WindowFacts:
    """``partitions``: what each partition can prove as the caller knows it (watch: as the stream
    saw it across batches: ``topic``, ``partition``, ``from_start``, ``min_ts_ms``), instead of
    as this window's records show it."""
    facts = WindowFacts(rows=rows, partitions=partitions if partitions is not None else _partitions(rows))
    data_topics: dict[str, set[str]] = {}
    for r in rows:
        if r["kind"] == "data":
            data_topics.setdefault(r["topic"], set()).add(r["server"])
        if r["kind"] == "transaction" and r["server"] is not None:
            lo, hi = facts.txn_span.get(r["server"], (None, None))
            facts.txn_span[r["server"]] = (_min(lo, r["min_ts_ms"]), _max(hi, r["max_ts_ms"]))  # type: ignore[assignment]
        if r["enveloped"] and r["table"] is not None and r["server"] is not None:
            read = facts.read.setdefault(r["server"], [])
            if r["table"] not in read:
                read.append(r["table"])
    for p in facts.partitions:
        if p["from_start"] or p["min_ts_ms"] is None:
            continue
        for server in data_topics.get(p["topic"], ()):
            if server is not None:
                facts.data_start[server] = _max(facts.data_start.get(server), p["min_ts_ms"])  # type: ignore[assignment]
    for tables in facts.read.values():
        tables.sort()
    return facts


def _partitions(rows: list[Row]) -> list[dict[str, Any]]:
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        p = parts.setdefault((r["topic"], r["partition"]), {
            "topic": r["topic"], "partition": r["partition"], "first_offset": None, "last_offset": None,
            "records": 0, "distinct": 0, "min_ts_ms": None, "max_ts_ms": None})
        p["first_offset"] = _min(p["first_offset"], r["first_offset"])
        p["last_offset"] = _max(p["last_offset"], r["last_offset"])
        p["records"] += r["n"]
        p["distinct"] += r["distinct_offsets"]
        p["min_ts_ms"] = _min(p["min_ts_ms"], r["min_ts_ms"])
        p["max_ts_ms"] = _max(p["max_ts_ms"], r["max_ts_ms"])
    for p in parts.values():
        distinct = p.pop("distinct")
        p["duplicates"] = p["records"] - distinct  # the same offset read more than once (overlapping captures)
        p["from_start"] = p["first_offset"] == 0 and p["last_offset"] - p["first_offset"] + 1 == distinct
    return [parts[k] for k in sorted(parts)]
