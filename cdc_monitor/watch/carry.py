"""watch's state in Spark's state store: the context every micro-batch is judged with.

Two stateful operators in a chain, both on the RocksDB state store provider (Spark checkpoints them
with the offsets, so a restart resumes exactly where the last committed batch left it), group each
record by the context it belongs to. The group key (``ctx``) names the kind:

- ``K`` topic, key: the key's last ``key_history`` records in each partition (per-key rules judge
  new records against them; a key found in several partitions of its topic is one group). A
  key idle for ``key_ttl_ms`` of processing time times out: its history is dropped and its
  partitions reported ``evicted`` (first-record rules are no longer judged there). These are as
  many groups as keys, so they run on the JVM (``KeyHistory.java``, a ``flatMapGroupsWithState``
  shipped as ``cdc-monitor-operators.jar``): a Python call per key group cost ~1.5 ms of PySpark's
  machinery, most of a busy micro-batch.
- ``P`` topic, partition: records with no key history (markers, heartbeats, undecodable ...): no
  state, emitted as they come by the JVM operator.
- ``S`` server: a copy of every transaction marker and of every data event naming a transaction.
  Keeps the open transactions (BEGIN, no END, no later BEGIN in its partition: Debezium writes END
  when the next transaction begins) with their data events, orphan candidates (a transaction on
  no marker yet: kept until the server's transaction topic has passed their record time, or
  ``await_ms`` of wall time) and the ids of the last ``final_memory`` finalized transactions.
  A transaction whose END counts more events than have been seen is held (not final, emitted as
  ``pending``) while some partition of a short collection has not shown a record at or after the
  END's time (a per-trigger cap can read the small transaction topic ahead of the data topics),
  at most ``await_ms`` of wall time; the newest record time per data partition is kept for this.
- ``L`` server, table: a copy of every change event with a lag: keeps the newest, so a lag spike
  crossing a batch boundary is judged once.

The S and L groups (a few per server) then run in Python (``applyInPandasWithState``); what the
JVM operator emitted passes that second operator in a few stateless buckets (``X``). Each new record
is emitted once (role ``new``, by its K or P group) with the context the groups hold (``carried``,
``candidate``, ``tail``) and two facts: ``final`` (a new event of a transaction finalized in an
earlier batch: no orphan) and ``evicted``. A Python group's state is a JSON text; raw
bytes are kept there as latin-1 text (a lossless byte-to-character mapping).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import with_lag
from cdc_monitor.decoding import decode_records
from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.runtime.jvm import operator_jar, operator_jar_problem

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from cdc_monitor.config import ScanConfig

SEP = "\u001f"
ROW = ("topic", "partition", "offset", "key", "value", "record_us", "timestampType", "headers_json")
OUTPUT = ("topic string, partition int, offset bigint, key binary, value binary, record_us bigint, "
          "timestampType int, headers_json string, role string")
STATE = "s string"
OPERATOR_CLASS = "cdcmonitor.KeyHistory"  # in cdc-monitor-operators.jar
NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING = (
    "new", "carried", "candidate", "tail", "final", "evicted", "pending")
CONTEXT_ROLES = (CARRIED, CANDIDATE, TAIL)
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The session settings the query needs: the RocksDB provider (state off the JVM heap, on local
# disk, snapshotted to the checkpoint) and no micro-batches without data (with processing-time
# timeouts Spark would otherwise run an empty batch at every trigger; idle keys time out at the
# next batch with data), and the last 10 batches' state and offsets kept in the checkpoint instead of
# Spark's 100 (a restart needs the last one; benchmarks.soak: 10 minutes of steady traffic grew
# the checkpoint 4.6 MB in the middle third and 17.5 MB in the last, to 23.8 MB, with 100).
STREAM_CONF = {
    "spark.sql.streaming.stateStore.providerClass": STATE_STORE,
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.streaming.minBatchesToRetain": "10",
}


@dataclass(frozen=True)
class CarrySettings:
    key_history: int = 3
    key_ttl_ms: int = 24 * 3_600_000
    await_ms: int = 600_000
    final_memory: int = 200_000
    # servers whose transaction topic the stream reads: their data events naming a transaction are
    # held as orphan candidates even before the server's first marker is read (a batch can hold a
    # transaction's events before its BEGIN: the transaction topic is measured first)
    transaction_servers: tuple[str, ...] = ()
    # partitions of each data topic the stream reads, (topic, count) pairs: a held END waits for
    # every partition of a short collection, also those that have shown no event of a transaction
    topic_partitions: tuple[tuple[str, int], ...] = ()


def _pack(row: tuple[Any, ...]) -> list[Any]:
    out = list(row)
    for i in (3, 4):
        if out[i] is not None:
            out[i] = bytes(out[i]).decode("latin-1")
    return out


def _unpack(row: list[Any]) -> tuple[Any, ...]:
    out = list(row[:len(ROW)])
    for i in (3, 4):
        if out[i] is not None:
            out[i] = out[i].encode("latin-1")
    return tuple(out)


def _rows(pdf: pd.DataFrame, columns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The fed rows' ``columns`` (any of ``FED``): the record's from its own columns, the rest
    unpacked from ``meta``."""
    import orjson

    metas = [orjson.loads(m) for m in pdf["meta"].tolist()] if any(c not in ROW for c in columns) else []
    cols = [pdf[c].tolist() if c in ROW else [m.get(c) for m in metas] for c in columns]
    return list(zip(*cols, strict=True))


