"""schema-change check: DDL events on the connector's schema-change topic (``<prefix>``; dtle's
configurable one) counted per table, and tables whose value schema changes without one.

A table's value schema *changes* when its change events carry more than one schema version (an
embedded schema's hash or an Avro registry id) in the window. When the window holds the server's
schema-change events, each change from one version to the next needs a DDL event about the table
placed between the old version's last record and the new version's first (by record time: the
connector writes the schema change between them); an unrelated DDL on the table elsewhere in the
window (an ADD INDEX, the snapshot's CREATE TABLE) does not cover it. An uncovered change is
``schema_change_without_ddl``, at the new version's first record. Without schemas (JSON
``schemas.enable=false``) versions cannot be seen: not judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SCHEMA_CHANGE_WITHOUT_DDL = Rule("schema_change_without_ddl", "schema", Severity.WARNING, "table",
    "a table's value schema changed in the window without a DDL event for it on the schema-change topic")
RULES = (SCHEMA_CHANGE_WITHOUT_DDL,)


def ddl_counts(events: DataFrame) -> DataFrame:
    """Per server and table: the DDL events about it (a part of the one collect)."""
    return (events.where(F.col("kind") == "schema_change").select("server", F.explode("ddl_tables").alias("table"))
            .groupBy("server", "table").agg(F.count(F.lit(1)).alias("ddl_events")))


def _steps(changed: DataFrame) -> DataFrame:
    """Each change from one version (in order of first appearance) to the next: ``step`` i goes from
    version i to i+1 (0-based), at the new version's first record, to be covered by a DDL event timed
    in [lo, hi]: from the old version's last record (its first, where the versions interleave across
    partitions) to the new version's first."""
    v = F.col("versions")
    old, new = v[F.col("step")], v[F.col("step") + 1]
    return changed.select("server", "table", "versions", F.size("versions").alias("n"),
                          F.explode(F.sequence(F.lit(0), F.size("versions") - 2)).alias("step")).select(
        "server", "table", "n", "step", new["first"].alias("at"),
        F.when(old["last_ts"] <= new["first"]["ts"], old["last_ts"]).otherwise(old["first"]["ts"]).alias("lo"),
        new["first"]["ts"].alias("hi"))


def schema_change_findings(events: DataFrame) -> DataFrame:
    """One finding per version change of a table not covered by a DDL event about the table placed
    between the old version's last record and the new version's first (by record time)."""
    at = F.struct(F.col("record_ts_ms").alias("ts"), "topic", "partition", "offset", "key")
    versions = (events.where(F.col("data_event") & F.col("value_schema_hash").isNotNull())
                .groupBy("server", "table", "value_schema_hash")
                .agg(F.min(at).alias("first"), F.max("record_ts_ms").alias("last_ts")))
    changed = versions.groupBy("server", "table").agg(
        F.sort_array(F.collect_list(F.struct("first", "last_ts"))).alias("versions")).where(F.size("versions") > 1)
    steps = _steps(changed)
    ddl = events.where(F.col("kind") == "schema_change")
    watched = ddl.select("server").distinct()  # servers whose schema-change events the window holds
    about = ddl.select(F.col("server").alias("ddl_server"), F.explode("ddl_tables").alias("ddl_table"),
                       F.col("record_ts_ms").alias("ddl_ts"))
    covering = (F.col("server") == F.col("ddl_server")) & (F.col("table") == F.col("ddl_table")) & F.col("ddl_ts").between(
        F.col("lo"), F.col("hi"))
    uncovered = (steps.join(watched, "server").join(about, covering, "left")
                 .groupBy("server", "table", "n", "step", "at").agg(F.count("ddl_ts").alias("ddls")).where("ddls = 0"))
    return uncovered.select(*finding(SCHEMA_CHANGE_WITHOUT_DDL,
        F.concat(F.lit("value schema of "), F.col("table"), F.lit(" changed (version "), (F.col("step") + 2).cast("string"),
                 F.lit(" of "), F.col("n").cast("string"), F.lit(") with no DDL event for it on the schema-change topic "
                                                                 "between the last record of the old version and this one")),
        topic=F.col("at.topic"), partition=F.col("at.partition"), offset=F.col("at.offset"), key=F.col("at.key"),
        server=F.col("server"), table=F.col("table")))
