"""ordering check: per key, within a partition, in offset order.

Keys are compared by their payload value (``key_payload``, canonical), so a key-schema change, a
schema wrapper, whitespace or field order do not split a key. A ``duplicate`` is a data event
equal to an earlier one of the same key in the partition in op, row images, source position,
transaction order and MongoDB update description (``content_hash``; ``ts_ms`` may differ: a
replay after a connector restart is processed again); duplicates are set aside before the other
rules, and a replayed snapshot read is a ``duplicate``, never also a ``snapshot_restarted``.
``missing_create`` and a first-record ``tombstone_without_delete`` are only judged where the
partition was read from offset 0 without gaps, and never for keys found in several partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.checks.context import CheckContext

POSITION_REGRESSION = Rule("position_regression", "ordering", Severity.ERROR, "key", "source position went backwards for a key")
DUPLICATE = Rule("duplicate", "ordering", Severity.WARNING, "key",
    "the same event again (redelivery/replay); a replayed snapshot read is this, not snapshot_restarted")
MISSING_CREATE = Rule("missing_create", "ordering", Severity.WARNING, "key",
    "update/delete of a key never created in a full partition")
EVENT_AFTER_DELETE = Rule("event_after_delete", "ordering", Severity.ERROR, "key", "update/delete after the key was deleted")
TOMBSTONE_WITHOUT_DELETE = Rule("tombstone_without_delete", "ordering", Severity.WARNING, "key", "tombstone not preceded by a delete")
KEY_IN_MULTIPLE_PARTITIONS = Rule("key_in_multiple_partitions", "ordering", Severity.ERROR, "key",
    "one key in several partitions of a topic")
RULES = (POSITION_REGRESSION, DUPLICATE, MISSING_CREATE, EVENT_AFTER_DELETE, TOMBSTONE_WITHOUT_DELETE, KEY_IN_MULTIPLE_PARTITIONS)


KEY = ["topic", "key_payload"]


def content_hash() -> Column:
    """What makes two data events of a key the same event: op, row images, source position (the value's
    hash without one), the place in its transaction (all of a MongoDB transaction's operations share one
    cluster time, so its position ties them) and what a MongoDB update without its document changed."""
    return F.xxhash64(
        F.col("op"), F.col("before"), F.col("after"),
        F.coalesce(F.col("position").cast("string"), F.col("value_hash").cast("string")),
        F.col("txn_total_order"), F.col("update_hash"),
    )


def _records(events: DataFrame) -> DataFrame:
    keyed = events.where(
        F.col("kind").isin("data", "tombstone") & F.col("decode_error").isNull() & F.col("key_payload").isNotNull()
    )
    content = content_hash()
    return keyed.select(
        "topic", "partition", "offset", "record_ts_ms", "key", "key_payload", "kind", "op", "snapshot",
        "position", "txn_id", "server", "table",
        F.when(F.col("kind") == "data", content).alias("content"),
    )


def _loc() -> dict:
    return dict(topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"), key=F.col("key"),
                txn_id=F.col("txn_id"), server=F.col("server"), table=F.col("table"))


def ordering_findings(events: DataFrame, ctx: CheckContext) -> list[DataFrame]:
    recs = _records(events)
    # keys in several partitions of a topic: the partition of the key's first record is home
    by_key = Window.partitionBy(*KEY)
    recs = recs.withColumn(
        "home", F.min_by("partition", F.struct("record_ts_ms", "partition", "offset")).over(by_key)
    ).withColumn("multi", F.size(F.collect_set("partition").over(by_key)) > 1)
    recs = recs.withColumn("from_start", ctx.facts.from_start())

    in_part = Window.partitionBy("topic", "partition", "key_payload").orderBy("offset")
    same = Window.partitionBy("topic", "partition", "key_payload", "content").orderBy("offset")
    recs = recs.withColumn("dup", (F.col("kind") == "data") & (F.row_number().over(same) > 1))
    recs = recs.withColumn("prev_any_op", F.lag(F.when(F.col("kind") == "data", F.col("op")).otherwise(F.lit("~"))).over(in_part))
    recs = ctx.placement.keep(recs)

    loc = _loc()
    multi = (
        recs.where(F.col("multi") & (F.col("partition") != F.col("home")))
        .groupBy("topic", "partition", "key_payload", "home")
        .agg(F.min_by(F.struct("offset", "key", "txn_id", "server", "table"), "offset").alias("f"),
             F.sort_array(F.collect_list("offset")).alias("offs"))
        .select(*finding(KEY_IN_MULTIPLE_PARTITIONS,
            F.concat(F.lit("key also in partition "), F.col("home"), F.lit(" of this topic")),
            topic=F.col("topic"), partition=F.col("partition"), offset=F.col("f.offset"), offsets=F.col("offs"),
            key=F.col("f.key"), txn_id=F.col("f.txn_id"), server=F.col("f.server"), table=F.col("f.table"),
        ))
    )
    duplicates = recs.where("dup").select(*finding(
        DUPLICATE, F.lit("same op, row and source position as an earlier event of this key"), **loc))
    tombstones = recs.where(
        (F.col("kind") == "tombstone")
        & F.when(F.col("prev_any_op").isNull(), F.col("from_start") & ~F.col("multi"))
        .otherwise(F.col("prev_any_op") != "d")
    ).select(*finding(TOMBSTONE_WITHOUT_DELETE,
        F.when(F.col("prev_any_op").isNull(), F.lit("tombstone is the key's first record"))
        .otherwise(F.lit("tombstone not preceded by a delete")),
        **loc,
    ))

    data = recs.where((F.col("kind") == "data") & ~F.col("dup") & F.col("op").isin("c", "u", "d", "r"))
    in_data = Window.partitionBy("topic", "partition", "key_payload").orderBy("offset")
    data = (
        data.withColumn("prev_op", F.lag("op").over(in_data))
        .withColumn("prev_pos", F.lag("position").over(in_data))
        .withColumn("prev_snapshot", F.lag("snapshot").over(in_data))
        .withColumn("n", F.row_number().over(in_data))
    )
    regression = data.where(
        F.col("position").isNotNull() & F.col("prev_pos").isNotNull() & ~F.col("snapshot") & ~F.col("prev_snapshot")
        & (F.col("position") < F.col("prev_pos"))
    ).select(*finding(POSITION_REGRESSION,
        F.concat(F.lit("source position "), F.col("position").cast("string"), F.lit(" is behind the previous "),
                 F.col("prev_pos").cast("string")),
        **loc,
    ))
    after_delete = data.where(F.col("op").isin("u", "d") & (F.col("prev_op") == "d")).select(*finding(
        EVENT_AFTER_DELETE, F.concat(F.lit("op "), F.col("op"), F.lit(" after the key was deleted")), **loc))
    missing_create = data.where(
        (F.col("n") == 1) & F.col("op").isin("u", "d") & F.col("from_start") & ~F.col("multi")
    ).select(*finding(MISSING_CREATE, F.concat(F.lit("op "), F.col("op"), F.lit(" of a key never created in this partition")), **loc))
    return [multi, duplicates, tombstones, regression, after_delete, missing_create]
