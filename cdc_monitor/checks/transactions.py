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

from pyspark.sql import functions as F

from cdc_monitor.checks.context import CheckContext, WindowFacts
from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.checks.sql import JavaFunction, finding_sql, lit, register, sql_over
from cdc_monitor.vocabulary import TX_STATUSES, Rule, Severity, TxStatus

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

MISSING_END = Rule(TxStatus.MISSING_END.value, "transactions", Severity.ERROR, "transaction",
    "a BEGIN followed by another BEGIN without its END")
MISSING_BEGIN = Rule(TxStatus.MISSING_BEGIN.value, "transactions", Severity.ERROR, "transaction", "an END without its BEGIN")
COUNT_MISMATCH = Rule("count_mismatch", "transactions", Severity.ERROR, "transaction",
    "END.event_count differs from the data events seen")
COLLECTION_COUNT_MISMATCH = Rule("collection_count_mismatch", "transactions", Severity.ERROR, "transaction",
    "END.data_collections differs per collection")
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


# a BEGIN or END marker that can be paired (INVALID_MARKER_ID, judged by the decoder, covers the rest)
MARKER = ("kind = 'transaction' AND decode_error IS NULL AND status IN ('BEGIN', 'END') "
          "AND coalesce(trim(marker_id) != '', false)")
BEGIN, END = "status = 'BEGIN'", "status = 'END'"

# the transaction pass's data side: one aggregate per (server, transaction key) collects each data
# event naming a transaction, and each marker naming one, as this struct (java/TxnJudge.java's Rec
# order); the judge returns what the transaction's data events show (see TxnJudge)
TXN_JUDGE = JavaFunction(
    "cdc_monitor_judge_transactions", "cdcmonitor.TxnJudge",
    "struct<seen:bigint,seen_by_collection:map<string,bigint>,brk:struct<topic:string,partition:int,offset:bigint,"
    "key:string,txn_total_order:bigint,txn_collection_order:bigint,total_break:boolean,`table`:string,txn_id:string,"
    "record_ts_ms:bigint>,breaks:bigint,orphans:array<struct<topic:string,partition:int,offset:bigint,key:string,"
    "txn_id:string,`table`:string,record_ts_ms:bigint>>>")


