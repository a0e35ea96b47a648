"""watch's state in Spark's state store: the context every micro-batch is judged with.

One stateful operator on the RocksDB state store provider (Spark checkpoints it with the offsets, so
a restart resumes exactly where the last committed batch left it) groups each record by the context
it belongs to, on the JVM (``Carry.java``, a ``flatMapGroupsWithState`` shipped in
``cdc-monitor-operators.jar``: no row of a batch passes through a Python worker). The group key
(``ctx``) names the kind:

- ``K`` topic, key: the key's last ``key_history`` records in each partition (per-key rules judge
  new records against them; a key found in several partitions of its topic is one group). A
  key idle for ``key_ttl_ms`` of processing time times out: its history is dropped and its
  partitions reported ``evicted`` (first-record rules are no longer judged there) (``KeyHistory.java``).
- ``P`` topic, partition: records with no key history (markers, heartbeats, undecodable ...): no
  state, emitted as they come.
- ``S`` server: a copy of every transaction marker and of every data event naming a transaction.
  Keeps the open transactions (BEGIN, no END, no later BEGIN in its partition: Debezium writes END
  when the next transaction begins) with their data events, orphan candidates (a transaction on
  no marker yet: kept until the server's transaction topic has passed their record time, or
  ``await_ms`` of wall time) and the ids of the last ``final_memory`` finalized transactions.
  A transaction whose END counts more events than have been seen is held (not final, emitted as
  ``pending``) while some partition of a short collection has not shown a record at or after the
  END's time (a per-trigger cap can read the small transaction topic ahead of the data topics),
  at most ``await_ms`` of wall time; the newest record time per data partition is kept for this
  (``ServerContext.java``).
- ``L`` server, table: a copy of every change event with a lag: keeps the newest, so a lag spike
  crossing a batch boundary is judged once.

Each new record is emitted once (role ``new``, by its K or P group) with the context the groups hold
(``carried``, ``candidate``, ``tail``) and two facts: ``final`` (a new event of a transaction
finalized in an earlier batch: no orphan) and ``evicted``. The state is one schema for every group
(``Carry.STATE``), stamped with a format version (``STATE_VERSION``); the Java side spells the
vocabulary below alike (tests/unit/test_watch_vocabulary.py holds the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import with_lag
from cdc_monitor.decoding import decode_records
from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.runtime.jvm import operator_jar, operator_jar_problem

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.config import ScanConfig

SEP = "\u001f"
KEY, PARTITION, SERVER, LAG = "K", "P", "S", "L"  # the group kinds (ctx's first letter)
MARKER, DATA = "marker", "data"  # what an S group is fed: a transaction marker or a data event naming a transaction
ROW = ("topic", "partition", "offset", "key", "value", "record_us", "timestampType", "headers_json")
# the S and L groups' fields of a fed row (null on K and P rows); record_ts_ms: an L row's order, the event's ts_ms
FIELDS = ("skind", "status", "txn", "record_ts_ms", "tbl", "event_count", "collections")
FED = ("ctx", *ROW, *FIELDS)  # the operator's input columns, in order (Carry.INPUT)
OPERATOR_CLASS = "cdcmonitor.Carry"  # in cdc-monitor-operators.jar
STATE_VERSION = 1  # Carry.VERSION: the state's format
NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING = (
    "new", "carried", "candidate", "tail", "final", "evicted", "pending")
ROLES = (NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING)
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


def carry_operator(fed: DataFrame, cfg: CarrySettings) -> DataFrame:
    """The operator (``Carry.java``) over a frame of ``FED`` columns (``carry_input``'s): every
    group's rows and context, each with its role (the record's columns, ``ROW``, and ``role``)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    spark = fed.sparkSession
    op: Any = spark._jvm  # type: ignore[attr-defined]
    for part in OPERATOR_CLASS.split("."):
        op = getattr(op, part)
    try:
        settings = op(cfg.key_history, cfg.key_ttl_ms, cfg.await_ms, cfg.final_memory, list(cfg.transaction_servers),
                      dict(cfg.topic_partitions))
    except TypeError as exc:  # py4j: a class not on the driver's classpath is a JavaPackage, not callable
        if "JavaPackage" not in str(exc):
            raise
        raise EnvironmentProblem(operator_jar_problem() or (
            f"{OPERATOR_CLASS} is not on the Spark driver's classpath: start Spark through cdc-monitor "
            f"(it adds {operator_jar()} to spark.jars), or pass that jar with --jars to spark-submit")) from None
    return ClassicFrame(op.apply(fed.select(*FED)._jdf, settings), spark)  # type: ignore[attr-defined]


