"""What a window holds, from one aggregate: the census behind the summary, events per table and
schema versions, the partitions read (what a window can prove), and the per-server facts the
transaction and ordering checks need (``WindowFacts``, checks/context.py). Checks receive these as
literals: no extra job, join or broadcast per fact (each was a Spark job or a shuffle before)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.context import WindowFacts
from cdc_monitor.checks.schema import topic_flagged
from cdc_monitor.checks.source_block import SEQUENCED

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

GRAIN = ["topic", "partition", "kind", "bad", "server", "table", "op", "enveloped"]


def census_frame(events: DataFrame, by: tuple[Column, ...] = (), more: tuple[Column, ...] = ()) -> DataFrame:
    """The census aggregate; ``by``: grouping columns before the grain, ``more``: further aggregates
    (watch takes the per-partition facts of its operator's rows from the same aggregate)."""
    enveloped = F.col("envelope")
    return events.groupBy(
        *by, "topic", "partition", "kind", F.col("decode_error").isNotNull().alias("bad"), "server", "table", "op",
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
        # what the per-record, per-topic and sequence rules read (checks/context.py: a check
        # whose records the window lacks is not planned)
        F.count(F.when(F.size("verdicts") > 0, 1)).alias("verdict_records"),
        F.count(F.when(topic_flagged(), 1)).alias("topic_flagged"),
        F.count(F.when(F.expr(SEQUENCED), 1)).alias("sequenced"),
        # the first change event (record time, topic, partition, offset): when a table's changes began
        # streaming, which a snapshot read after it restarted (the table pass's snapshot_restarted)
        F.min(F.when(F.col("change_event"), F.struct("record_ts_ms", "topic", "partition", "offset"))).alias("first_change"),
        *more,
    )


def window_facts(events: DataFrame) -> WindowFacts:
    """One Spark job."""
    return facts_from_rows(census_frame(events).collect())


def _field(row: Any, name: str) -> Any:
    """``row[name]``, None where the row has no such field (a census of an earlier grain)."""
    try:
        return row[name]
    except (KeyError, ValueError, IndexError):
        return None


def _at(first: Any) -> tuple:
    """A first change's place in Spark's order (a missing record time first)."""
    return (first["record_ts_ms"] is not None, first["record_ts_ms"] or 0, first["topic"] or "", first["partition"],
            first["offset"])


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
        first = _field(r, "first_change")
        if first is not None and r["server"] is not None and r["table"] is not None:
            key = f"{r['server']}|{r['table']}"
            known = facts.first_change.get(key)
            if known is None or _at(first) < _at(known):
                facts.first_change[key] = first.asDict()
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
