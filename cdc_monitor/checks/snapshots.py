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