Out = list[tuple[Any, ...]]  # output rows: ROW + role
OUT_COLUMNS = [*ROW, "role"]


def _frame(rows: Out) -> pd.DataFrame:
    """One output frame per call (a pandas frame costs ~0.1 ms to build: per key group, that was
    most of the operator's time)."""
    import numpy as np
    import pandas as pd

    cells = np.empty((len(rows), len(ROW) + 1), dtype=object)  # one block: no per-column inference
    for i, r in enumerate(rows):
        cells[i] = r
    return pd.DataFrame(cells, columns=OUT_COLUMNS, copy=False)


def _tagged(rows: list[tuple[Any, ...]], role: str) -> Out:
    return [(*r, role) for r in rows]


S_META = ("skind", "status", "txn", "record_ts_ms", "tbl", "counts")
# What the Python operator is fed per record: the record's columns, the server and table groups'
# fields packed as one JSON text (``meta``), the role the JVM operator gave it and the group key.
FED = ROW + S_META
FED_COLUMNS = (*ROW, "meta", "role")
BUCKETS = 8  # stateless groups the JVM operator's output passes the Python operator in
M = len(ROW)  # held S rows: ROW + S_META + [wall time first seen]
SKIND, STATUS, TXN, TS, TBL, COUNTS = range(M, M + len(S_META))


def _transactions(markers: list[list[Any]]) -> tuple[set[str], dict[str, list[Any]]]:
    """Open transactions (a BEGIN, no END, no later BEGIN in its partition: the checks' "open"
    status) and the END row of every transaction with one."""
    last_begin: dict[tuple[Any, Any], int] = {}  # per transaction-topic partition, its newest BEGIN
    txns: dict[tuple[Any, Any, str], list[Any]] = {}  # (topic, partition, txn) -> [first BEGIN offset, END seen]
    ends: dict[str, list[Any]] = {}
    for r in markers:
        t = txns.setdefault((r[0], r[1], r[TXN]), [None, False])
        if r[STATUS] == "BEGIN":
            t[0] = r[2] if t[0] is None else min(t[0], r[2])
            last_begin[(r[0], r[1])] = max(last_begin.get((r[0], r[1]), r[2]), r[2])
        else:
            t[1] = True
            ends.setdefault(r[TXN], r)
    open_ids = {k[2] for k, (b, e) in txns.items() if b is not None and not e and last_begin[k[:2]] == b}
    return open_ids, ends


