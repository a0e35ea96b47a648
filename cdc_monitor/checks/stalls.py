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

from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame, lit
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


def stall_sql(threshold_ms: int | None = None) -> SqlFindings:
    """The stall check's findings as SQL (checks/sql.py) over ``{events}``."""
    auto = f"coalesce(percentile_approx(beat_gap, 0.5) OVER (PARTITION BY server) * {HEARTBEATS_PER_THRESHOLD}, {DEFAULT_STALL_MS})"
    threshold = "CAST(:stall_threshold_ms AS bigint)" if threshold_ms is not None else auto
    silence = "(next_ts - record_ts_ms)"
    message = (f"concat('server ', server, ' wrote nothing for ', CAST(CAST({silence} / 1000 AS decimal(18,3)) AS string), "
               "' s (from ', CAST(timestamp_millis(record_ts_ms) AS string), ' to ', "
               "CAST(timestamp_millis(next_ts) AS string), ' UTC; threshold ', "
               "CAST(CAST(threshold_ms / 1000 AS decimal(18,3)) AS string), ' s)')")
    return SqlFindings(
        args={"stall_threshold_ms": threshold_ms} if threshold_ms is not None else {},
        ctes=(("stall_gaps", f"""
            SELECT *, lead(record_ts_ms) OVER (PARTITION BY server ORDER BY record_ts_ms, topic, partition, offset) AS next_ts,
              CASE WHEN kind = 'heartbeat'
                THEN record_ts_ms - lag(record_ts_ms) OVER (PARTITION BY server, kind ORDER BY record_ts_ms, offset) END AS beat_gap
            FROM (SELECT server, kind, record_ts_ms, topic, partition, offset, key FROM {{events}}
                  WHERE server IS NOT NULL AND record_ts_ms IS NOT NULL AND kind IN ({", ".join(map(lit, _KINDS))}))"""),),
        selects=(f"""SELECT {finding_sql(CONNECTOR_STALLED, message, topic="topic", partition="partition", offset="offset",
                                         key="key", server="server", at="record_ts_ms")}
            FROM (SELECT *, {threshold} AS threshold_ms FROM stall_gaps) WHERE {silence} > threshold_ms""",),
    )


def stall_findings(events: DataFrame, threshold_ms: int | None = None) -> DataFrame:
    """The stall check alone over ``events`` (the suite runs ``stall_sql`` with its scope)."""
    return findings_frame([stall_sql(threshold_ms)], {"events": events})
