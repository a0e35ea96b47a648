"""The plain PySpark job a data engineer would write instead of cdc-monitor (issue 76), its own session:
the capture parsed once with the whole envelope's schema (``from_json``, cached), lag percentiles per
table, END markers joined with per-transaction and per-collection counts, required source fields
counted, and a window per key comparing each record's position with the previous one. Cruder than a
scan (the position check is naive: it flags snapshots and re-deliveries), so a scan must beat it while
exact. Usage: ``python benchmarks/plain_spark.py CAPTURE...`` (``python -m benchmarks plain`` runs it)."""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

ENVELOPE = ("before string, after string, op string, ts_ms long, source struct<version string, connector string, name string, "
            "ts_ms long, snapshot string, db string, schema string, table string, pos long, lsn long, change_lsn string, "
            "scn string>, transaction struct<id string, total_order long, data_collection_order long>, status string, "
            "id string, event_count long, data_collections array<struct<data_collection string, event_count long>>")


def main(paths: list[str]) -> dict:
    started = time.perf_counter()
    spark = SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lines = spark.read.schema("topic string, partition int, offset long, key string, payload string").json(paths)
    value = F.from_json("payload", f"payload struct<{ENVELOPE}>, {ENVELOPE}")  # with the converter's schemas or without
    rows = lines.select("topic", "partition", "offset", "key", value.alias("v")).select(
        "topic", "partition", "offset", "key", F.coalesce(F.col("v.payload"), F.col("v").dropFields("payload")).alias("e")
    ).withColumn("tbl", F.concat_ws(".", "e.source.db", "e.source.schema", "e.source.table")).cache()
    out: dict = {"records": rows.count()}
    data = rows.where(~F.col("topic").endswith(".transaction") & F.col("e.op").isNotNull())
    lag = F.col("e.ts_ms") - F.col("e.source.ts_ms")
    out["lag"] = {r["tbl"]: r["p"] for r in data.where(F.col("e.op").isin("c", "u", "d")).groupBy("tbl").agg(
        F.percentile_approx(lag, [0.5, 0.95, 0.99]).alias("p")).collect()}
    ends = rows.where(F.col("e.status") == "END").select(F.col("e.id").alias("id"), "e.event_count", "e.data_collections")
    in_txn = data.where(F.col("e.transaction.id").isNotNull()).withColumn("id", F.col("e.transaction.id"))
    counts = in_txn.groupBy("id").count()
    out["count_mismatch"] = ends.join(counts, "id", "left").where(
        F.coalesce("count", F.lit(0)) != F.col("event_count")).count()
    per_coll = in_txn.groupBy(F.col("id").alias("pid"), F.col("tbl").alias("coll")).count()
    out["collection_count_mismatch"] = ends.select("id", F.explode("data_collections").alias("c")).join(
        per_coll, (F.col("c.data_collection") == F.col("coll")) & (F.col("id") == F.col("pid")), "left").where(
        F.coalesce("count", F.lit(0)) != F.col("c.event_count")).count()
    required = [F.col(f"e.source.{f}").isNull() for f in ("version", "connector", "name", "ts_ms", "db")]
    out["missing_source_field"] = data.where(F.greatest(*required)).count()
    position = F.coalesce("e.source.pos", "e.source.lsn", F.conv(F.regexp_replace("e.source.change_lsn", ":", ""), 16, 10)
                          .cast("long"), F.col("e.source.scn").cast("long"))
    by_key = Window.partitionBy("topic", "partition", "key").orderBy("offset")
    out["position_regression"] = data.withColumn("pos", position).withColumn("prev", F.lag("pos").over(by_key)).where(
        F.col("pos") < F.col("prev")).count()
    spark.stop()
    return out | {"seconds": round(time.perf_counter() - started, 2)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
