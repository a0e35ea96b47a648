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

from cdc_monitor.checks.passes import GroupPass, distribute_by
from cdc_monitor.checks.sql import JavaFunction, SqlFindings, findings_frame, judged_sql
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
# the key pass's records: per (topic, key payload), each record's fields in java/KeyJudge.java's Rec
# order (no row images: their hash), its copies found by a window per key, partition and content (the
# first copy's offset and processing time); keyless data events of a topic are one group, judged for
# copies only. Several partitions: distributed by the key first, so the window and the groups share
# one shuffle
_KEY_FIELDS = ("partition", "offset", "record_ts_ms", "tombstone", "op", "snapshot", "position", "processed",
               "from_start", "key", "txn_id", "server", "table", "copy_of", "copy_of_processed")
_COPY = "content IS NOT NULL AND first_value(offset) OVER copies <> offset"
_KEY_RECORDS = f"""
SELECT topic, key_payload, partition, offset, record_ts_ms, tombstone, op, snapshot, position, processed, from_start,
       key, txn_id, server, `table`,
       CASE WHEN {_COPY} THEN first_value(offset) OVER copies END AS copy_of,
       CASE WHEN {_COPY} THEN first_value(processed) OVER copies END AS copy_of_processed
FROM (SELECT topic, key_payload, partition, offset, record_ts_ms, kind = 'tombstone' AS tombstone, op, snapshot, position,
             CASE WHEN kind = 'data' THEN {CONTENT_HASH} END AS content, {PROCESSED} AS processed,
             {{from_start}} AS from_start, key, txn_id, server, `table`
      FROM {{{{events}}}}
      WHERE kind IN ('data', 'tombstone') AND decode_error IS NULL AND (key_payload IS NOT NULL OR kind = 'data')
      {{distribute}})
WINDOW copies AS (PARTITION BY topic, key_payload, partition, content ORDER BY offset)"""
KEY_JUDGE = JavaFunction(
    "cdc_monitor_judge_keys", "cdcmonitor.KeyJudge",
    "array<struct<rule:string,partition:int,offset:bigint,offsets:array<bigint>,key:string,txn_id:string,"
    "message:string,server:string,`table`:string,record_ts_ms:bigint>>")


def key_pass(from_start: str, distribute: bool) -> GroupPass:
    """The key pass (checks/passes.py): each (topic, key payload)'s records in offset order per
    partition, walked by ``KEY_JUDGE``."""
    return GroupPass(
        name="key_findings",
        records=_KEY_RECORDS.format(from_start=from_start,
                                    distribute=distribute_by(("topic", "key_payload"), distribute)),
        group=("topic", "key_payload"), order=("partition", "offset"), fields=_KEY_FIELDS, judge=KEY_JUDGE,
        keep=("topic",), udf_args=("key_payload IS NOT NULL",))


# the key pass's findings watch's operator judged (java/KeyHistory.java: KeyJudge's walk of a key's kept
# records and new ones), its ``found`` rows (the finding's location, and ``found``: rule, offsets, message,
# ``first``) as the pass's output; a first-record finding holds only where its partition was read from its
# start, which the driver knows (``from_start``, as the key pass reads it)
_JUDGED = """(SELECT found.rule AS rule, topic, partition, offset, found.offsets AS offsets, key, txn_id,
                     found.message AS message, server, `table`, record_ts_ms
              FROM {{key_found}} WHERE NOT found.first OR {from_start})"""


def ordering_sql(ctx: CheckContext, judged: bool = False) -> SqlFindings:
    """The ordering check's findings as SQL (checks/sql.py) over ``{events}``: the key pass, every
    rule judged per key by ``KEY_JUDGE`` (one read of the events, one shuffle). ``judged``: the walks
    ran already, in watch's operator; their findings are the relation ``{key_found}`` (``_JUDGED``)."""
    from_start, args = ctx.facts.from_start_sql()
    return SqlFindings(
        args=args,
        passes=() if judged else (key_pass(from_start, not ctx.placement.one_partition),),
        selects=(judged_sql(RULES, _JUDGED.format(from_start=from_start) if judged else "{key_findings}"),),
    )


def ordering_findings(events: DataFrame, ctx: CheckContext) -> DataFrame:
    """The ordering check alone over ``events`` (the suite runs ``ordering_sql`` with its scope)."""
    return findings_frame([ordering_sql(ctx)], {"events": events}, ctx.session)
