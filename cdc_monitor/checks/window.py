"""What the sample covers, per partition: the facts that decide what a window can prove."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.cache import NO_CACHE, FrameCache

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def partition_frame(events: DataFrame) -> DataFrame:
    """topic, partition, first/last offset, records, from_start (offset 0, no gaps), min/max record time."""
    return (
        events.groupBy("topic", "partition")
        .agg(
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
            F.count(F.lit(1)).alias("records"),
            F.countDistinct("offset").alias("distinct_offsets"),
            F.min("record_ts_ms").alias("min_ts_ms"),
            F.max("record_ts_ms").alias("max_ts_ms"),
        )
        .withColumn(
            "from_start",
            (F.col("first_offset") == 0) & (F.col("last_offset") - F.col("first_offset") + 1 == F.col("distinct_offsets")),
        )
    )


def partition_window(events: DataFrame, cache: FrameCache = NO_CACHE) -> tuple[dict[str, Any], DataFrame]:
    frame = cache.keep(partition_frame(events))
    rows = [r.asDict() for r in frame.orderBy("topic", "partition").collect()]
    window = {
        "start_ms": min((r["min_ts_ms"] for r in rows if r["min_ts_ms"] is not None), default=None),
        "end_ms": max((r["max_ts_ms"] for r in rows if r["max_ts_ms"] is not None), default=None),
        "partitions": [
            {k: r[k] for k in ("topic", "partition", "first_offset", "last_offset", "records", "from_start")}
            for r in rows
        ],
    }
    return window, frame
