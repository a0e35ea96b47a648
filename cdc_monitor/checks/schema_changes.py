"""schema-change check: DDL events on the connector's schema-change topic (``<prefix>``; dtle's
configurable one) counted per table, and tables whose value schema changes without one.

A table's value schema *changes* when its change events carry more than one schema version (an
embedded schema's hash or an Avro registry id) in the window. When the window holds the server's
schema-change events, a table with such a change and no DDL event about it is
``schema_change_without_ddl``: the finding sits at the first record of the table's second
version. Without schemas (JSON ``schemas.enable=false``) versions cannot be seen: not judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding
from cdc_monitor.vocabulary import Rule

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RULES = (
    Rule("schema_change_without_ddl", "schema", "warning", "table",
         "a table's value schema changed in the window without a DDL event for it on the schema-change topic"),
)


def ddl_counts(events: DataFrame) -> DataFrame:
    """Per server and table: the DDL events about it (a part of the one collect)."""
    return (events.where(F.col("kind") == "schema_change").select("server", F.explode("ddl_tables").alias("table"))
            .groupBy("server", "table").agg(F.count(F.lit(1)).alias("ddl_events")))


def schema_change_findings(events: DataFrame) -> DataFrame:
    first = F.min(F.struct(F.col("record_ts_ms").alias("ts"), "topic", "partition", "offset", "key"))
    versions = (events.where(F.col("data_event") & F.col("value_schema_hash").isNotNull())
                .groupBy("server", "table", "value_schema_hash").agg(first.alias("first")))
    changed = versions.groupBy("server", "table").agg(
        F.sort_array(F.collect_list("first")).alias("firsts")).where(F.size("firsts") > 1)
    ddl = events.where(F.col("kind") == "schema_change")
    watched = ddl.select("server").distinct()  # servers whose schema-change events the window holds
    about = ddl.select("server", F.explode("ddl_tables").alias("table")).distinct()
    at = F.col("firsts")[1]
    return (changed.join(watched, "server").join(about, ["server", "table"], "left_anti").select(*finding(
        "schema_change_without_ddl",
        F.concat(F.lit("value schema of "), F.col("table"), F.lit(" changed ("), F.size("firsts").cast("string"),
                 F.lit(" versions) with no DDL event for it on the schema-change topic")),
        topic=at["topic"], partition=at["partition"], offset=at["offset"], key=at["key"], server=F.col("server"),
        table=F.col("table"))))