def _short(end: list[Any], data: list[list[Any]], progress: dict[str, list[Any]], now: float, await_s: float,
           partitions: dict[str, int] | None = None) -> bool:
    """Whether an ended transaction may still be missing events that are on their way: its END
    counts more than have been seen and some partition of a short collection has not yet shown a
    record at or after the END's time (or the collection has shown none; with ``partitions``, the
    partition count of its topics, a partition that has shown no event of a transaction yet counts
    as not shown). For at most ``await_s``: a transaction that is really incomplete is reported
    that much later when its table is quiet."""
    import orjson

    if now - end[-1] >= await_s or not end[COUNTS]:
        return False
    counts = orjson.loads(end[COUNTS])
    seen = {(r[0], r[1], r[2]): r[TBL] for r in data}  # a re-delivered event once
    by_coll = Counter(seen.values())
    short = {c["data_collection"] for c in counts.get("c") or []
             if c.get("event_count") is not None and by_coll.get(c["data_collection"], 0) < c["event_count"]}
    if not short and (counts.get("n") is None or len(seen) >= counts["n"]):
        return False
    end_ts = end[TS] or 0
    # (an END whose total is short and that names no collection: any data partition may bring them)
    if any(ts < end_ts for tbl, ts in progress.values() if not short or tbl in short):
        return True
    if partitions:  # the short collections' partitions that have not shown an event of a transaction yet
        topics = {k.rsplit("|", 1)[0] for k, (tbl, _) in progress.items() if not short or tbl in short}
        topics |= {r[0] for r in data if not short or r[TBL] in short}
        if any(f"{t}|{p}" not in progress for t in topics for p in range(partitions.get(t, 0))):
            return True
    return bool(short - {tbl for tbl, _ in progress.values()})


def _server(st: dict[str, Any], pdf: pd.DataFrame | None, cfg: CarrySettings, now: float, server: str = ""
            ) -> tuple[Out, dict[str, Any]]:
    """Open and pending transactions, orphan candidates and finalized ids of one server (see the module)."""
    # rows held by an earlier version (no tbl/counts): the same row, those two unknown
    held: list[list[Any]] = [r if len(r) > COUNTS else [*r[:-1], None, None, r[-1]] for r in st.get("rows", [])]
    final = st.get("final", [])
    final_set = set(final)
    was_open = set(st.get("open", []))
    out: Out = [(*_unpack(r), CANDIDATE if r[SKIND] == "data" and r[TXN] not in was_open else CARRIED) for r in held]
    new = [[*_pack(r[:M]), *r[M:], now] for r in _rows(pdf, ROW + S_META)] if pdf is not None else []
    progress: dict[str, list[Any]] = st.get("progress", {})  # data partition -> [collection, newest record time]
    for r in new:
        if r[SKIND] == "data" and r[TS] is not None:
            tp = f"{r[0]}|{r[1]}"
            if tp not in progress or progress[tp][1] < r[TS]:
                progress[tp] = [r[TBL], r[TS]]
    rows = [*held, *new]
    markers = [r for r in rows if r[SKIND] == "marker"]
    open_ids, ends = _transactions(markers)
    data_of: dict[str, list[list[Any]]] = {}
    for r in rows:
        if r[SKIND] == "data":
            data_of.setdefault(r[TXN], []).append(r)
    partitions = dict(cfg.topic_partitions)
    pending = {t for t, end in ends.items() if t not in open_ids
               and _short(end, data_of.get(t, []), progress, now, cfg.await_ms / 1000, partitions)}
    held_ids = open_ids | pending
    on_marker = {r[TXN] for r in markers}
    finalized = [t for t in dict.fromkeys(r[TXN] for r in markers) if t not in held_ids and t not in final_set]
    horizon = max([st.get("horizon", -1), *(r[TS] for r in markers if r[TS] is not None)])  # newest marker time
    # a server whose transaction topic is neither read yet nor in the stream has no orphans: nothing to hold
    awaited = horizon >= 0 or server in cfg.transaction_servers
    keep, known_final = [], []
    for r in rows:
        txn = r[TXN]
        if r[SKIND] == "marker" or txn in on_marker:
            if txn in held_ids:
                keep.append(r)
        elif txn in final_set:
            known_final.append(_unpack(r))
        elif awaited and (r[TS] or 0) > horizon and now - r[-1] < cfg.await_ms / 1000:
            # an orphan candidate while the transaction topic has not reached its time
            keep.append(r)
    out += _tagged(known_final, FINAL)
    # pending: their END rows (not final in this batch, whatever the checks make of them)
    out += _tagged([_unpack(ends[t]) for t in sorted(pending)], PENDING)
    final = (final + finalized)[-cfg.final_memory:]
    return out, {"rows": keep, "final": final, "horizon": horizon, "open": sorted(held_ids), "progress": progress}


