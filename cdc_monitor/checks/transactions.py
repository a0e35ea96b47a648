"""transactions check: BEGIN/END markers joined with the data events' ``transaction`` blocks.

Per transaction-topic partition, in offset order:
- BEGIN without END, with a later BEGIN: ``missing_end`` (at the BEGIN); the newest BEGIN
  without END is ``open`` (Debezium writes END only when the next transaction starts).
- END without BEGIN: ``unverifiable`` when the partition was read from a later offset and the
  END precedes the first BEGIN read (the transaction began before the window), else
  ``missing_begin`` (at the END).
- BEGIN and END, begun after every data partition read from a later offset has records (else
  ``unverifiable``: some of its events may lie before the window): ``count_mismatch`` (END.event_count vs distinct data events seen),
  ``collection_count_mismatch`` (END.data_collections vs events per table), ``order_gap``
  (total_order / data_collection_order not 1..n; at the first data event out of sequence).
- An END of any other status (its BEGIN unmatched, or events perhaps before the window) counted fewer
  events than were seen, in total or in a collection it lists: ``count_mismatch`` /
  ``collection_count_mismatch`` all the same (what the window misses only adds to what was seen).
Copies of a data event count once here: exact re-deliveries, and the events a connector sends
again after a restart (the same change with a new ``ts_ms``; the ordering check reports both, as
``duplicate`` and ``replayed_after_restart``). Their re-sent BEGIN/END markers pair as the first ones did: a
transaction keeps its first BEGIN and first END.
A data event whose transaction id is on no marker while its record time lies inside the span
the transaction-topic records cover is an ``orphan_event``.

Markers and events are reconciled by the transaction key (``decoding.txn_key``): the whole id,
except PostgreSQL's ``txId:LSN`` ids, whose LSN differs on every record (DBZ-5329), reconciled by
the txId. Findings keep the full id of the record they point at. A complete transaction whose
END names a collection with events but the window holds no event of that collection at all (its
topic was not read) is ``unverifiable``; the summary lists those collections.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, Window
from pyspark.sql import functions as F

from cdc_monitor.checks.context import CheckContext, WindowFacts
from cdc_monitor.checks.findings import finding
from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.checks.passes import GroupPass, pass_frame
from cdc_monitor.checks.sql import JavaFunction
from cdc_monitor.vocabulary import TX_STATUSES, Rule, Severity, TxStatus

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MISSING_END = Rule(TxStatus.MISSING_END.value, "transactions", Severity.ERROR, "transaction",
    "a BEGIN followed by another BEGIN without its END")
MISSING_BEGIN = Rule(TxStatus.MISSING_BEGIN.value, "transactions", Severity.ERROR, "transaction", "an END without its BEGIN")
COUNT_MISMATCH = Rule("count_mismatch", "transactions", Severity.ERROR, "transaction",
    "END.event_count differs from the data events seen (copies once); below them whatever else the transaction "
    "lacks (an unmatched BEGIN, events before the window)")
COLLECTION_COUNT_MISMATCH = Rule("collection_count_mismatch", "transactions", Severity.ERROR, "transaction",
    "END.data_collections differs per collection; below a listed collection's events whatever else the "
    "transaction lacks")
ORDER_GAP = Rule("order_gap", "transactions", Severity.ERROR, "transaction", "total_order/data_collection_order not 1..n")
ORPHAN_EVENT = Rule("orphan_event", "transactions", Severity.WARNING, "transaction",
    "transaction id on no BEGIN/END covering its time")
END_BEFORE_BEGIN = Rule("end_before_begin", "transactions", Severity.WARNING, "transaction",
    "a complete transaction's END ts_ms is before its BEGIN's")
INVALID_MARKER_ID = Rule("invalid_marker_id", "transactions", Severity.ERROR, "record",
    "a BEGIN or END marker with a null or empty id (it cannot be matched: its partner marker then looks unmatched)")
RULES = (
    MISSING_END, MISSING_BEGIN, COUNT_MISMATCH, COLLECTION_COUNT_MISMATCH, ORDER_GAP, ORPHAN_EVENT, END_BEFORE_BEGIN,
    INVALID_MARKER_ID
)


STATUSES = TX_STATUSES
PROBLEMS = (COUNT_MISMATCH.name, COLLECTION_COUNT_MISMATCH.name, ORDER_GAP.name)


@dataclass
class TransactionResult:
    findings: list[DataFrame]
    transactions: DataFrame  # one row per transaction id: status and problem flags


# a BEGIN or END marker with an id: what pairs and names transactions
MARKER_SQL = ("(kind = 'transaction' AND decode_error IS NULL AND status IN ('BEGIN', 'END') "
              "AND coalesce(trim(marker_id) <> '', false))")


def _markers(events: DataFrame) -> DataFrame:
    return events.where(F.expr(MARKER_SQL)).withColumn("txn_key", F.col("marker_key"))


def _per_transaction(markers: DataFrame, facts: WindowFacts) -> DataFrame:
    """One row per (transaction-topic partition, server, transaction): its first BEGIN and first
    END (repeated markers keep the first of each), the partition's next BEGIN after it and its
    first BEGIN, with a status. One shuffle: a window and an aggregate on the same partitioning."""
    is_begin, is_end = F.col("status") == "BEGIN", F.col("status") == "END"
    begin_offset = F.when(is_begin, F.col("offset"))
    part = Window.partitionBy("topic", "partition")
    # next BEGIN after each marker, as a growing frame over descending offsets (linear, unlike
    # a frame running to the unbounded end)
    later = part.orderBy(F.col("offset").desc()).rowsBetween(Window.unboundedPreceding, -1)
    marked = markers.withColumn("next_begin", F.min(begin_offset).over(later)).withColumn(
        "first_begin", F.min(begin_offset).over(part))
    txns = marked.groupBy("topic", "partition", "server", "txn_key").agg(
        F.min_by(F.when(is_begin, F.struct(
            F.col("offset").alias("begin_offset"), F.col("marker_id").alias("begin_id"), F.col("key").alias("begin_key"),
            "next_begin", F.col("record_ts_ms").alias("begin_ts"), F.col("ts_ms").alias("begin_ts_ms"))),
            begin_offset).alias("b"),
        F.min_by(F.when(is_end, F.struct(
            F.col("offset").alias("end_offset"), F.col("marker_id").alias("end_id"), F.col("key").alias("end_key"),
            F.col("marker_event_count").alias("event_count"), F.col("marker_collections").alias("collections"),
            F.col("record_ts_ms").alias("end_ts"),
            F.col("ts_ms").alias("end_ts_ms"))),
            F.when(is_end, F.col("offset"))).alias("e"),
        F.first("first_begin").alias("first_begin"),
    ).select("topic", "partition", "server", "txn_key", "b.*", "e.*", "first_begin")
    txns = txns.withColumn("txn_id", F.coalesce("begin_id", "end_id")).withColumn("from_start", facts.from_start())
    data_start = facts.lookup("data_start", F.col("server"))
    read = facts.lookup("read", F.col("server"))
    # collections the END counts events of, of which the window holds no event at all
    absent = F.transform(F.filter(F.coalesce(F.col("collections"), F.array()), lambda c: (c["event_count"] > 0) & ~F.coalesce(
        F.array_contains(read, c["data_collection"]), F.lit(False))), lambda c: c["data_collection"])
    nothing_read = read.isNull() & (F.coalesce(F.col("event_count"), F.lit(0)) > 0)
    txns = txns.withColumn("absent", absent)
    status = (
        F.when(F.col("begin_offset").isNotNull() & F.col("end_offset").isNotNull()
               & ((F.col("begin_ts") < F.coalesce(data_start, F.lit(0))) | (F.size("absent") > 0) | nothing_read),
               F.lit(TxStatus.UNVERIFIABLE.value))
        .when(F.col("begin_offset").isNotNull() & F.col("end_offset").isNotNull(), F.lit(TxStatus.COMPLETE.value))
        .when(F.col("begin_offset").isNotNull() & F.col("next_begin").isNotNull(), F.lit(TxStatus.MISSING_END.value))
        .when(F.col("begin_offset").isNotNull(), F.lit(TxStatus.OPEN.value))
        .when(~F.col("from_start") & (F.col("first_begin").isNull() | (F.col("end_offset") < F.col("first_begin"))),
              F.lit(TxStatus.UNVERIFIABLE.value))
        .otherwise(F.lit(TxStatus.MISSING_BEGIN.value))
    )
    return txns.withColumn("status", status)


# the transaction pass's data side: per (server, transaction key), each data event naming a transaction
# and each marker naming one, in java/TxnJudge.java's Rec order, then the span its server's transaction
# topic covers. No SQL window: the stream's one sort lays out what needs more than a record. A data
# event's copies (ordering's content hash, which holds its total_order, with its key payload: a
# re-delivery, or a replay after a connector restart, whose processing time ``ts_ms`` is new) share its
# total_order and topic: the walk finds them in that run (bounded: TxnJudge.RUN_HASHES), read in offset
# order as the topic's events are; its rank in its collection is its collection's count so far. The
# judge returns a summary row per transaction and a row per orphan event (see TxnJudge)
TXN_JUDGE = JavaFunction(
    "cdc_monitor_judge_transactions", "cdcmonitor.TxnJudge",
    "array<struct<seen:bigint,seen_by_collection:map<string,bigint>,brk:struct<topic:string,partition:int,offset:bigint,"
    "key:string,txn_total_order:bigint,txn_collection_order:bigint,total_break:boolean,`table`:string,txn_id:string,"
    "record_ts_ms:bigint>,breaks:bigint,orphan:struct<topic:string,partition:int,offset:bigint,key:string,"
    "txn_id:string,`table`:string,record_ts_ms:bigint>>>")
_FIELDS = ("marker", "topic", "partition", "offset", "table", "txn_total_order", "txn_collection_order", "record_ts_ms",
           "key", "txn_id", "same")
# a group's order (TxnJudge.ORDER): markers first, then total_order, topic, partition, offset
_ORDER = ("marker DESC", "txn_total_order", "topic", "partition", "offset")
_RECORDS = f"""
SELECT server, CASE WHEN marker THEN marker_key ELSE txn_key END AS txn_key, marker, topic, partition, offset, `table`,
       txn_total_order, txn_collection_order, record_ts_ms, key, txn_id,
       CASE WHEN NOT marker THEN xxhash64(key_payload, {CONTENT_HASH}) END AS same, {{lo}} AS lo, {{hi}} AS hi