def carry_stream(stream: DataFrame, cfg: CarrySettings, scan: ScanConfig) -> DataFrame:
    """The stateful streaming frame: raw Kafka records in, new records and their context out."""
    return carry_operator(carry_input(stream, scan), cfg)


def carry_input(stream: DataFrame, scan: ScanConfig) -> DataFrame:
    """What the operator is fed (``FED``): each raw record once per context group it belongs to
    (``ctx``): the record's columns and, for the server and table groups, the fields they read
    (``FIELDS``; null for key and partition groups). With a schema registry, keys and values are
    decoded from Avro first (schemas fetched by id where first met), so keys and transactions are
    grouped as for JSON. (A frame of records, streaming or not.)"""
    from cdc_monitor.decoding.avro_wire import avro_stream_as_json

    raw = stream.withColumns({
        "raw_key": F.col("key"), "raw_value": F.col("value"), "record_us": F.unix_micros("timestamp"),
        "raw_tstype": F.col("timestampType"),
        "headers_json": F.to_json(F.transform("headers", lambda h: F.struct(h["key"].alias("key"),
                                                                              F.base64(h["value"]).alias("value")))),
    })
    ev = with_lag(decode_records(avro_stream_as_json(raw, scan), scan.roles,
                                 keep=("raw_key", "raw_value", "record_us", "raw_tstype", "headers_json"),
                                 avro_json=scan.avro_json))
    keyed = F.col("kind").isin("data", "tombstone") & F.col("decode_error").isNull() & F.col("key_payload").isNotNull()
    tp = [F.col("topic"), F.col("partition").cast("string")]
    marker = ((F.col("kind") == "transaction") & F.col("decode_error").isNull() & F.col("status").isin("BEGIN", "END")
              & F.col("marker_id").isNotNull())
    in_txn = F.col("data_event") & F.col("txn_id").isNotNull()
    server = F.coalesce(F.col("server"), F.lit(""))
    primary = F.when(keyed, F.concat_ws(SEP, F.lit(KEY), F.col("topic"), F.col("key_payload"))).otherwise(
        F.concat_ws(SEP, F.lit(PARTITION), *tp))
    ctxs = F.array(
        F.struct(primary.alias("ctx"), F.col("record_ts_ms").alias("order_ts")),
        F.struct(F.when(marker | in_txn, F.concat_ws(SEP, F.lit(SERVER), server)).alias("ctx"),
                 F.col("record_ts_ms").alias("order_ts")),
        F.struct(F.when(F.col("change_event") & F.col("lag_ms").isNotNull(),
                        F.concat_ws(SEP, F.lit(LAG), server, F.coalesce(F.col("table"), F.lit(""))))
                 .alias("ctx"), F.col("ts_ms").alias("order_ts")),
    )
    end = marker & (F.col("status") == "END")
    fields = {
        "skind": F.when(marker, F.lit(MARKER)).when(in_txn, F.lit(DATA)),
        "status": F.when(marker, F.col("status")),
        "txn": F.coalesce(F.when(marker, F.col("marker_key")), F.col("txn_key")),
        "tbl": F.when(in_txn, F.col("table")),
        "event_count": F.when(end, F.col("marker_event_count")),
        "collections": F.when(end, F.col("marker_collections")),
    }
    grouped = F.col("ctx").startswith(SERVER) | F.col("ctx").startswith(LAG)  # K and P rows need none of FIELDS
    return ev.select(
        F.explode(F.filter(ctxs, lambda c: c["ctx"].isNotNull())).alias("c"),
        "topic", "partition", "offset", F.col("raw_key").alias("key"), F.col("raw_value").alias("value"), "record_us",
        F.col("raw_tstype").alias("timestampType"), "headers_json", *[v.alias(k) for k, v in fields.items()],
    ).select(F.col("c.ctx").alias("ctx"), "*", F.col("c.order_ts").alias("record_ts_ms")).select(
        "ctx", *ROW, *[F.when(grouped, F.col(c)).alias(c) for c in FIELDS])


def kafka_rows(frame: DataFrame) -> DataFrame:
    """Operator output rows back in the Kafka source's shape (plus the role flags)."""
    headers = F.from_json("headers_json", "array<struct<key:string,value:string>>")
    return frame.select(
        "key", "value", "topic", "partition", "offset", F.timestamp_micros("record_us").alias("timestamp"), "timestampType",
        F.transform(headers, lambda h: F.struct(h["key"].alias("key"), F.unbase64(h["value"]).alias("value")))
        .alias("headers"), *[c for c in frame.columns if c not in ROW])
