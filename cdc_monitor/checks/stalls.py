"""stall check: a connector that fell silent.

Per server, its records in record-time order: data events, tombstones, transaction markers and,
above all, heartbeats (``__debezium-heartbeat.<server>``), which a live connector keeps writing
while its tables are idle. A silence longer than the server's stall threshold, while the capture
goes on (the server writes again later in the window), is ``connector_stalled``: one finding per
silence, at the last record before it. A server silent from its last record to the window's end is
not judged: a capture's end, or captures of different spans read together, look the same (the live
case is ``cdc_last_heartbeat_timestamp_seconds``'s age on the dashboards). The threshold is
``stall_threshold`` when configured, else five times the server's median heartbeat interval in the
window, else 60 s (no heartbeats read). Idle tables whose heartbeats continue are not stalls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CONNECTOR_STALLED = Rule("connector_stalled", "lag", Severity.WARNING, "table",
    "a server's heartbeat and data topics fell silent longer than the stall threshold, then it wrote again (a silence "
    "up to the window's end is not judged: a capture's end looks the same)")
RULES = (CONNECTOR_STALLED,)
HEARTBEATS_PER_THRESHOLD = 5
DEFAULT_STALL_MS = 60_000
_KINDS = ("data", "tombstone", "transaction", "heartbeat")


def stall_findings(events: DataFrame, threshold_ms: int | None = None) -> DataFrame:
    recs = events.where(F.col("server").isNotNull() & F.col("record_ts_ms").isNotNull() & F.col("kind").isin(*_KINDS)).select(
        "server", "kind", "record_ts_ms", "topic", "partition", "offset", "key")
    by_server = Window.partitionBy("server").orderBy("record_ts_ms", "topic", "partition", "offset")
    per_server = Window.partitionBy("server")
    gaps = recs.withColumn("next_ts", F.lead("record_ts_ms").over(by_server))
    beats = Window.partitionBy("server", "kind").orderBy("record_ts_ms", "offset")
    gaps = gaps.withColumn("beat_gap", F.when(F.col("kind") == "heartbeat",
                                              F.col("record_ts_ms") - F.lag("record_ts_ms").over(beats)))
    auto = F.coalesce(F.percentile_approx("beat_gap", 0.5).over(per_server) * HEARTBEATS_PER_THRESHOLD,
                      F.lit(DEFAULT_STALL_MS))
    threshold = F.lit(threshold_ms).cast("bigint") if threshold_ms is not None else auto
    stalled = gaps.withColumn("threshold_ms", threshold).where(
        (F.col("next_ts") - F.col("record_ts_ms")) > F.col("threshold_ms"))
    return stalled.select(*finding(CONNECTOR_STALLED,
        F.concat(F.lit("server "), F.col("server"), F.lit(" wrote nothing for "),
                 ((F.col("next_ts") - F.col("record_ts_ms")) / 1000).cast("decimal(18,3)").cast("string"),
                 F.lit(" s (from "), F.timestamp_millis("record_ts_ms").cast("string"), F.lit(" to "),
                 F.timestamp_millis("next_ts").cast("string"), F.lit(" UTC; threshold "),
                 (F.col("threshold_ms") / 1000).cast("decimal(18,3)").cast("string"), F.lit(" s)")),
        topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"), key=F.col("key"),
        server=F.col("server")))
