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
