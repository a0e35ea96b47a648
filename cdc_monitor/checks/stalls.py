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

Without the server's heartbeats in the window, a silence is also what an idle database gives: it
committed nothing, so its connector wrote nothing. The source's own clock tells the two apart. A
stalled connector's database keeps committing, and the change events written after the silence
(until the server's next silence) carry source times inside it: one committed at least the
threshold before the silence ended (the connector sat on it that long) makes the silence a stall,
said so in the message ("source commits during the silence"). Otherwise the silence is idle time,
not a finding. With heartbeats the silence alone is the stall (they stop only when the connector
does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdc_monitor.checks.lag import VALID_SOURCE_TS
from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame, lit
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps

CONNECTOR_STALLED = Rule("connector_stalled", "lag", Severity.WARNING, "table",
    "a server's heartbeat and data topics fell silent longer than the stall threshold, then it wrote again; without "
    "the server's heartbeats in the window, only when change events written after the silence were committed at "
    "least the threshold before it ended (otherwise the database was idle); a silence up to the window's end is "
    "not judged: a capture's end looks the same")
RULES = (CONNECTOR_STALLED,)
HEARTBEATS_PER_THRESHOLD = 5
DEFAULT_STALL_MS = 60_000
_KINDS = ("data", "tombstone", "transaction", "heartbeat")
_ORDER = "ORDER BY record_ts_ms, topic, partition, offset"
_BEFORE = f"PARTITION BY server {_ORDER} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"


def _utc(ms: str) -> str:
    return f"CAST(timestamp_millis({ms}) AS string)"


def _seconds(ms: str) -> str:
    return f"CAST(CAST({ms} / 1000 AS decimal(18,3)) AS string)"


def stall_sql(threshold_ms: int | None = None) -> SqlFindings:
    """The stall check's findings as SQL (checks/sql.py) over ``{events}``: window functions per
    server in record-time order (the silences, then the records after each, then their verdict)."""
    auto = f"coalesce(percentile_approx(beat_gap, 0.5) OVER (PARTITION BY server) * {HEARTBEATS_PER_THRESHOLD}, {DEFAULT_STALL_MS})"
    threshold = "CAST(:stall_threshold_ms AS bigint)" if threshold_ms is not None else auto
    silence = "(next_ts - record_ts_ms)"
    message = (f"concat('server ', server, ' wrote nothing for ', {_seconds(silence)}, ' s (from ', {_utc('record_ts_ms')}, "
               f"' to ', {_utc('next_ts')}, ' UTC; threshold ', {_seconds('threshold_ms')}, ' s', "
               f"CASE WHEN beats THEN '' ELSE concat('; no heartbeats read, source commits during the silence: the "
               f"first written after it was committed at ', {_utc('committed_ts')}, ' UTC') END, ')')")
    return SqlFindings(
        args={"stall_threshold_ms": threshold_ms} if threshold_ms is not None else {},
        ctes=(
            # each record of a server, the next one's record time, and (heartbeats) the gap since the last
            ("stall_gaps", f"""
            SELECT *, lead(record_ts_ms) OVER (PARTITION BY server {_ORDER}) AS next_ts,
              CASE WHEN kind = 'heartbeat'
                THEN record_ts_ms - lag(record_ts_ms) OVER (PARTITION BY server, kind ORDER BY record_ts_ms, offset) END AS beat_gap
            FROM (SELECT server, kind, record_ts_ms, topic, partition, offset, key,
                         CASE WHEN change_event AND {VALID_SOURCE_TS} THEN source_ts_ms END AS source_ts
                  FROM {{events}}
                  WHERE server IS NOT NULL AND record_ts_ms IS NOT NULL AND kind IN ({", ".join(map(lit, _KINDS))}))"""),
            # the silences, and per record the last silence before it: when it ended
            ("stall_silences", f"""
            SELECT *, last(CASE WHEN silent THEN next_ts END, true) OVER ({_BEFORE}) AS after_silence
            FROM (SELECT *, {silence} > threshold_ms AS silent
                  FROM (SELECT *, {threshold} AS threshold_ms,
                               max(kind = 'heartbeat') OVER (PARTITION BY server) AS beats
                        FROM stall_gaps))"""),
            # per silence, the earliest commit written after it (before the next) that it held past the threshold
            ("stall_judged", f"""
            SELECT *, lead(held) OVER (PARTITION BY server {_ORDER}) AS committed_ts
            FROM (SELECT *, min(CASE WHEN source_ts <= after_silence - threshold_ms THEN source_ts END)
                              OVER (PARTITION BY server, after_silence) AS held
                  FROM stall_silences)"""),
        ),
        selects=(f"""SELECT {finding_sql(CONNECTOR_STALLED, message, topic="topic", partition="partition", offset="offset",
                                         key="key", server="server", at="record_ts_ms")}
            FROM stall_judged WHERE silent AND (beats OR committed_ts IS NOT NULL)""",),
    )


def stall_findings(events: DataFrame, session: SessionCaps, threshold_ms: int | None = None) -> DataFrame:
    """The stall check alone over ``events`` (the suite runs ``stall_sql`` with its scope)."""
    return findings_frame([stall_sql(threshold_ms)], {"events": events}, session)
