"""One join classifies every key of every table: (table, key) of the source's rows, full outer
joined with the topic's latest state, both sides canonical text in the source's column order.

Two jobs over the classified rows (kept cached, so the source is read once): the counts, the
checksums and the per-column differences of every table; then the first ``samples`` keys of each
table and state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.engine.union import union_all
from cdc_monitor.reconcile.canonical import UNAVAILABLE, topic_value
from cdc_monitor.vocabulary import ReconcileState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.reconcile.dialects import SourceTable
    from cdc_monitor.reconcile.topic_state import TopicTable

XID_MODULUS = 2**32  # PostgreSQL's xmin is the 32-bit part of a transaction id


def topic_rows(state: DataFrame, tables: list[SourceTable], facts: dict[str, TopicTable]) -> DataFrame:
    """The folded topic state as (table, key, t_vals, removed): each table's key and row image
    read by its source columns' kinds and the fields' logical types in the embedded schema."""
    parsed = state.select("table", "removed", F.from_json("key_payload", "map<string,string>").alias("k"),
                          "key_payload", F.from_json("after", "map<string,string>").alias("a"))
    frames = []
    for t in tables:
        fields = facts[t.name].fields if t.name in facts else {}

        def value(source: str, name: str, t: SourceTable = t, fields: dict = fields) -> Any:
            col, info = t.column(name), fields.get(name, {})
            return topic_value(F.col(source)[name], col.kind, info.get("logical"), info.get("scale", col.scale))

        key = [F.coalesce(value("k", k), F.when(F.col("k").isNull(), F.col("key_payload"))) for k in t.key]
        # a column the row image does not carry (added to the table after the row's last change:
        # PostgreSQL fills a column added with a default without writing to the WAL, so Debezium sends
        # nothing for the rows it already had) says nothing about the source's value
        carried = [F.when(F.col("a").isNull() | F.map_contains_key("a", c.name), value("a", c.name)).otherwise(F.lit(UNAVAILABLE))
                   for c in t.columns]
        frames.append(parsed.where(F.col("table") == t.name).select(
            "table", F.to_json(F.array(*key)).alias("key"), F.array(*carried).alias("t_vals"), "removed"))
    return union_all(frames)


def classify(source: DataFrame, topic: DataFrame, window_txid: int | None) -> DataFrame:
    """(table, key, state, diff, s_vals, t_vals, unavailable): keys both sides agree are absent drop out."""
    j = source.withColumn("s", F.lit(True)).join(topic.withColumn("t", F.lit(True)), ["table", "key"], "full_outer")
    live = F.coalesce(F.col("t") & ~F.col("removed"), F.lit(False))
    has_source = F.coalesce(F.col("s"), F.lit(False))
    pairs = F.arrays_zip(F.col("s_vals").alias("s"), F.col("t_vals").alias("t"))
    diff = F.filter(F.sequence(F.lit(0), F.size("s_vals") - 1),
                    lambda i: ~F.col("s_vals")[i].eqNullSafe(F.col("t_vals")[i])
                    & F.coalesce(F.col("t_vals")[i] != F.lit(UNAVAILABLE), F.lit(True)))
    later = F.lit(False)
    if window_txid is not None:
        later = F.coalesce(F.col("version") > F.lit(window_txid % XID_MODULUS), F.lit(False))
    state = (F.when(has_source & live, F.when(F.size("diff") == 0, F.lit(ReconcileState.MATCH.value))
                    .when(later, F.lit(ReconcileState.IN_FLIGHT.value)).otherwise(F.lit(ReconcileState.DIFFERS.value)))
             .when(has_source, F.when(later, F.lit(ReconcileState.IN_FLIGHT.value))
                   .otherwise(F.lit(ReconcileState.MISSING.value)))
             .when(live, F.lit(ReconcileState.EXTRA.value)))
    filled = F.when(has_source & live, F.transform(
        pairs, lambda p: F.when(p["t"] == F.lit(UNAVAILABLE), p["s"]).otherwise(p["t"]))).when(live, F.col("t_vals"))
    return (j.withColumn("diff", F.when(has_source & live, diff))
            .select("table", "key", state.alias("state"), "diff", "s_vals", "t_vals",
                    F.when(has_source, F.xxhash64("key", "s_vals")).alias("s_hash"),
                    F.when(live, F.xxhash64("key", filled)).alias("t_hash"),
                    F.when(live, F.size(F.filter("t_vals", lambda v: v == F.lit(UNAVAILABLE)))).alias("unavailable"))
            .where(F.col("state").isNotNull()))


def summarise(classified: DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One job: per table and state the rows and checksums; per table and column index the differences."""
    counts = classified.groupBy("table", "state").agg(
        F.count(F.lit(1)).alias("n"), F.bit_xor("s_hash").alias("s_sum"), F.bit_xor("t_hash").alias("t_sum"),
        F.count("s_hash").alias("s_rows"), F.count("t_hash").alias("t_rows"),
        F.sum("unavailable").alias("unavailable"), F.lit(None).cast("int").alias("idx"))
    diffs = (classified.where(F.col("state") == ReconcileState.DIFFERS.value)
             .select("table", "state", F.explode("diff").alias("idx")).groupBy("table", "state", "idx")
             .agg(F.count(F.lit(1)).alias("n"))
             .select("table", "state", "n", *[F.lit(None).cast("bigint").alias(c) for c in ("s_sum", "t_sum", "s_rows",
                                                                                           "t_rows", "unavailable")],
                     "idx"))
    rows = [r.asDict() for r in counts.unionByName(diffs).collect()]
    return [r for r in rows if r["idx"] is None], [r for r in rows if r["idx"] is not None]


def samples(classified: DataFrame, n: int) -> list[dict[str, Any]]:
    """The first ``n`` keys (by key) of each table's mismatching states (one job)."""
    order = Window.partitionBy("table", "state").orderBy("key")
    return [r.asDict() for r in classified.where(F.col("state") != ReconcileState.MATCH.value)
            .withColumn("rank", F.row_number().over(order)).where(F.col("rank") <= n)
            .select("table", "state", "key", "diff", "s_vals", "t_vals").collect()]