def _transactions_sql(facts: WindowFacts) -> tuple[str, dict[str, str]]:
    """One row per transaction (its markers' side and its data side, fully joined), as SQL over
    ``{events}``, and the facts it reads (named parameters).

    The markers' side: per (transaction-topic partition, server, transaction), its first BEGIN and
    first END (repeated markers keep the first of each), the partition's next BEGIN after it and its
    first BEGIN, and a status; one shuffle (a window and an aggregate on the same partitioning).

    The data side, per (server, txn_key): the data events seen (copies of one event, ordering's
    content hash, counted once: a re-delivery, or a replay after a connector restart, whose processing
    time ``ts_ms`` is new), seen per collection, the first event out of 1..n order and how many are,
    and the orphan events (their transaction on no marker, inside the span the server's transaction
    topic covers). One aggregate, judged by ``TXN_JUDGE``."""
    data_start, a1 = facts.lookup_sql("data_start", "server")
    read, a2 = facts.lookup_sql("read", "server")
    from_start, a3 = facts.from_start_sql()
    lo, a4 = facts.lookup_sql("txn_lo", "server")
    hi, a5 = facts.lookup_sql("txn_hi", "server")
    first_begin_of = f"min(CASE WHEN {BEGIN} THEN offset END)"
    both = "begin_offset IS NOT NULL AND end_offset IS NOT NULL"
    s = {t: lit(t.value) for t in TxStatus}
    complete = f"status = {s[TxStatus.COMPLETE]}"
    coll_diff = ("filter(coalesce(collections, array()), "
                 "c -> c.event_count != coalesce(element_at(seen_by_collection, c.data_collection), 0))")
    seen_not_listed = ("filter(map_keys(coalesce(seen_by_collection, CAST(map() AS map<string,bigint>))), "
                       "t -> NOT exists(coalesce(collections, array()), c -> c.data_collection = t))")
    text = f"""
    WITH tx_marked AS (
      SELECT topic, partition, offset, server, marker_key AS txn_key, status, marker_id, key, record_ts_ms, ts_ms,
        marker_event_count, marker_collections,
        -- the next BEGIN after each marker, as a growing frame over descending offsets (linear, unlike
        -- a frame running to the unbounded end)
        {first_begin_of} OVER (PARTITION BY topic, partition ORDER BY offset DESC
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS next_begin,
        {first_begin_of} OVER (PARTITION BY topic, partition) AS first_begin
      FROM {{events}} WHERE {MARKER}),
    tx_pairs AS (
      SELECT topic, partition, server, txn_key, b.*, e.*, first_begin FROM (
        SELECT topic, partition, server, txn_key,
          min_by(CASE WHEN {BEGIN} THEN struct(offset AS begin_offset, marker_id AS begin_id, key AS begin_key, next_begin,
                                               record_ts_ms AS begin_ts, ts_ms AS begin_ts_ms) END,
                 CASE WHEN {BEGIN} THEN offset END) AS b,
          min_by(CASE WHEN {END} THEN struct(offset AS end_offset, marker_id AS end_id, key AS end_key,
                                             marker_event_count AS event_count, marker_collections AS collections,
                                             record_ts_ms AS end_ts, ts_ms AS end_ts_ms) END,
                 CASE WHEN {END} THEN offset END) AS e,
          first(first_begin) AS first_begin
        FROM tx_marked GROUP BY topic, partition, server, txn_key)),
    tx_markers_side AS (
      SELECT *, CASE
          WHEN {both} AND (begin_ts < coalesce({data_start}, 0) OR size(absent) > 0
                           OR ({read} IS NULL AND coalesce(event_count, 0) > 0)) THEN {s[TxStatus.UNVERIFIABLE]}
          WHEN {both} THEN {s[TxStatus.COMPLETE]}
          WHEN begin_offset IS NOT NULL AND next_begin IS NOT NULL THEN {s[TxStatus.MISSING_END]}
          WHEN begin_offset IS NOT NULL THEN {s[TxStatus.OPEN]}
          WHEN NOT from_start AND (first_begin IS NULL OR end_offset < first_begin) THEN {s[TxStatus.UNVERIFIABLE]}
          ELSE {s[TxStatus.MISSING_BEGIN]} END AS status
      FROM (SELECT *, coalesce(begin_id, end_id) AS txn_id, {from_start} AS from_start,
              -- collections the END counts events of, of which the window holds no event at all
              transform(filter(coalesce(collections, array()), c -> c.event_count > 0
                               AND NOT coalesce(array_contains({read}, c.data_collection), false)),
                        c -> c.data_collection) AS absent
            FROM tx_pairs)),
    tx_data_side AS (
      SELECT server, txn_key, j.seen AS data_seen, j.seen_by_collection, j.brk, j.breaks, j.orphans FROM (
        SELECT server, txn_key, {TXN_JUDGE.name}(collect_list(rec), {lo}, {hi}) AS j FROM (
          SELECT server, CASE WHEN m THEN marker_key ELSE txn_key END AS txn_key,
            struct(m, topic, partition, offset, key_payload, CASE WHEN NOT m THEN {CONTENT_HASH} END, `table`,
                   txn_total_order, txn_collection_order, record_ts_ms, key, txn_id) AS rec
          FROM (SELECT *, {MARKER} AS m FROM {{events}}) WHERE (data_event AND txn_id IS NOT NULL) OR m)
        GROUP BY server, txn_key)),
    -- a row per transaction the markers name, with its data side; and one per transaction only data
    -- events name (its orphans): every finding of the pass comes from these rows, one read of each side
    tx_joined AS (
      SELECT * EXCEPT (data_seen), coalesce(data_seen, 0) AS seen
      FROM (SELECT *, true AS marked FROM tx_markers_side) m FULL OUTER JOIN tx_data_side d USING (server, txn_key))
    SELECT *, {complete} AND event_count IS NOT NULL AND event_count != seen AS {COUNT_MISMATCH.name},
      {complete} AND collections IS NOT NULL AND (size({coll_diff}) > 0 OR size({seen_not_listed}) > 0)
        AS {COLLECTION_COUNT_MISMATCH.name},
      {coll_diff} AS coll_diff,
      {complete} AND brk IS NOT NULL AS {ORDER_GAP.name}
    FROM tx_joined"""
    return text, {**a1, **a2, **a3, **a4, **a5}


