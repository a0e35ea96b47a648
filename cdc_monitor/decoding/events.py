"""Kafka-source records -> the normalised events frame every check reads, through the one decoder
(decoding/decoder.py: a Java UDF that reads each value and key once and judges what the record alone
shows). Columns:

| column | meaning |
| --- | --- |
| topic, partition, offset, record_ts_ms, timestamp_type | where the record sits (record time in ms) |
| key | the record key as text (the finding's ``key``) |
| kind | data, tombstone, transaction, schema_change, heartbeat |
| decode_error | null, or what could not be read (``vocabulary.DecodeError``; an Avro stage's first) |
| decode_detail | which part failed (value/key) |
| decode_snippet | the start of the undecodable text (null when it decoded) |
| flavour, server, db, schema_name, table_name, table | who produced it; ``table`` is the qualified data collection |
| op, ts_ms, ts_ms_raw, source_ts_ms, source_ts_raw, snapshot | change metadata (source_ts_ms: ts_ms, else ts_sec*1000; raw: as sent) |
| snapshot_marker | ``source.snapshot`` as written, lower-case (true, first, last, incremental, first_in_data_collection, ...) |
| ts_us, source_ts_us | the processing and source times in microseconds, when ts_us or ts_ns is sent (Debezium 2.x) |
| txn_id, txn_total_order, txn_collection_order | the data event's ``transaction`` block |
| txn_key, marker_key | the transaction id (data event / marker) as reconciled (``txn_key``: PostgreSQL's txId part) |
| has_message | the value carries a logical-decoding ``message`` block (op ``m``) |
| has_update_description, update_hash | a MongoDB update says what changed (``updateDescription``, 1.x ``patch``), and its hash |
| position | comparable connector position (``array<bigint>``, per connector: cdc_monitor/java/Connectors.java) |
| source, before, after | the source block's fields the checks read (``CHECKED_SOURCE_FIELDS``); each row image's digest, or null |
| key_payload | the key's payload (``canonical_key``: what keys are grouped by) |
| status, marker_id, marker_event_count, marker_collections | transaction-topic BEGIN/END fields |
| pk_change | the record carries ``__debezium.oldkey``/``newkey`` headers |
| ddl_tables | schema-change events: the tables the DDL is about (``tableChanges[].id``, else its DDL text) |
| verdicts | the per-record rules the record breaks, with their messages (checks/verdicts.py) |
| value_hash | xxhash64 of the value text (duplicate detection without carrying the text) |
| value_schema_hash, key_schema_hash | a hash of each embedded schema, else an Avro record's registry schema id (null without one) |
| data_event | a decoded record of a data topic with a value (what the checks call a data event) |
| change_event | a data event with op c/u/d that is not part of a snapshot (what lag is measured over) |
| snapshot_event | a data event of a snapshot (op r, or source.snapshot true/last/incremental/...) |
| envelope | a data event that is a Debezium envelope (not a flattened row or wrapper object) |
| avro_json | the value was Avro's JSON encoding, recognised without ``--avro-json``: read, and its key, as JSON converter text |
| foreign_producer | a change event in Debezium's envelope another producer wrote (``foreign_producer``) |

With ``texts=True`` (reconcile): ``source`` is the whole block, ``before`` and ``after`` the images as written
(compact JSON, numbers as sent), and there are ``value_text`` and the embedded schemas' texts ``value_schema``,
``key_schema``. The checks never read them, so no checkpoint holds them: a record's decoding is tens of bytes,
not the kilobytes of its value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.decoding.avro_wire import PRE_COLUMNS
from cdc_monitor.decoding.decoder import decode_column, decoded_type, register_decoder
from cdc_monitor.vocabulary import PG_TXN_ID, TopicRoles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps

EVENT_KINDS = ("data", "tombstone", "transaction", "schema_change", "heartbeat")
CHANGE_OPS = ("c", "u", "d")
TS_MIN_MS = 946_684_800_000  # 2000-01-01
TS_MAX_MS = 4_102_444_800_000  # 2100-01-01


def _pre(records: DataFrame, name: str) -> Column:
    """A column of an Avro stage (decoding/avro_wire.py), or its typed null on JSON input."""
    typ = PRE_COLUMNS[name].dataType
    return (F.col(name) if name in records.columns else F.lit(None).cast(typ)).alias(name)


def txn_key(txn_id: Column) -> Column:
    """The reconciliation key of a transaction id (vocabulary.txn_key as a column)."""
    return F.when(txn_id.rlike(PG_TXN_ID), F.regexp_extract(txn_id, PG_TXN_ID, 1)).otherwise(txn_id)


def canonical_key(payload: Column) -> Column:
    """A key's payload as one text per value: the same key written with or without a schema wrapper,
    with other whitespace or field order, is one key (a JSON object's fields sorted, as Spark's
    variant stores them; no whitespace). A payload that is not JSON (a bare string) stays as it is."""
    return F.coalesce(F.to_json(F.try_parse_json(payload)), payload)


def decode_records(records: DataFrame, roles: TopicRoles | None = None, keep: tuple[str, ...] = (),
                   texts: bool = False, avro_json: bool | None = None, *, session: SessionCaps) -> DataFrame:
    """Kafka-source records -> the events frame, through the one decoder (decoding/decoder.py).

    ``keep``: columns of ``records`` passed through unchanged (watch keeps the raw record beside its
    decoding). ``texts``: with the texts the checks never read (reconcile; see the module).
    ``avro_json``: the setting (``ScanConfig.avro_json``): None, each value in Avro's JSON encoding is
    recognised by the decoder; True, an Avro stage read every record so already; False, none is.
    ``session``: the records' session, where the decoder is registered."""
    roles = roles or TopicRoles()
    register_decoder(session, texts)
    base = records.select(
        "topic", "partition", "offset",
        (F.unix_millis("timestamp")).alias("record_ts_ms"),
        F.col("timestampType").alias("timestamp_type"),
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value_text"),
        "headers",
        *[_pre(records, c) for c in PRE_COLUMNS.fieldNames()],
        *keep,
    )
    d = F.col("d")
    pre = (F.col("pre_error"), F.col("pre_detail"), F.col("pre_message"))  # an Avro stage's verdict (avro_wire.py)
    decoded = [n for n in decoded_type(texts).fieldNames()
               if n not in ("key_payload", "key_canonical", "value_schema_hash", "key_schema_hash")]
    events = base.withColumn("d", decode_column(F.col("topic"), F.col("key"), F.col("value_text"), pre, roles, texts,
                                                avro_json is None)).select(
        "topic", "partition", "offset", "record_ts_ms", "timestamp_type", "key", *(["value_text"] if texts else []), *keep,
        *[d[n].alias(n) for n in decoded],
        F.coalesce(d["key_canonical"], canonical_key(d["key_payload"])).alias("key_payload"),
        F.coalesce(F.exists("headers", lambda h: h["key"].isin("__debezium.oldkey", "__debezium.newkey")),
                   F.lit(False)).alias("pk_change"),
        F.xxhash64("value_text").alias("value_hash"),
        # a schema version: the embedded schema's, or the registry id of an Avro record's schema
        F.coalesce(d["value_schema_hash"], "value_schema_id").alias("value_schema_hash"),
        F.coalesce(d["key_schema_hash"], "key_schema_id").alias("key_schema_hash"),
    )
    # the derived flags every check reads, defined here once
    data_event = (F.col("kind") == "data") & F.col("decode_error").isNull()
    snapshot_event = F.coalesce((F.col("op") == "r") | F.col("snapshot"), F.lit(False))
    return events.withColumns({
        "data_event": data_event,
        "change_event": data_event & F.coalesce(F.col("op").isin(*CHANGE_OPS), F.lit(False)) & ~snapshot_event,
        "snapshot_event": data_event & snapshot_event,
        "envelope": data_event & ~non_envelope(),
    })


