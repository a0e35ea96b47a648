"""ordering check: per key, within a partition, in offset order.

Keys are compared by their payload value (``key_payload``, canonical), so a key-schema change, a
schema wrapper, whitespace or field order do not split a key. A data event equal to an earlier one
of the same key in the partition in op, row images, source position, transaction order and MongoDB
update description (``content_hash``) is a copy of it, and is one of two rules:

- ``replayed_after_restart`` (info) when its processing time (``ts_ms``, ``ts_us`` when sent)
  differs from the first copy's: the connector read the same change from the source log again and
  processed it again. Debezium does exactly that after a restart (a crash, a deploy, a rebalance):
  it resumes from the last offset Kafka Connect committed, so whatever it sent after that commit
  is sent again, transaction markers included (Debezium docs, each connector's "Behavior when things
  go wrong" > "Kafka Connect process crashes": the replacement task "might generate some of the
  same change events that were processed just prior to the crash"; consumers "should always
  anticipate some events that might be duplicated"). Expected behaviour that consumers handle by
  idempotence: reported, never failing ``--fail-on warning``.
- ``duplicate`` (warning) when it is the same record again, processing time included: written
  twice by the pipeline after the connector (a producer retry, a mirror, a copy job).

Copies are set aside before the other rules (they are never also a position regression or an
event after a delete), the transactions check counts them once, and a copied snapshot read is
never also a ``snapshot_restarted``. A data event without a key (a truncate, op ``t``) is a copy
of an earlier keyless one of its topic and partition with the same content; no other rule here
judges keyless events.
``missing_create`` and a first-record ``tombstone_without_delete`` are only judged where the
partition was read from offset 0 without gaps, and never for keys found in several partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame, lit
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.checks.context import CheckContext

POSITION_REGRESSION = Rule("position_regression", "ordering", Severity.ERROR, "key", "source position went backwards for a key")
DUPLICATE = Rule("duplicate", "ordering", Severity.WARNING, "key",
    "the same record again, processing time included (written twice after the connector: a producer retry, a copy); "
    "a copied snapshot read is this, not snapshot_restarted")
REPLAYED_AFTER_RESTART = Rule("replayed_after_restart", "ordering", Severity.INFO, "key",
    "the same change event sent again with a new processing time (ts_ms): the connector re-read its source from its "
    "last committed offset, as Debezium does after a restart (at-least-once); counted once by every other rule")
MISSING_CREATE = Rule("missing_create", "ordering", Severity.WARNING, "key",
    "update/delete of a key never created in a full partition")
EVENT_AFTER_DELETE = Rule("event_after_delete", "ordering", Severity.ERROR, "key", "update/delete after the key was deleted")
TOMBSTONE_WITHOUT_DELETE = Rule("tombstone_without_delete", "ordering", Severity.WARNING, "key", "tombstone not preceded by a delete")
KEY_IN_MULTIPLE_PARTITIONS = Rule("key_in_multiple_partitions", "ordering", Severity.ERROR, "key",
    "one key in several partitions of a topic")
RULES = (POSITION_REGRESSION, DUPLICATE, REPLAYED_AFTER_RESTART, MISSING_CREATE, EVENT_AFTER_DELETE, TOMBSTONE_WITHOUT_DELETE,
         KEY_IN_MULTIPLE_PARTITIONS)


KEY = ["topic", "key_payload"]


def content_hash() -> Column:
    """What makes two data events of a key the same event: op, row images, source position (the value's
    hash without one), the place in its transaction (all of a MongoDB transaction's operations share one
    cluster time, so its position ties them) and what a MongoDB update without its document changed."""
    return F.expr(CONTENT_HASH)


CONTENT_HASH = ("xxhash64(op, before, after, coalesce(CAST(position AS STRING), CAST(value_hash AS STRING)), "
                "txn_total_order, update_hash)")
# when the connector processed the event (ts_us when sent, else ts_ms as written): a replay's is new
PROCESSED = "coalesce(CAST(ts_us AS STRING), CAST(ts_ms_raw AS STRING))"
_LOC = dict(topic="topic", partition="partition", offset="offset", key="key", txn_id="txn_id", server="server",
            table="`table`")
# the keyed records with their place among the key's records: computed once, read by every rule
# (keyless data events take part in copy detection only: ``keyed`` is false for them)
_RECORDS = f"""
SELECT *,
  min_by(partition, struct(record_ts_ms, partition, offset)) OVER (PARTITION BY topic, key_payload) AS home,
  size(collect_set(partition) OVER (PARTITION BY topic, key_payload)) > 1 AS multi,
  {{from_start}} AS from_start,
  kind = 'data' AND row_number() OVER copies > 1 AS dup,
  first_value(struct(offset, processed)) OVER copies AS original,
  lag(CASE WHEN kind = 'data' THEN op ELSE '~' END) OVER (PARTITION BY topic, partition, key_payload ORDER BY offset)
    AS prev_any_op
