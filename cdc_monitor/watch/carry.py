"""watch's state in Spark's state store: the context every micro-batch is judged with.

One stateful operator on the RocksDB state store provider (Spark checkpoints it with the offsets, so
a restart resumes exactly where the last committed batch left it) groups each record by the context
it belongs to, on the JVM (``Carry.java``, a ``flatMapGroupsWithState`` shipped in
``cdc-monitor-operators.jar``: no row of a batch passes through a Python worker). The group key
(``ctx``) names the kind:

- ``K`` topic, key: the key's last ``key_history`` records in each partition (per-key rules judge
  new records against them; a key found in several partitions of its topic is one group; the older
  ones thin: place, times, op, flags and ``content_hash``, ``KeyHistory.whole``). A
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
  crossing a batch boundary is judged once (an input partition shuffles only what it reads: its
  newest and, per topic partition, its lowest offset: ``Carry.fewerTails``).

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
from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.decoding import decode_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.config import ScanConfig
    from cdc_monitor.runtime.session import SessionCaps

SEP = "\u001f"
KEY, PARTITION, SERVER, LAG, BUDGET = "K", "P", "S", "L", "~"  # the group kinds (ctx's first letter)
MARKER, DATA = "marker", "data"  # what an S group is fed: a transaction marker or a data event naming a transaction
# a record's facts (Carry.FACT): what the checks read from a record carried as context; row images as
# one digest, the source block as its presence and PostgreSQL's lsn and sequence
FACT = ("topic", "partition", "offset", "record_ts_ms", "ts_ms", "ts_ms_raw", "source_ts_ms", "source_ts_raw", "ts_us",
        "source_ts_us", "key", "kind", "server", "table", "op", "snapshot", "snapshot_marker", "txn_id", "txn_total_order",
        "txn_collection_order", "position", "flavour", "has_source", "source_lsn", "source_sequence", "before", "after",
        "key_payload", "status", "marker_id", "marker_key", "marker_event_count", "marker_collections", "update_hash",
        "value_hash", "value_schema_hash", "data_event", "change_event", "snapshot_event", "envelope", "has_message",
        "content_hash")
CONTENT = "content_hash"  # a data event's content as the key pass's copies compare it (the key pass's records only)
SYNTHETIC = ("has_source", "source_lsn", "source_sequence", CONTENT)  # facts that are not events columns
# the S and L groups' fields of a fed row (null on K and P rows); order_ts: the record time (an L row's: the event's ts_ms)
FIELDS = ("skind", "sstatus", "txn", "order_ts", "tbl", "event_count", "collections")
REST = "rest"  # a new record's other decoded columns (a struct; null on S and L rows and on context)
FED = ("ctx", *FACT, *FIELDS, REST)  # the operator's input columns, in order (Carry.input)
FOUND_COLUMN = "found"  # a finding the operator's walks judged (null on records), of type Carry.FINDING:
FOUND_TYPE = "struct<rule:string,offsets:array<bigint>,message:string,first:boolean>"
OUTPUT = (*FACT, REST, FOUND_COLUMN, "role")
OPERATOR_CLASS = "cdcmonitor.Carry"  # in cdc-monitor-operators.jar
STATE_VERSION = 3  # Carry.VERSION: the state's format
NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING, CAPPED, FOUND = (
    "new", "carried", "candidate", "tail", "final", "evicted", "pending", "capped", "found")
ROLES = (NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING, CAPPED, FOUND)
CONTEXT_ROLES = (CARRIED, CANDIDATE, TAIL)
LEFT_ROLES = {EVICTED: "ttl", CAPPED: "max_keys"}  # a key's history dropped, and why (cdc_monitor_state_keys_evicted_total)
GAP_VALUE = "gap_value"  # a gap row's value (sources/kafka/gaps.py), carried past the decoder
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The session settings the query needs: the RocksDB provider (state off the JVM heap, on local
# disk, snapshotted to the checkpoint) with changelog checkpointing (each batch uploads the rows it
# changed, a snapshot every 10 batches, instead of the store's new files every batch:
# benchmarks.watch_keys --traffic --bytes, 922 -> 606 checkpoint bytes a state row), no micro-batches
# without data (with processing-time timeouts Spark would otherwise run an empty batch at every
# trigger; idle keys time out at the next batch with data), and the last 10 batches' state and
# offsets kept in the checkpoint instead of Spark's 100 (a restart needs the last one; python -m benchmarks soak:
# 10 minutes of steady traffic grew the checkpoint 4.6 MB in the middle third and 17.5 MB in the
# last, to 23.8 MB, with 100).
STREAM_CONF = {
    "spark.sql.streaming.stateStore.providerClass": STATE_STORE,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.streaming.minBatchesToRetain": "10",
}
# key histories held at most by default (docs/watch.md, "Sizing")
MAX_KEYS = 1_000_000


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
    max_keys: int = MAX_KEYS  # key histories held at most (0: only the TTL bounds them)
    review_ms: int = 60_000  # a key seen is looked at again for the budget this much later


def carry_operator(fed: DataFrame, cfg: CarrySettings, session: SessionCaps) -> DataFrame:
    """The operator (``Carry.java``) over a frame of ``FED`` columns (``carry_input``'s): every
    group's rows and context, each with its role (``OUTPUT``: the facts, ``rest`` and ``role``)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    spark = fed.sparkSession
    op = session.operator_class(OPERATOR_CLASS)
    settings = op(cfg.key_history, cfg.key_ttl_ms, cfg.await_ms, cfg.final_memory, list(cfg.transaction_servers),
                  dict(cfg.topic_partitions), cfg.max_keys, cfg.review_ms)
    return ClassicFrame(op.apply(fed.select(*FED)._jdf, settings), spark)  # type: ignore[attr-defined]


def carry_stream(stream: DataFrame, cfg: CarrySettings, scan: ScanConfig, session: SessionCaps) -> DataFrame:
    """The stateful streaming frame: raw Kafka records in, new records and their context out."""
    return carry_operator(carry_input(stream, scan, session), cfg, session)


def carry_input(stream: DataFrame, scan: ScanConfig, session: SessionCaps) -> DataFrame:
    """What the operator is fed (``FED``): each record decoded once, then once per context group it
    belongs to (``ctx``): its facts, for the server and table groups the fields they read
    (``FIELDS``; null for key and partition groups) and, for its key or partition group, the rest
    of its decoded columns. With a schema registry, keys and values are decoded from Avro first
    (schemas fetched by id where first met). (A frame of records, streaming or not.)

    Row images become one digest here, for new records and context alike: the checks compare
    images only through ``checks.ordering.CONTENT_HASH`` (and their presence), which reads the
    digests as it read the images; ``value_hash``, which that hash reads only without a position,
    likewise only then."""
    from cdc_monitor.decoding.avro_wire import avro_stream_as_json

    records = stream.withColumn(GAP_VALUE, F.when(F.col("offset") < 0, F.col("value")))
    ev = with_lag(decode_records(avro_stream_as_json(records, scan), scan.roles, keep=(GAP_VALUE,),
                                 avro_json=scan.avro_json, session=session))
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
    fields: dict[str, Any] = {
        "skind": F.when(marker, F.lit(MARKER)).when(in_txn, F.lit(DATA)),
        "sstatus": F.when(marker, F.col("status")),
        "txn": F.coalesce(F.when(marker, F.col("marker_key")), F.col("txn_key")),
        "tbl": F.when(in_txn, F.col("table")),
        "event_count": F.when(end, F.col("marker_event_count")),
        "collections": F.when(end, F.col("marker_collections")),
    }
    images = F.xxhash64("before", "after").cast("string")
    pg = F.col("flavour") == "postgresql"
    derived = {
        "has_source": F.col("source").isNotNull(),
        "source_lsn": F.when(pg, F.col("source.lsn")),
        "source_sequence": F.when(pg, F.col("source.sequence")),
        "before": F.when(F.col("before").isNotNull(), images),
        "after": F.when(F.col("after").isNotNull(), F.when(F.col("before").isNotNull(), F.lit("")).otherwise(images)),
        "value_hash": F.when(F.col("position").isNull(), F.col("value_hash")),
    }
    lag = ("source_ts_valid", "lag_ms", "record_lag_ms")  # (with_lag's: the L groups' choice, not event columns)
    rest = F.struct(*[c for c in ev.columns if c not in FACT and c not in lag])
    grouped = F.col("c.ctx").startswith(SERVER) | F.col("c.ctx").startswith(LAG)  # K and P rows need none of FIELDS
    # (the content over the facts as the checks see them: the digests, value_hash where it is read), on
    # the key pass's records: a key's data events, and a partition's data events without a key (their
    # copies are judged in the operator: Carry's P groups)
    content = F.when(F.col("kind") == "data", F.expr(CONTENT_HASH))
    keyless = F.col("data_event") & F.col("key_payload").isNull()
    return ev.select(
        F.explode(F.filter(ctxs, lambda c: c["ctx"].isNotNull())).alias("c"),
        *[derived.get(c, F.col(c)).alias(c) for c in FACT if c != CONTENT], *[v.alias("f_" + k) for k, v in fields.items()],
        rest.alias(REST), keyless.alias("keyless"),
    ).select(
        F.col("c.ctx").alias("ctx"), *[c for c in FACT if c != CONTENT],
        F.when(F.col("c.ctx").startswith(KEY) | (F.col("c.ctx").startswith(PARTITION) & F.col("keyless")), content)
        .alias(CONTENT),
        *[F.when(grouped, F.col("c.order_ts") if c == "order_ts" else F.col("f_" + c)).alias(c) for c in FIELDS],
        F.when(~grouped, F.col(REST)).alias(REST),
    )


def decoded_rows(carried: DataFrame) -> DataFrame:
    """The operator's rows as the events frame (decoding/events.py's columns) with ``role`` and a gap
    row's value (``GAP_VALUE``: what ``GapRow.parse`` reads, null elsewhere). New records have every
    column; context records their facts (the other columns null, the source block only its
    presence and PostgreSQL's lsn and sequence, the transaction key from the id)."""
    from cdc_monitor.decoding.envelope import CHECKED_SOURCE_FIELDS
    from cdc_monitor.decoding.events import txn_key

    rest = F.col(REST)
    fields = [f.name for f in carried.schema[REST].dataType.fields]
    context = F.when(F.col("has_source"), F.struct(*[
        (F.col("source_lsn") if f == "lsn" else F.col("source_sequence") if f == "sequence" else F.lit(None).cast("string"))
        .alias(f) for f in CHECKED_SOURCE_FIELDS]))
    special = {
        "source": F.when(rest.isNotNull(), rest["source"]).otherwise(context),
        "txn_key": F.when(rest.isNotNull(), rest["txn_key"]).otherwise(txn_key(F.col("txn_id"))),
    }
    return carried.select(
        *[c for c in FACT if c not in SYNTHETIC],
        *[special.get(f, rest[f]).alias(f) for f in fields],
        FOUND_COLUMN, "role",
    )