def _tail(held: list[Any] | None, pdf: pd.DataFrame | None) -> tuple[Out, list[Any] | None]:
    order = ("record_ts_ms", "topic", "partition", "offset")  # record_ts_ms carries the event's ts_ms here
    rows = _rows(pdf, ROW + order) if pdf is not None else []
    if held and any(r[0] == held[0] and r[1] == held[1] and r[2] <= held[2] for r in rows):
        held = None  # a new record at or before it in its partition: it is an earlier log's (topic created again)
    out = _tagged([_unpack(held)], TAIL) if held else []
    if rows:
        newest = max(((r[-4:], r[:-4]) for r in rows), key=lambda x: x[0])
        if held is None or tuple(newest[0]) > tuple(held[len(ROW):]):
            held = [*_pack(newest[1]), *newest[0]]
    return out, held


def carry_function(cfg: CarrySettings):
    """The Python operator's function: (group key, input frames, GroupState) -> output frames."""
    import orjson

    def fn(key: tuple[str], pdfs: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        import pandas as pd

        kind = key[0][0]
        frames = [f for f in pdfs if len(f)]
        pdf = pd.concat(frames, ignore_index=True) if len(frames) > 1 else (frames[0] if frames else None)
        if kind == "X":  # what the JVM operator emitted (key histories, records without one): as it is
            if pdf is not None:
                yield pdf[OUT_COLUMNS]
            return
        st = orjson.loads(state.get[0]) if state.exists else None
        if kind == "S":
            out, new_st = _server(st or {}, pdf, cfg, time.time(), key[0].split(SEP, 1)[1])
            state.update((orjson.dumps(new_st).decode(),))
            if new_st["rows"]:  # held transactions and candidates are judged again after await_ms
                state.setTimeoutDuration(max(cfg.await_ms, 1))
        else:
            out, held = _tail(st, pdf)
            state.update((orjson.dumps(held).decode(),))
        if out:
            yield _frame(out)

    return fn


def key_history(fed: DataFrame, cfg: CarrySettings) -> DataFrame:
    """The JVM operator (``KeyHistory.java``) over ``carry_input``'s frame: K groups' histories and
    P groups' records with their roles, S and L groups' records passed on (role null)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    spark = fed.sparkSession
    op: Any = spark._jvm  # type: ignore[attr-defined]
    for part in OPERATOR_CLASS.split("."):
        op = getattr(op, part)
    try:
        jdf = op.apply(fed._jdf, cfg.key_history, cfg.key_ttl_ms)  # type: ignore[attr-defined]
    except TypeError as exc:  # py4j: a class not on the driver's classpath is a JavaPackage, not callable
        if "JavaPackage" not in str(exc):
            raise
        raise EnvironmentProblem(operator_jar_problem() or (
            f"{OPERATOR_CLASS} is not on the Spark driver's classpath: start Spark through cdc-monitor "
            f"(it adds {operator_jar()} to spark.jars), or pass that jar with --jars to spark-submit")) from None
    return ClassicFrame(jdf, spark)


def carry_stream(stream: DataFrame, cfg: CarrySettings, scan: ScanConfig) -> DataFrame:
    """The stateful streaming frame: raw Kafka records in, new records and their context out."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    keyed = key_history(carry_input(stream, scan), cfg)
    group = F.when(F.col("role").isNull(), F.col("ctx")).otherwise(
        F.concat(F.lit("X"), F.pmod(F.hash("ctx"), F.lit(BUCKETS)).cast("string")))
    return keyed.select(group.alias("gctx"), *FED_COLUMNS).groupBy("gctx").applyInPandasWithState(
        carry_function(cfg), OUTPUT, STATE, "append", GroupStateTimeout.ProcessingTimeTimeout)


def carry_input(stream: DataFrame, scan: ScanConfig) -> DataFrame:
    """What the operators are fed: each raw record once per context group it belongs to (``ctx``):
    the record's columns and, for the server and table groups, the fields their Python function
    reads packed as one JSON text (``meta``; null for key and partition groups). With a schema
    registry, keys and values are decoded from Avro first (schemas fetched by id where first met),
    so keys and transactions are grouped as for JSON. (A frame of records, streaming or not.)"""
    from cdc_monitor.decoding.avro_wire import avro_stream_as_json

    raw = stream.withColumns({
        "raw_key": F.col("key"), "raw_value": F.col("value"), "record_us": F.unix_micros("timestamp"),
        "raw_tstype": F.col("timestampType"),
        "headers_json": F.to_json(F.transform("headers", lambda h: F.struct(h["key"].alias("key"),
                                                                              F.base64(h["value"]).alias("value")))),
    })
    ev = with_lag(decode_records(avro_stream_as_json(raw, scan), scan.roles,
                                 keep=("raw_key", "raw_value", "record_us", "raw_tstype", "headers_json")))
    keyed = F.col("kind").isin("data", "tombstone") & F.col("decode_error").isNull() & F.col("key_payload").isNotNull()
    tp = [F.col("topic"), F.col("partition").cast("string")]
    marker = ((F.col("kind") == "transaction") & F.col("decode_error").isNull() & F.col("status").isin("BEGIN", "END")
              & F.col("marker_id").isNotNull())
    in_txn = F.col("data_event") & F.col("txn_id").isNotNull()
    server = F.coalesce(F.col("server"), F.lit(""))
    primary = F.when(keyed, F.concat_ws(SEP, F.lit("K"), F.col("topic"), F.col("key_payload"))).otherwise(
        F.concat_ws(SEP, F.lit("P"), *tp))
    ctxs = F.array(
        F.struct(primary.alias("ctx"), F.col("record_ts_ms").alias("order_ts")),
        F.struct(F.when(marker | in_txn, F.concat_ws(SEP, F.lit("S"), server)).alias("ctx"),
                 F.col("record_ts_ms").alias("order_ts")),
        F.struct(F.when(F.col("change_event") & F.col("lag_ms").isNotNull(),
                        F.concat_ws(SEP, F.lit("L"), server, F.coalesce(F.col("table"), F.lit(""))))
                 .alias("ctx"), F.col("ts_ms").alias("order_ts")),
    )
    return ev.select(
        F.explode(F.filter(ctxs, lambda c: c["ctx"].isNotNull())).alias("c"),
        "topic", "partition", "offset", F.col("raw_key").alias("key"), F.col("raw_value").alias("value"), "record_us",
        F.col("raw_tstype").alias("timestampType"), "headers_json",
        F.when(marker, F.lit("marker")).when(in_txn, F.lit("data")).alias("skind"),
        F.when(marker, F.col("status")).alias("status"),
        F.coalesce(F.when(marker, F.col("marker_key")), F.col("txn_key")).alias("txn"),
        F.when(in_txn, F.col("table")).alias("tbl"),
        F.when(marker & (F.col("status") == "END"), F.to_json(F.struct(
            F.col("marker_event_count").alias("n"), F.col("marker_collections").alias("c")))).alias("counts"),
    ).select(F.col("c.ctx").alias("ctx"), "*", F.col("c.order_ts").alias("record_ts_ms")).select(
        "ctx", *ROW, F.when(~F.col("ctx").startswith("K") & ~F.col("ctx").startswith("P"),
                            F.to_json(F.struct(*S_META))).alias("meta"))


def kafka_rows(frame: DataFrame) -> DataFrame:
    """Operator output rows back in the Kafka source's shape (plus the role flags)."""
    headers = F.from_json("headers_json", "array<struct<key:string,value:string>>")
    return frame.select(
        "key", "value", "topic", "partition", "offset", F.timestamp_micros("record_us").alias("timestamp"), "timestampType",
        F.transform(headers, lambda h: F.struct(h["key"].alias("key"), F.unbase64(h["value"]).alias("value")))
        .alias("headers"), *[c for c in frame.columns if c not in ROW])
