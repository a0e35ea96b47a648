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

from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame
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


def schema_change_sql() -> SqlFindings:
    """One finding per version change of a table not covered by a DDL event about the table placed
    between the old version's last record and the new version's first (by record time). As SQL
    (checks/sql.py) over ``{events}``.

    Each change from one version (in order of first appearance) to the next: ``step`` i goes from
    version i to i+1 (0-based), at the new version's first record, to be covered by a DDL event timed
    in [lo, hi]: from the old version's last record (its first, where the versions interleave across
    partitions) to the new version's first."""
    old, new = "versions[step]", "versions[step + 1]"
    message = ("concat('value schema of ', `table`, ' changed (version ', CAST(step + 2 AS string), ' of ', "
               "CAST(n AS string), ') with no DDL event for it on the schema-change topic between the last record "
               "of the old version and this one')")
    return SqlFindings(
        ctes=(("schema_versions", """
            SELECT server, `table`, sort_array(collect_list(struct(first, last_ts))) AS versions
            FROM (SELECT server, `table`, value_schema_hash,
                         min(struct(record_ts_ms AS ts, topic, partition, offset, key)) AS first, max(record_ts_ms) AS last_ts
                  FROM {events} WHERE data_event AND value_schema_hash IS NOT NULL GROUP BY server, `table`, value_schema_hash)
            GROUP BY server, `table`"""),
              ("schema_steps", f"""
            SELECT server, `table`, n, step, {new}.first AS at,
              CASE WHEN {old}.last_ts <= {new}.first.ts THEN {old}.last_ts ELSE {old}.first.ts END AS lo, {new}.first.ts AS hi
            FROM (SELECT server, `table`, versions, size(versions) AS n, explode(sequence(0, size(versions) - 2)) AS step
                  FROM schema_versions WHERE size(versions) > 1)"""),
              # servers whose schema-change events the window holds, and the tables each DDL is about
              ("schema_ddl", """
            SELECT server AS ddl_server, explode(ddl_tables) AS ddl_table, record_ts_ms AS ddl_ts
            FROM {events} WHERE kind = 'schema_change'""")),
        selects=(f"""SELECT {finding_sql(SCHEMA_CHANGE_WITHOUT_DDL, message, topic="at.topic", partition="at.partition",
                                         offset="at.offset", key="at.key", server="server", table="`table`", at="at.ts")}
            FROM (SELECT server, `table`, n, step, at, count(ddl_ts) AS ddls
                  FROM schema_steps JOIN (SELECT DISTINCT server FROM {{events}} WHERE kind = 'schema_change') USING (server)
                  LEFT JOIN schema_ddl ON server = ddl_server AND `table` = ddl_table AND ddl_ts BETWEEN lo AND hi
                  GROUP BY server, `table`, n, step, at)
            WHERE ddls = 0""",),
    )


def schema_change_findings(events: DataFrame) -> DataFrame:
    """The rule alone over ``events`` (the suite runs ``schema_change_sql`` with its scope)."""
    return findings_frame([schema_change_sql()], {"events": events})