FROM (SELECT *, {MARKER_SQL} AS marker FROM {{{{events}}}})
WHERE (data_event AND txn_id IS NOT NULL) OR marker"""


def data_pass(ctx: CheckContext) -> tuple[GroupPass, dict[str, str]]:
    """The transaction pass's data side (checks/passes.py) and its parameters: per (server, txn_key),
    the data events seen (copies of one event counted once), seen per collection, the first event out
    of 1..n order and how many are (a row), and the orphan events (a row each: their transaction on no
    marker, inside the span the server's transaction topic covers), judged by ``TXN_JUDGE``."""
    lo, lo_args = ctx.facts.lookup_sql("txn_lo", "server")
    hi, hi_args = ctx.facts.lookup_sql("txn_hi", "server")
    return GroupPass(
        name="txn_data", records=_RECORDS.format(lo=lo, hi=hi), group=("server", "txn_key"), order=_ORDER,
        fields=_FIELDS, judge=TXN_JUDGE, keep=("server", "txn_key"), udf_args=("first(lo)", "first(hi)")), {**lo_args, **hi_args}


def transaction_check(events: DataFrame, ctx: CheckContext) -> TransactionResult:
    facts = ctx.facts
    markers = _markers(events)
    group_pass, args = data_pass(ctx)
    data = pass_frame(group_pass, {"events": events}, ctx.session, args)
    # a row per transaction the markers name, with its data side; and one per transaction only data
    # events name (its orphans): every finding of the pass comes from these rows, one read of each side
    txns = _per_transaction(markers, facts).withColumn("marked", F.lit(True))
    txns = txns.join(data, ["server", "txn_key"], "full")
    txns = txns.withColumn("seen", F.coalesce("seen", F.lit(0)))
    complete = F.col("status") == TxStatus.COMPLETE.value
    coll_diff = F.filter(
        F.coalesce(F.col("collections"), F.array()),
        lambda c: c["event_count"] != F.coalesce(F.element_at(F.col("seen_by_collection"), c["data_collection"]), F.lit(0)),
    )
    seen_not_listed = F.filter(
        F.map_keys(F.coalesce(F.col("seen_by_collection"), F.create_map().cast("map<string,bigint>"))),
        lambda t: ~F.exists(F.coalesce(F.col("collections"), F.array()), lambda c: c["data_collection"] == t),
    )
    # more events than an END counts (in total, or in a collection it lists) is a mismatch whatever else the
    # window lacks: events outside it, or an unmatched BEGIN (a marker with no id), only add to what was seen.
    # Fewer, or a collection it does not list (its name perhaps spelled otherwise: the collection is then not
    # read), is one only for a complete transaction
    coll_over = F.exists(F.coalesce(F.col("collections"), F.array()), lambda c: c["event_count"] < F.coalesce(
        F.element_at(F.col("seen_by_collection"), c["data_collection"]), F.lit(0)))
    ended = F.col("end_offset").isNotNull()
    txns = ctx.placement.keep(
        txns.withColumn(COUNT_MISMATCH.name, ended & F.col("event_count").isNotNull() & (
            (complete & (F.col("event_count") != F.col("seen"))) | (F.col("event_count") < F.col("seen"))))
        .withColumn(COLLECTION_COUNT_MISMATCH.name, ended & F.col("collections").isNotNull() & (
            (complete & ((F.size(coll_diff) > 0) | (F.size(seen_not_listed) > 0))) | coll_over))
        .withColumn("coll_diff", coll_diff)
        .withColumn(ORDER_GAP.name, complete & F.col("brk").isNotNull())
    )
    marker_loc = dict(topic=F.col("topic"), partition=F.col("partition"), server=F.col("server"))
    begin_loc = dict(marker_loc, txn_id=F.col("begin_id"), at=F.col("begin_ts"))
    end_loc = dict(marker_loc, txn_id=F.col("end_id"), at=F.col("end_ts"))
    found = [  # (where, the finding there)
        (F.col("status") == TxStatus.MISSING_END.value, finding(
            MISSING_END, F.concat(F.lit("BEGIN of "), F.col("txn_id"), F.lit(" is followed by another BEGIN (offset "),
                                    F.col("next_begin"), F.lit(") without its END")),
            offset=F.col("begin_offset"), key=F.col("begin_key"), **begin_loc)),
        (F.col("status") == TxStatus.MISSING_BEGIN.value, finding(
            MISSING_BEGIN, F.concat(F.lit("END of "), F.col("txn_id"), F.lit(" has no BEGIN")),
            offset=F.col("end_offset"), key=F.col("end_key"), **end_loc)),
        (F.col(COUNT_MISMATCH.name), finding(
            COUNT_MISMATCH, F.concat(F.lit("END says "), F.col("event_count"), F.lit(" events, "), F.col("seen"),
                                       F.lit(" seen")),
            offset=F.col("end_offset"), key=F.col("end_key"), **end_loc)),
        (F.col(COLLECTION_COUNT_MISMATCH.name), finding(COLLECTION_COUNT_MISMATCH,
            F.concat(F.lit("END per collection "), F.to_json("collections"), F.lit(" but seen "),
                     F.to_json(F.coalesce("seen_by_collection", F.create_map()))),
            offset=F.col("end_offset"), key=F.col("end_key"), **end_loc)),
        (complete & (F.col("end_ts_ms") < F.col("begin_ts_ms")), finding(
            END_BEFORE_BEGIN, F.concat(F.lit("END of "), F.col("txn_id"), F.lit(" has ts_ms "), F.col("end_ts_ms"),
                                         F.lit(", before its BEGIN's "), F.col("begin_ts_ms")),
            offset=F.col("end_offset"), key=F.col("end_key"), **end_loc)),
        (F.col(ORDER_GAP.name), finding(ORDER_GAP,
            F.concat(F.when(F.col("brk.total_break"), F.lit("total_order ")).otherwise(F.lit("data_collection_order ")),
                     F.lit("breaks 1..n at total_order "), F.coalesce(F.col("brk.txn_total_order").cast("string"), F.lit("?")),
                     F.lit(" ("), F.col("breaks"), F.lit(" event(s) out of sequence)")),
            topic=F.col("brk.topic"), partition=F.col("brk.partition"), offset=F.col("brk.offset"),
            key=F.col("brk.key"), txn_id=F.col("brk.txn_id"), server=F.col("server"), table=F.col("brk.table"),
            at=F.col("brk.record_ts_ms"))),
    ]
    # each row's findings as one array (those that hold, then its orphans), exploded: one pass over the rows
    per_row = F.filter(F.array(*[F.when(where, F.struct(*cols)) for where, cols in found],
                               F.when(F.col("orphan").isNotNull(), _orphan(F.col("orphan")))), lambda f: f.isNotNull())
    findings = txns.select(F.explode(per_row).alias("f")).select("f.*")
    return TransactionResult(findings=[findings], transactions=txns.where("marked"))


def _orphan(o: Column) -> Column:
    """An orphan event of the data side (a struct of TxnJudge's ``orphan``) as a finding."""
    return F.struct(*finding(ORPHAN_EVENT, F.concat(F.lit("transaction "), o["txn_id"], F.lit(" appears on no BEGIN/END")),
                             topic=o["topic"], partition=o["partition"], offset=o["offset"], key=o["key"],
                             txn_id=o["txn_id"], server=F.col("server"), table=o["table"], at=o["record_ts_ms"]))


def summary_frame(txns: DataFrame) -> DataFrame:
    """Per server: transactions by status and problem, and the collections not read."""
    return txns.groupBy("server").agg(F.count(F.lit(1)).alias("total"),
                                      *[F.sum((F.col("status") == s).cast("int")).alias(s) for s in STATUSES],
                                      *[F.sum(F.col(p).cast("int")).alias(p) for p in PROBLEMS],
                                      F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.when(
                                          F.col("status") == TxStatus.UNVERIFIABLE.value, F.col("absent")))))).alias("absent"))


def transaction_summary(rows: list[dict[str, Any]], findings_count: dict[str, int]) -> dict[str, Any]:
    """Statuses and problems in total and per server, from ``summary_frame``'s rows."""
    by_server = {r["server"] or "": {k: int(r.get(k) or 0) for k in STATUSES + PROBLEMS}
                 for r in sorted(rows, key=lambda r: (r["server"] is not None, r["server"]))}
    out: dict[str, Any] = {"total": sum(int(r["total"]) for r in rows)}
    out.update({k: sum(int(r.get(k) or 0) for r in rows) for k in STATUSES + PROBLEMS})
    out["orphan_events"] = findings_count.get(ORPHAN_EVENT.name, 0)
    out["by_server"] = by_server
    # data collections whose counts could not be verified: named in END markers, no event read
    out["collections_not_read"] = [{"server": r["server"], "collection": c}
                                   for r in sorted(rows, key=lambda r: r["server"] or "") for c in (r.get("absent") or [])]
    return out
