"""One micro-batch of ``watch``: the batch checks over (carried context + new records).

Each batch decodes its new records together with the records carried from earlier batches and
runs the same checks as ``scan``. A finding is reported once:
- per-record rules (decode, lag, schema, ordering) only for new records (the carried ones were
  judged when they were new); an orphan candidate that could not be judged yet (the transaction
  topic had not reached its time) is carried and judged later;
- transaction rules when the transaction becomes final in this batch (complete, missing_end,
  missing_begin, unverifiable); open transactions are carried with their data events.
What is carried is bounded: the last ``key_history`` records of every key (keys idle for
``key_ttl_ms`` of record time are evicted, after which first-record rules are no longer judged
in that partition), open transactions, orphan candidates (for ``await_ms`` of wall time), and
the newest change event per table (so a lag spike crossing a batch boundary counts once).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.findings import FINDING_COLUMNS
from cdc_monitor.checks.lag import change_events, lag_row_ms, with_lag
from cdc_monitor.checks.registry import run_checks
from cdc_monitor.config import ScanConfig
from cdc_monitor.decoding import DecodeOptions, decode_records
from cdc_monitor.decoding.avro import avro_as_json
from cdc_monitor.decoding.events import txn_key
from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.census import heartbeats
from cdc_monitor.engine.facts import census_frame, facts_from_rows
from cdc_monitor.sources.base import KAFKA_COLUMNS
from cdc_monitor.watch.state import PartitionHistory, StateStore, WatchState, add

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FINAL = ("complete", "missing_end", "missing_begin", "unverifiable")
COORD = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                      T.StructField("offset", T.LongType())])


@dataclass
class WatchSettings:
    scan: ScanConfig = field(default_factory=ScanConfig)
    key_history: int = 3
    key_ttl_ms: int = 24 * 3_600_000
    await_ms: int = 600_000
    grace_ms: int = 600_000  # open longer than this (wall time): reported as overdue
    final_memory: int = 200_000  # ids of finalized transactions remembered (a replayed event of one is no orphan)


@dataclass
class BatchOutcome:
    batch_id: int
    records: int
    invalid_records: int = 0
    lag: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    finalized: dict[str, dict[str, int]] = field(default_factory=dict)  # server -> status -> n
    findings: list[dict[str, Any]] = field(default_factory=list)  # grouped counts
    skipped: bool = False
    seconds: float = 0.0


def _key(*parts: Any) -> str:
    return "|".join(str(p) for p in parts)


def _coords(spark: SparkSession, rows: list[list[Any]] | list[tuple[str, int, int]]) -> DataFrame:
    return spark.createDataFrame([(str(r[0]), int(r[1]), int(r[2])) for r in rows], COORD)


def _partitions(state: WatchState, txn_regex: str, batch_id: int) -> list[dict[str, Any]]:
    """from_start per partition as the stream saw it: data partitions read from offset 0 whose key
    history was never evicted; transaction-topic partitions also once read in an earlier batch
    (every BEGIN since then has been seen, so an END without one is missing_begin)."""
    import re

    rows = []
    for k, h in state.partitions.items():
        topic, part = k.rsplit("|", 1)
        from_start = h.first_offset == 0 and not h.evicted
        if re.search(txn_regex, topic):
            from_start = h.first_offset == 0 or h.first_batch < batch_id
        rows.append({"topic": topic, "partition": int(part), "from_start": from_start, "min_ts_ms": h.first_ts})
    return rows


@dataclass
class _Verdicts:
    open_txns: list[tuple[str, str]]
    final_txns: list[tuple[str, str]]
    orphans_judged: set[tuple[str, int, int]]


def _final_ids(spark: SparkSession, state: WatchState) -> DataFrame:
    rows = [tuple(k.split("|", 1)) for k in state.final_txns]
    return F.broadcast(spark.createDataFrame(rows, "server string, txn_key string"))


def process_batch(spark: SparkSession, new_records: DataFrame, batch_id: int, state: WatchState,
                  store: StateStore, settings: WatchSettings, now: float | None = None
                  ) -> tuple[BatchOutcome, WatchState]:
    """Apply one micro-batch to a copy of ``state``; the new state is committed in ``store`` and
    returned. A batch id already applied is skipped (the state is returned unchanged)."""
    started = time.time()
    now = time.time() if now is None else now
    if batch_id <= state.batch_id:
        return BatchOutcome(batch_id, 0, skipped=True), state
    state = copy.deepcopy(state)
    cfg = settings.scan
    cache = FrameCache()
    try:
        new = new_records.select(*KAFKA_COLUMNS)
        raw = new
        if state.carry_path:
            raw = new.unionByName(spark.read.parquet(state.carry_path).select(*KAFKA_COLUMNS))
        raw = cache.materialize(raw)
        starts = {(r["topic"], r["partition"]): (r["lo"], r["ts"]) for r in new.groupBy("topic", "partition").agg(
            F.min("offset").alias("lo"), F.min(F.unix_millis("timestamp")).alias("ts")).collect()}
        if not starts:  # nothing new: nothing to judge, the state stays as it is
            return BatchOutcome(batch_id, 0, seconds=round(time.time() - started, 3)), state
        for (topic, part), (lo, ts) in starts.items():
            state.partitions.setdefault(_key(topic, part), PartitionHistory(int(ts or 0), int(lo), batch_id))
        start_df = F.broadcast(spark.createDataFrame([(t, p, lo) for (t, p), (lo, _) in starts.items()], COORD))
        opts = DecodeOptions(cfg.transaction_topic_regex, cfg.heartbeat_topic_prefix)
        events = cache.materialize(decode_records(avro_as_json(raw, cfg, cache).records, opts).join(
            start_df.withColumnRenamed("offset", "batch_start"), ["topic", "partition"], "left"
        ).withColumn("is_new", F.coalesce(F.col("offset") >= F.col("batch_start"), F.lit(False))).drop("batch_start"))
        outcome, verdicts = _check(spark, events, state, settings, batch_id, cache)
        _next_state(spark, raw, events, state, store, settings, batch_id, cache, now, verdicts)
        outcome.seconds = round(time.time() - started, 3)
        return outcome, state
    finally:
        cache.release()


def _check(spark: SparkSession, events: DataFrame, state: WatchState, settings: WatchSettings, batch_id: int,
           cache: FrameCache) -> tuple[BatchOutcome, _Verdicts]:
    cfg = settings.scan
    facts = facts_from_rows(census_frame(events).collect(), _partitions(state, cfg.transaction_topic_regex, batch_id))
    for beat in heartbeats(facts.rows):  # the newest per server, kept across batches for the gauge
        if beat["last_ts_ms"] is not None:
            server = beat["server"] or ""
            state.heartbeats[server] = max(state.heartbeats.get(server, 0), int(beat["last_ts_ms"]))
    fresh = events.where("is_new")
    tail = F.broadcast(_coords(spark, state.lag_tail).withColumn("tail", F.lit(True)))
    lag_scope = events.join(tail, ["topic", "partition", "offset"], "left").where(F.col("is_new") | F.col("tail").isNotNull())
    # the scan's runner, its findings filtered by scope: per-record rules ran on the new records
    # only; per-key and per-table findings count where they land on a new record; per-transaction
    # ones once the transaction is final (orphans once judged, or when their wait ends)
    checked = run_checks(events, facts, cfg, cache, fresh=fresh, lag_scope=lag_scope)
    awaiting = F.broadcast(_coords(spark, state.awaiting).withColumn("awaited", F.lit(True)))
    is_new = events.select("topic", "partition", "offset", "is_new")
    judged = [f.select(*FINDING_COLUMNS) for f in checked.by_scope["record"]]
    judged += [f.select(*FINDING_COLUMNS).join(is_new, ["topic", "partition", "offset"]).where("is_new")
               .select(*FINDING_COLUMNS) for f in (*checked.by_scope["key"], *checked.by_scope["table"])]
    final_ids = checked.transactions.where(F.col("status").isin(*FINAL)).select("server", "txn_key")
    known_final = _final_ids(spark, state)
    for f in checked.by_scope["transaction"]:
        f = f.select(*FINDING_COLUMNS).withColumn("txn_key", txn_key(F.col("txn_id")))
        judged.append(f.where(F.col("rule") != "orphan_event").join(final_ids, ["server", "txn_key"], "left_semi")
                      .select(*FINDING_COLUMNS))
        judged.append(f.where(F.col("rule") == "orphan_event").join(known_final, ["server", "txn_key"], "left_anti")
                      .join(awaiting, ["topic", "partition", "offset"], "left")
                      .join(is_new, ["topic", "partition", "offset"])
                      .where(F.col("is_new") | F.col("awaited").isNotNull()).select(*FINDING_COLUMNS))
    findings = judged[0]
    for f in judged[1:]:
        findings = findings.unionByName(f)
    findings = cache.keep(findings)
    grouped = [r.asDict() for r in findings.groupBy("check", "rule", "severity", "server", "table").count().collect()]
    orphans_judged = {(r["topic"], r["partition"], r["offset"]) for r in
                      findings.where(F.col("rule") == "orphan_event").select("topic", "partition", "offset").collect()}
    open_txns: list[tuple[str, str]] = []
    final_txns: list[tuple[str, str]] = []
    finalized: dict[str, dict[str, int]] = {}
    for r in checked.transactions.where(F.col("status").isin("open", *FINAL)).select("server", "txn_key", "status").collect():
        if r["status"] == "open":
            open_txns.append((r["server"], r["txn_key"]))
        else:
            final_txns.append((r["server"], r["txn_key"]))
            per = finalized.setdefault(r["server"] or "", {})
            per[r["status"]] = per.get(r["status"], 0) + 1
    lag = [lag_row_ms(r.asDict()) for r in checked.lag.collect()]
    by_op = [r.asDict() for r in fresh.where("data_event")
             .groupBy("server", "table", "op").count().collect()]
    counts = fresh.agg(F.count(F.lit(1)).alias("n"), F.sum(F.col("decode_error").isNotNull().cast("int")).alias("bad")).first()
    totals = state.totals
    add(totals.setdefault("records", {}), ("",), int(counts["n"] or 0))
    for r in by_op:
        add(totals["events"], (r["server"], r["table"], r["op"]), r["count"])
    for server, per in finalized.items():
        for status, n in per.items():
            add(totals["transactions"], (server, status), n)
    for r in grouped:
        add(totals["findings"], (r["server"], r["table"], r["check"], r["rule"], r["severity"]), r["count"])
    assert all(r["rule"] in CATALOGUE for r in grouped)
    outcome = BatchOutcome(batch_id, int(counts["n"] or 0), int(counts["bad"] or 0), lag, by_op, finalized, grouped)
    return outcome, _Verdicts(open_txns, final_txns, orphans_judged)


def _next_state(spark: SparkSession, raw: DataFrame, events: DataFrame, state: WatchState, store: StateStore,
                settings: WatchSettings, batch_id: int, cache: FrameCache, now: float, verdicts: _Verdicts) -> None:
    """Choose what to carry, write it, and commit the new state."""
    coord = ["topic", "partition", "offset"]
    keyed = events.where(F.col("kind").isin("data", "tombstone") & F.col("decode_error").isNull()
                         & F.col("key_payload").isNotNull())
    per_key = Window.partitionBy("topic", "partition", "key_payload").orderBy(F.col("offset").desc())
    newest = F.max("record_ts_ms").over(Window.partitionBy("topic", "partition", "key_payload"))
    horizon = events.agg(F.max("record_ts_ms")).first()[0] or 0
    ranked = cache.keep(keyed.withColumn("rn", F.row_number().over(per_key)).withColumn("newest", newest))
    keep_keys = ranked.where((F.col("rn") <= settings.key_history) & (F.col("newest") >= horizon - settings.key_ttl_ms))
    evicted = ranked.where((F.col("rn") == 1) & (F.col("newest") < horizon - settings.key_ttl_ms)) \
        .select("topic", "partition").distinct().collect()
    for r in evicted:
        state.partitions[_key(r["topic"], r["partition"])].evicted = True
    open_ids = spark.createDataFrame(verdicts.open_txns, "server string, txn_key string")
    open_markers = events.where(F.col("kind") == "transaction").join(
        open_ids.withColumnRenamed("txn_key", "marker_key"), ["server", "marker_key"], "left_semi")
    open_data = events.where(F.col("kind") == "data").join(open_ids, ["server", "txn_key"], "left_semi")
    # orphan candidates: data events naming a transaction on no marker of this window, not judged yet
    markers = events.where(F.col("kind") == "transaction").select("server", F.col("marker_key").alias("txn_key")).distinct()
    candidates = events.where(F.col("data_event") & F.col("txn_id").isNotNull()) \
        .join(markers, ["server", "txn_key"], "left_anti").join(_final_ids(spark, state), ["server", "txn_key"], "left_anti")
    waited = {(a[0], int(a[1]), int(a[2])): float(a[3]) for a in state.awaiting}
    judged = verdicts.orphans_judged
    awaiting = []
    for r in candidates.join(_coords(spark, [list(k) for k in waited]).withColumn("w", F.lit(True)), coord, "left") \
            .where(F.col("is_new") | F.col("w").isNotNull()).select(*coord).collect():
        c = (r["topic"], r["partition"], r["offset"])
        since = waited.get(c, now)
        if c not in judged and now - since < settings.await_ms / 1000:
            awaiting.append([*c, since])
    lag_scope = with_lag(change_events(events)).where(F.col("lag_ms").isNotNull())
    tail_rows = lag_scope.groupBy("server", "table").agg(
        F.max(F.struct("ts_ms", "topic", "partition", "offset")).alias("t")).select("t.topic", "t.partition", "t.offset")
    lag_tail = [[r["topic"], r["partition"], r["offset"]] for r in tail_rows.collect()]
    keep = keep_keys.select(*coord).unionByName(open_markers.select(*coord)).unionByName(open_data.select(*coord)) \
        .unionByName(_coords(spark, awaiting)).unionByName(_coords(spark, lag_tail)).distinct()
    carried = raw.join(keep, coord, "left_semi")
    staged = store.version_dir(batch_id)
    carried.write.mode("overwrite").parquet(str(Path(staged) / "carry.parquet"))
    state.carry_path = str(Path(staged) / "carry.parquet")
    state.open_txns = {_key(s, t): state.open_txns.get(_key(s, t), now) for s, t in verdicts.open_txns}
    state.awaiting = awaiting
    state.final_txns = (state.final_txns + [_key(s, t) for s, t in verdicts.final_txns])[-settings.final_memory:]
    state.lag_tail = lag_tail
    state.batch_id = batch_id
    store.commit(state, staged)


def overdue(state: WatchState, grace_ms: int, now: float | None = None) -> dict[str, int]:
    """Open transactions per server that have stayed open longer than the grace period."""
    now = time.time() if now is None else now
    out: dict[str, int] = {}
    for k, since in state.open_txns.items():
        if now - since > grace_ms / 1000:
            server = k.split("|", 1)[0]
            out[server] = out.get(server, 0) + 1
    return out
