"""snapshot check: snapshot progress per table, and a snapshot that starts again after streaming.

Debezium snapshots a table (op ``r``, ``source.snapshot`` true/first/last/..._in_data_collection)
before it streams its changes; incremental snapshots (``source.snapshot = incremental``, driven by
signals) read chunks while streaming goes on and are expected there. A blocking (non-incremental)
snapshot event of a table whose change events were already streaming in the window is
``snapshot_restarted``: a connector that lost its offsets and snapshots the table again,
re-delivering every row. One finding per table, at its first such event. A snapshot read that repeats
an earlier read of its key exactly is a redelivery: it is ordering's ``duplicate`` and does not count
here (one cause, one finding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame, lit
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SNAPSHOT_RESTARTED = Rule("snapshot_restarted", "ordering", Severity.WARNING, "table",
    "a table is snapshotted again after its changes were streaming (the connector re-delivers its rows)")
SNAPSHOT_OP_MISMATCH = Rule("snapshot_op_mismatch", "schema", Severity.WARNING, "record",
    "source.snapshot contradicts op: c/u/d marked as a snapshot (true, first, last, *_in_data_collection, "
    "incremental), or an r read marked snapshot false; not judged for dtle (documented snapshot rows are op c with a "
    "boolean flag), Cassandra or unknown connectors")
RULES = (SNAPSHOT_RESTARTED, SNAPSHOT_OP_MISMATCH)
FIRST_MARKERS = ("first", "first_in_data_collection")
LAST_MARKERS = ("last", "last_in_data_collection")
INCREMENTAL = "incremental"
_AT = ["record_ts_ms", "topic", "partition", "offset"]


def snapshot_restarted_sql() -> SqlFindings:
    """A table's blocking snapshot read again after its changes were streaming: one finding per
    table, at its first such read. As SQL (checks/sql.py) over ``{events}``."""
    at = ", ".join(_AT)
    message = ("concat('snapshot of ', `table`, ' started again: ', CAST(n AS string), ' snapshot event(s) after its "
               "changes were streaming (first change at ', since.topic, '[', CAST(since.partition AS string), ']@', "
               "CAST(since.offset AS string), ')')")
    return SqlFindings(
        ctes=(("snapshot_streaming", f"""
            SELECT server, `table`, min(struct({at})) AS first_change FROM {{events}}
            WHERE data_event AND change_event GROUP BY server, `table`"""),
              # snapshot reads by both op and flag (a record whose flag contradicts its op is
              # snapshot_op_mismatch only); one cause, one finding: a read that repeats an earlier one
              # exactly (ordering's content hash) is a redelivery, reported as a ``duplicate``, not as a
              # snapshot started again (a new snapshot reads at a new source position: never exact repeats)
              ("snapshot_blocking", f"""
            SELECT * FROM (
              SELECT *, row_number() OVER (PARTITION BY topic, partition, key_payload, {CONTENT_HASH} ORDER BY offset) AS copy_no
              FROM {{events}}
              WHERE data_event AND snapshot_event AND op = 'r' AND NOT coalesce(snapshot_marker, '') IN ({lit(INCREMENTAL)}, 'false'))
            WHERE key_payload IS NULL OR copy_no = 1""")),
        selects=(f"""SELECT {finding_sql(SNAPSHOT_RESTARTED, message, topic="at.topic", partition="at.partition",
                                         offset="at.offset", key="at.key", server="server", table="`table`",
                                         at="at.record_ts_ms")}
            FROM (SELECT server, `table`, min(struct({at}, key)) AS at, count(1) AS n, first(first_change) AS since
                  FROM snapshot_blocking JOIN snapshot_streaming USING (server, `table`)
                  WHERE struct({at}) > first_change GROUP BY server, `table`)""",),
    )


def snapshot_restarted_findings(events: DataFrame) -> DataFrame:
    """The rule alone over ``events`` (the suite runs ``snapshot_restarted_sql`` with its scope)."""
    return findings_frame([snapshot_restarted_sql()], {"events": events})


def snapshot_progress(events: DataFrame) -> DataFrame:
    """Per server and table with snapshot events: rows read, incremental ones, the first and last
    markers seen (a part of the one collect)."""
    marker = F.col("snapshot_marker")
    return events.where("snapshot_event").groupBy("server", "table").agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(marker == INCREMENTAL, 1)).alias("incremental_rows"),
        F.max(marker.isin(*FIRST_MARKERS)).alias("first_marker"),
        F.max(marker.isin(*LAST_MARKERS)).alias("last_marker"),
    )