def non_envelope() -> Column:
    """A decoded value with none of a change event's parts (op, source, row images, message):
    a flattened row (ExtractNewRecordState) or some wrapper object. Checks judge it once per topic."""
    return (F.col("op").isNull() & F.col("source").isNull() & F.col("before").isNull() & F.col("after").isNull()
            & ~F.col("has_message"))


def foreign_producer() -> Column:
    """A change event in Debezium's envelope written by another producer: no source block, a source
    block naming neither ``connector`` nor ``version`` (Debezium's names both), or one without a source
    time (Debezium's always has ts_ms; dtle's ts_sec, Cassandra's ts_micro), as the decoder judged it
    (``Decoded.foreignProducer``: the one definition; false where a watch context record does not carry it).
    Its source-based rules (source fields, source time, positions) are not judged; schema's
    ``non_debezium_producer`` notes it once per topic."""
    return F.coalesce(F.col("foreign_producer"), F.lit(False))


def valid_source_ts(col: Column) -> Column:
    """A valid source timestamp: an integer between 2000-01-01 and 2100-01-01 (ms)."""
    return col.isNotNull() & (col >= TS_MIN_MS) & (col < TS_MAX_MS)


def valid_ts_us(col: Column) -> Column:
    """A plausible time in microseconds: the same 2000..2100 span."""
    return col.isNotNull() & (col >= TS_MIN_MS * 1000) & (col < TS_MAX_MS * 1000)