def _findings_sql() -> str:
    """The pass's findings over ``{txns}`` (``_transactions_sql``'s rows): each row's findings as one
    array (those that hold, then its orphans), exploded: one pass over the rows."""
    marker = dict(topic="topic", partition="partition", server="server")
    begin = dict(marker, offset="begin_offset", key="begin_key", txn_id="begin_id", at="begin_ts")
    end = dict(marker, offset="end_offset", key="end_key", txn_id="end_id", at="end_ts")
    complete = f"status = {lit(TxStatus.COMPLETE.value)}"
    found = [  # (where, the finding there)
        (f"status = {lit(TxStatus.MISSING_END.value)}", finding_sql(MISSING_END, (
            "concat('BEGIN of ', txn_id, ' is followed by another BEGIN (offset ', next_begin, ') without its END')"),
            **begin)),
        (f"status = {lit(TxStatus.MISSING_BEGIN.value)}", finding_sql(
            MISSING_BEGIN, "concat('END of ', txn_id, ' has no BEGIN')", **end)),
        (COUNT_MISMATCH.name, finding_sql(
            COUNT_MISMATCH, "concat('END says ', event_count, ' events, ', seen, ' seen')", **end)),
        (COLLECTION_COUNT_MISMATCH.name, finding_sql(COLLECTION_COUNT_MISMATCH, (
            "concat('END per collection ', to_json(collections), ' but seen ', to_json(coalesce(seen_by_collection, map())))"),
            **end)),
        (f"{complete} AND end_ts_ms < begin_ts_ms", finding_sql(END_BEFORE_BEGIN, (
            f"concat('END of ', txn_id, ' has ts_ms ', end_ts_ms, {lit(', before its BEGIN' + chr(39) + 's ')}, begin_ts_ms)"),
            **end)),
        (ORDER_GAP.name, finding_sql(ORDER_GAP, (
            "concat(CASE WHEN brk.total_break THEN 'total_order ' ELSE 'data_collection_order ' END, "
            "'breaks 1..n at total_order ', coalesce(CAST(brk.txn_total_order AS string), '?'), ' (', breaks, "
            "' event(s) out of sequence)')"),
            topic="brk.topic", partition="brk.partition", offset="brk.offset", key="brk.key", txn_id="brk.txn_id",
            server="server", table="brk.`table`", at="brk.record_ts_ms")),
    ]
    holds = ", ".join(f"CASE WHEN {where} THEN struct({columns}) END" for where, columns in found)
    orphan = finding_sql(ORPHAN_EVENT, "concat('transaction ', o.txn_id, ' appears on no BEGIN/END')", topic="o.topic",
                         partition="o.partition", offset="o.offset", key="o.key", txn_id="o.txn_id", server="server",
                         table="o.`table`", at="o.record_ts_ms")
    return (f"SELECT inline(concat(filter(array({holds}), f -> f IS NOT NULL), "
            f"transform(coalesce(orphans, array()), o -> struct({orphan})))) FROM {{txns}}")


def transaction_check(events: DataFrame, ctx: CheckContext) -> TransactionResult:
    """The transaction pass (see the module): its rows kept (the findings and the summary read them)
    and its findings. Two statements, each analysed once."""
    spark = events.sparkSession
    register(spark, TXN_JUDGE)
    text, args = _transactions_sql(ctx.facts)
    txns = ctx.placement.keep(sql_over(spark, text, {"events": events}, args))
    findings = sql_over(spark, _findings_sql(), {"txns": txns})
    return TransactionResult(findings=[findings], transactions=txns.where("marked"))


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