FROM (SELECT topic, partition, offset, record_ts_ms, key, key_payload, key_payload IS NOT NULL AS keyed, kind, op,
             snapshot, position, txn_id, server, `table`, CASE WHEN kind = 'data' THEN {CONTENT_HASH} END AS content,
             {PROCESSED} AS processed
      FROM {{{{events}}}}
      WHERE kind IN ('data', 'tombstone') AND decode_error IS NULL AND (key_payload IS NOT NULL OR kind = 'data'))
WINDOW copies AS (PARTITION BY topic, partition, key_payload, content ORDER BY offset)"""
# data events in offset order per key, duplicates set aside
_DATA = """
SELECT *, lag(op) OVER w AS prev_op, lag(position) OVER w AS prev_pos, lag(snapshot) OVER w AS prev_snapshot,
  row_number() OVER w AS n
FROM {ordering_records} WHERE kind = 'data' AND keyed AND NOT dup AND op IN ('c', 'u', 'd', 'r')
WINDOW w AS (PARTITION BY topic, partition, key_payload ORDER BY offset)"""


def ordering_sql(ctx: CheckContext) -> SqlFindings:
    """The ordering check's findings as SQL (checks/sql.py) over ``{events}``."""
    from_start, args = ctx.facts.from_start_sql()
    first_record = lit("tombstone is the key's first record")
    return SqlFindings(
        kept=(("ordering_records", _RECORDS.format(from_start=from_start)),),
        ctes=(("ordering_data", _DATA),),
        args=args,
        selects=(
            # keys in several partitions of a topic: the partition of the key's first record is home
            f"""SELECT {finding_sql(KEY_IN_MULTIPLE_PARTITIONS, "concat('key also in partition ', home, ' of this topic')",
                                    topic="topic", partition="partition", offset="f.offset", offsets="offs",
                                    key="f.key", txn_id="f.txn_id", server="f.server", table="f.`table`")}
            FROM (SELECT topic, partition, key_payload, home, min_by(struct(offset, key, txn_id, server, `table`), offset) AS f,
                         sort_array(collect_list(offset)) AS offs
                  FROM {{ordering_records}} WHERE keyed AND multi AND partition != home
                  GROUP BY topic, partition, key_payload, home)""",
            f"""SELECT {finding_sql(DUPLICATE, "concat('the record at offset ', CAST(original.offset AS STRING), "
                                    "' again: same op, row, source position and processing time')", **_LOC)}
            FROM {{ordering_records}} WHERE dup AND original.processed <=> processed""",
            f"""SELECT {finding_sql(REPLAYED_AFTER_RESTART, "concat('the change event at offset ', "
                                    "CAST(original.offset AS STRING), ' sent again (same op, row and source position), "
                                    "processed again at ', coalesce(processed, '?'), ' (first at ', "
                                    "coalesce(original.processed, '?'), '): the connector resumed from an earlier "
                                    "committed offset')", **_LOC)}
            FROM {{ordering_records}} WHERE dup AND NOT original.processed <=> processed""",
            f"""SELECT {finding_sql(TOMBSTONE_WITHOUT_DELETE, f"CASE WHEN prev_any_op IS NULL THEN {first_record} "
                                    "ELSE 'tombstone not preceded by a delete' END", **_LOC)}
            FROM {{ordering_records}}
            WHERE kind = 'tombstone' AND CASE WHEN prev_any_op IS NULL THEN from_start AND NOT multi ELSE prev_any_op != 'd' END""",
            f"""SELECT {finding_sql(POSITION_REGRESSION, "concat('source position ', CAST(position AS STRING), "
                                    "' is behind the previous ', CAST(prev_pos AS STRING))", **_LOC)}
            FROM ordering_data WHERE position IS NOT NULL AND prev_pos IS NOT NULL AND NOT snapshot AND NOT prev_snapshot
              AND position < prev_pos""",
            f"""SELECT {finding_sql(EVENT_AFTER_DELETE, "concat('op ', op, ' after the key was deleted')", **_LOC)}
            FROM ordering_data WHERE op IN ('u', 'd') AND prev_op = 'd'""",
            f"""SELECT {finding_sql(MISSING_CREATE, "concat('op ', op, ' of a key never created in this partition')", **_LOC)}
            FROM ordering_data WHERE n = 1 AND op IN ('u', 'd') AND from_start AND NOT multi""",
        ),
    )


def ordering_findings(events: DataFrame, ctx: CheckContext) -> DataFrame:
    """The ordering check alone over ``events`` (the suite runs ``ordering_sql`` with its scope)."""
    return findings_frame([ordering_sql(ctx)], {"events": events}, ctx.placement)
