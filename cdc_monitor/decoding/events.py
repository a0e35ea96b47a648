"""Kafka-source records -> the normalised events frame every check reads.

One ``from_json`` per value and per key; everything else is column expressions. Columns:

| column | meaning |
| --- | --- |
| topic, partition, offset, record_ts_ms, timestamp_type | where the record sits (record time in ms) |
| key, value_text | the record key and value as text (key is the finding's ``key``) |
| kind | data, tombstone, transaction, schema_change, heartbeat |
| decode_error | null, or what could not be read (``vocabulary.DecodeError``; the decode rules judge it) |
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
| position | comparable connector position (``array<bigint>``) |
| source, before, after | parsed source struct; raw row images |
| value_schema, key_schema, key_payload | raw embedded schemas and the key's payload (``canonical_key``: what keys are grouped by) |
| value_variant, value_shape, key_variant, key_shape | payloads with an embedded schema, parsed, and their shapes |
| status, marker_id, marker_event_count, marker_collections | transaction-topic BEGIN/END fields |
| pk_change | the record carries ``__debezium.oldkey``/``newkey`` headers |
| ddl_tables | schema-change events: the tables the DDL is about (``tableChanges[].id``, else its DDL text) |
| value_hash | xxhash64 of the value text (duplicate detection without carrying the text) |
| value_schema_hash, key_schema_hash | xxhash64 of the embedded schemas (null without one) |
| data_event | a decoded record of a data topic with a value (what the checks call a data event) |
| change_event | a data event with op c/u/d that is not part of a snapshot (what lag is measured over) |
| snapshot_event | a data event of a snapshot (op r, or source.snapshot true/last/incremental/...) |
| envelope | a data event that is a Debezium envelope (not a flattened row or wrapper object) |

``without_texts`` drops the raw texts (value_text, value_schema, key_schema): they are most of a
row's bytes and only the embedded-schema check reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.decoding.avro_wire import PRE_COLUMNS
from cdc_monitor.decoding.envelope import CORRUPT, JSON_OPTIONS, KEY_SCHEMA, PAYLOAD_FIELDS, VALUE_SCHEMA
from cdc_monitor.decoding.positions import position_expr
from cdc_monitor.vocabulary import CONNECTORS, PG_TXN_ID, TRANSACTION_SERVER_REGEX, UNKNOWN_FLAVOUR, DecodeError, TopicRoles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

EVENT_KINDS = ("data", "tombstone", "transaction", "schema_change", "heartbeat")
SNAPSHOT_VALUES = ("true", "last", "first", "incremental", "first_in_data_collection", "last_in_data_collection")
SNIPPET = 80
CHANGE_OPS = ("c", "u", "d")
# what only the embedded-schema check reads: the raw texts and the payloads parsed for it
TEXT_COLUMNS = ("value_text", "value_schema", "key_schema", "value_variant", "value_shape", "key_variant", "key_shape")
TS_MIN_MS = 946_684_800_000  # 2000-01-01
TS_MAX_MS = 4_102_444_800_000  # 2100-01-01


def _flavour(src: Column, value_schema: Column) -> Column:
    """The connector whose rules apply: named by ``source.connector``; a name the decoder does not
    know is ``unknown`` (generic rules only), never guessed from its fields; without a name, by
    the source schema's name, then by the fields only one connector sends."""
    connector = F.lower(src["connector"])
    by_name = F.lower(F.regexp_extract(value_schema, r"io\.debezium\.connector\.(\w+)\.Source", 1))
    named = F.coalesce(*[F.when(connector == k, F.lit(v)) for k, v in CONNECTORS.items()])
    from_schema = F.coalesce(*[F.when(by_name == k, F.lit(v)) for k, v in CONNECTORS.items()])
    return (
        F.when(named.isNotNull(), named)
        .when(connector.isNotNull() & (F.trim(connector) != ""), F.lit(UNKNOWN_FLAVOUR))
        .when(connector.isNull() & src["ts_sec"].isNotNull() & src["ts_ms"].isNull(), F.lit("dtle"))
        .when(from_schema.isNotNull(), from_schema)
        .when(src["scn"].isNotNull(), F.lit("oracle"))
        .when(src["commit_lsn"].isNotNull(), F.lit("sqlserver"))
        .when(src["file"].isNotNull() & src["pos"].isNotNull(), F.lit("mysql"))
        .when(src["lsn"].contains(":"), F.lit("yugabyte"))
        .when(src["lsn"].isNotNull(), F.lit("postgresql"))
        .when(src["ord"].isNotNull(), F.lit("mongodb"))
    )


def _table(flavour: Column, src: Column, value_schema: Column, topic: Column) -> Column:
    """Qualified data collection, spelled as Debezium spells it in transaction END markers."""
    db, sch, tbl = src["db"], src["schema"], F.coalesce(src["table"], src["collection"])
    by_source = (
        F.when(flavour.isin("postgresql", "yugabyte"), F.concat_ws(".", sch, tbl))
        .when(flavour.isin("mysql", "dtle", "mongodb"), F.concat_ws(".", db, tbl))
        .when(flavour == "vitess", F.concat_ws(".", F.coalesce(F.nullif(src["keyspace"], F.lit("")), db), tbl))
        .when(flavour == "spanner", tbl)
        .when(flavour == "cassandra", F.concat_ws(".", src["keyspace"], tbl))
        .otherwise(F.concat_ws(".", db, sch, tbl))
    )
    # "<server>.<rest>.Envelope" / topic "<server>.<rest>" when the source names no table
    envelope_name = F.regexp_extract(value_schema, r'"name"\s*:\s*"[^".]+\.([^"]+)\.Envelope"', 1)
    by_topic = F.regexp_extract(topic, r"^[^.]+\.(.+)$", 1)
    return F.when(tbl.isNotNull(), by_source).otherwise(
        F.coalesce(F.nullif(envelope_name, F.lit("")), F.nullif(by_topic, F.lit("")), topic)
    )


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


def _one_document(text: Column) -> Column:
    """The text is exactly one JSON document. Spark's JSON readers stop after the first value, so
    ``{"id": 1}<TAB>{...}`` or ``{...}^{...}`` would decode as its first object: parsed inside an
    array with a sentinel element after it, anything after the first value makes the array
    invalid (null) or of another length (a stray ``]`` ends it early: ``{...}]`` is 1 element,
    which an array closed right after the text did not tell from one document)."""
    return F.coalesce(F.json_array_length(F.concat(F.lit("["), text, F.lit(",0]"))) == 2, F.lit(False))


def decode_records(records: DataFrame, roles: TopicRoles | None = None, keep: tuple[str, ...] = ()) -> DataFrame:
    """``keep``: columns of ``records`` passed through unchanged (watch keeps the raw record beside its decoding)."""
    roles = roles or TopicRoles()
    value_text = F.col("value").cast("string")
    key_text = F.col("key").cast("string")
    base = records.select(
        "topic",
        "partition",
        "offset",
        (F.unix_millis("timestamp")).alias("record_ts_ms"),
        F.col("timestampType").alias("timestamp_type"),
        key_text.alias("key"),
        value_text.alias("value_text"),
        "headers",
        F.from_json(value_text, VALUE_SCHEMA, JSON_OPTIONS).alias("v"),
        F.from_json(key_text, KEY_SCHEMA, JSON_OPTIONS).alias("k"),
        *[_pre(records, c) for c in PRE_COLUMNS.fieldNames()],
        *keep,
    )
    v, k = F.col("v"), F.col("k")
    enveloped = v["payload"].isNotNull()
    fields = {f.name: F.when(enveloped, v["payload"][f.name]).otherwise(v[f.name]) for f in PAYLOAD_FIELDS}
    value_schema = F.when(enveloped, v["schema"])
    has_value = F.col("value_text").isNotNull()
    value_bad_json = has_value & (
        v.isNull() | (v[CORRUPT].isNotNull() & F.from_json("value_text", "map<string,string>").isNull())
        | ~_one_document(F.col("value_text"))
    )
    value_bad_shape = has_value & v.isNotNull() & v[CORRUPT].isNotNull() & ~value_bad_json
    key_bad_json = F.col("key").isNotNull() & (k.isNull() | k[CORRUPT].isNotNull() | ~_one_document(F.col("key")))
    decode_error = (  # an Avro stage's verdict first (decoding/avro_wire.py)
        F.when(F.col("pre_error").isNotNull(), F.col("pre_error"))
        .when(value_bad_json, F.lit(DecodeError.JSON.value))
        .when(value_bad_shape, F.lit(DecodeError.ENVELOPE.value))
        .when(key_bad_json, F.lit(DecodeError.JSON.value))
    )
    decode_detail = (
        F.when(F.col("pre_error").isNotNull(), F.col("pre_detail"))
        .when(value_bad_json | value_bad_shape, F.lit("value")).when(key_bad_json, F.lit("key"))
    )
    is_marker = fields["status"].isin("BEGIN", "END") & fields["op"].isNull()
    kind = (
        F.when(~has_value, F.lit("tombstone"))
        .when(F.col("topic").rlike(roles.transaction_topic_regex), F.lit("transaction"))
        .when(F.col("topic").startswith(roles.heartbeat_topic_prefix), F.lit("heartbeat"))
        .when(is_marker, F.lit("transaction"))
        .when(
            fields["op"].isNull()
            & (
                fields["databaseName"].isNotNull()
                | fields["ddl"].isNotNull()
                | fields["tableChanges"].isNotNull()
            ),
            F.lit("schema_change"),
        )
        .otherwise(F.lit("data"))
    )
    src = fields["source"]
    stage = base.select(
        "topic", "partition", "offset", "record_ts_ms", "timestamp_type", "key", "value_text", "headers",
        "pre_message", "key_schema_id", "value_schema_id", *keep,
        kind.alias("kind"),
        decode_error.alias("decode_error"),
        decode_detail.alias("decode_detail"),
        value_schema.alias("value_schema"),
        F.when(k["payload"].isNotNull(), k["schema"]).alias("key_schema"),
        canonical_key(F.when(k["payload"].isNotNull(), k["payload"]).otherwise(F.when(k[CORRUPT].isNull(), F.col("key"))))
        .alias("key_payload"),
        *[fields[name].alias(name) for name in ("before", "after", "op", "source", "transaction", "status",
                                                "data_collections")],
        fields["message"].isNotNull().alias("has_message"),
        (fields["patch"].isNotNull() | fields["updateDescription"].isNotNull()).alias("has_update_description"),
        # what a MongoDB update without its document changed: part of what makes two events the same
        F.when(fields["patch"].isNotNull() | fields["updateDescription"].isNotNull(),
               F.xxhash64(fields["patch"], fields["updateDescription"])).alias("update_hash"),
        fields["databaseName"].alias("ddl_database"),
        fields["ddl"].alias("ddl_text"),
        fields["tableChanges"].alias("table_changes"),
        fields["ts_ms"].alias("ts_ms_raw"),
        fields["ts_us"].alias("ts_us_raw"),
        fields["ts_ns"].alias("ts_ns_raw"),
        fields["id"].alias("marker_id"),
        fields["event_count"].alias("marker_event_count_raw"),
    )
    src = F.col("source")
    flavour = _flavour(src, F.col("value_schema"))
    micro = src["ts_micro"].try_cast("bigint")  # Cassandra's source time
    micro_ms = F.expr("try_cast(source.ts_micro AS BIGINT) div 1000")
    source_ts = F.coalesce(src["ts_ms"].try_cast("bigint"), F.try_multiply(src["ts_sec"].try_cast("bigint"), F.lit(1000)),
                           micro_ms)
    source_ts_raw = F.coalesce(src["ts_ms"], src["ts_sec"], micro_ms.cast("string"))
    snapshot = F.lower(F.coalesce(src["snapshot"], F.lit("false"))).isin(*SNAPSHOT_VALUES)
    pk_change = F.coalesce(
        F.exists("headers", lambda h: h["key"].isin("__debezium.oldkey", "__debezium.newkey")), F.lit(False)
    )
    # a heartbeat names its server in its topic (__debezium-heartbeat.<prefix>) and its key (serverName)
    heartbeat_server = F.coalesce(
        F.nullif(F.regexp_extract("topic", roles.heartbeat_server_regex, 1), F.lit("")),
        F.get_json_object(F.col("key_payload"), "$.serverName"))
    events = stage.withColumn("flavour", flavour).select(
        "topic", "partition", "offset", "record_ts_ms", "timestamp_type", "key", "value_text", *keep,
        "kind", "decode_error", "decode_detail",
        F.when(F.col("decode_error").isNotNull(), F.coalesce(F.col("pre_message"), F.substring(
            F.coalesce(F.when(F.col("decode_detail") == "key", F.col("key")).otherwise(F.col("value_text")), F.lit("")),
            1, SNIPPET))).alias("decode_snippet"),
        "flavour",
        F.coalesce(
            src["name"], src["server"],
            F.when(F.col("kind") == "heartbeat", heartbeat_server),
            F.when(F.col("kind") == "transaction", F.nullif(F.regexp_extract("topic", TRANSACTION_SERVER_REGEX, 1), F.lit(""))),
            F.regexp_extract("topic", r"^([^.]+)", 1),
        ).alias("server"),
        src["db"].alias("db"),
        src["schema"].alias("schema_name"),
        F.coalesce(src["table"], src["collection"]).alias("table_name"),
        F.when(F.col("kind") == "data", _table(F.col("flavour"), src, F.col("value_schema"), F.col("topic")))
        .alias("table"),
        "op",
        F.col("ts_ms_raw").try_cast("bigint").alias("ts_ms"),
        "ts_ms_raw",
        source_ts.alias("source_ts_ms"),
        # the finest processing and source times present, in microseconds (ts_us, else ts_ns / 1000)
        F.coalesce(F.col("ts_us_raw").try_cast("bigint"), F.expr("try_cast(ts_ns_raw AS BIGINT) div 1000")).alias("ts_us"),
        F.coalesce(src["ts_us"].try_cast("bigint"), F.expr("try_cast(source.ts_ns AS BIGINT) div 1000"), micro)
        .alias("source_ts_us"),
        source_ts_raw.alias("source_ts_raw"),
        snapshot.alias("snapshot"),
        F.lower(src["snapshot"]).alias("snapshot_marker"),
        F.col("transaction")["id"].alias("txn_id"),
        txn_key(F.col("transaction")["id"]).alias("txn_key"),
        F.col("transaction")["total_order"].try_cast("bigint").alias("txn_total_order"),
        F.col("transaction")["data_collection_order"].try_cast("bigint").alias("txn_collection_order"),
        position_expr(F.col("flavour"), src).alias("position"),
        "source", "before", "after", "value_schema", "key_schema", "key_payload",
        F.when(F.col("kind") == "transaction", F.col("status")).alias("status"),
        F.when(F.col("kind") == "transaction", F.col("marker_id")).alias("marker_id"),
        F.when(F.col("kind") == "transaction", txn_key(F.col("marker_id"))).alias("marker_key"),
        "has_message", "has_update_description", "update_hash",
        F.col("marker_event_count_raw").try_cast("bigint").alias("marker_event_count"),
        F.transform(
            "data_collections",
            lambda c: F.struct(
                c["data_collection"].alias("data_collection"),
                c["event_count"].try_cast("bigint").alias("event_count"),
            ),
        ).alias("marker_collections"),
        F.when(F.col("kind") == "schema_change", ddl_tables()).alias("ddl_tables"),
        pk_change.alias("pk_change"),
        F.xxhash64("value_text").alias("value_hash"),
        # a schema version: the embedded schema's hash, or the registry id of an Avro record's schema
        F.coalesce(F.when(F.col("value_schema").isNotNull(), F.xxhash64("value_schema")), "value_schema_id")
        .alias("value_schema_hash"),
        F.coalesce(F.when(F.col("key_schema").isNotNull(), F.xxhash64("key_schema")), "key_schema_id")
        .alias("key_schema_hash"),
    )
    # the derived flags every check reads, defined here once
    data_event = (F.col("kind") == "data") & F.col("decode_error").isNull()
    snapshot_event = F.coalesce((F.col("op") == "r") | F.col("snapshot"), F.lit(False))
    return _payload_shapes(events.withColumns({
        "data_event": data_event,
        "change_event": data_event & F.coalesce(F.col("op").isin(*CHANGE_OPS), F.lit(False)) & ~snapshot_event,
        "snapshot_event": data_event & snapshot_event,
        "envelope": data_event & ~non_envelope(),
    }))


# A payload's shape (checks/variant_shape.py) as Spark computes it, decimal precision dropped.
SHAPE_SQL = r"regexp_replace(schema_of_variant({}), 'DECIMAL\\(\\d+,\\d+\\)', 'DECIMAL')"


def _payload_shapes(events: DataFrame) -> DataFrame:
    """The payloads of data events with an embedded schema, parsed into variants, and their shapes:
    what the embedded-schema check judges (value_variant/value_shape, key_variant/key_shape).
    Parsed here, in the decode pass, so a scan parses them once (the check's shapes job and its
    findings each parsed them again). A value's payload is parsed alone (get_json_object skips
    the schema's tokens); a key is parsed whole (a bare string payload is a key's only)."""
    value = F.when(F.col("data_event") & F.col("value_schema").isNotNull(),
                   F.expr("try_parse_json(get_json_object(value_text, '$.payload'))"))
    key = F.when(F.col("data_event") & F.col("key_schema").isNotNull(),
                 F.expr("try_variant_get(try_parse_json(key), '$.payload', 'variant')"))
    return events.withColumns({"value_variant": value, "key_variant": key}).withColumns({
        "value_shape": F.expr(SHAPE_SQL.format("value_variant")), "key_shape": F.expr(SHAPE_SQL.format("key_variant"))})


DDL_TABLE = (r"(?i)^\s*(?:CREATE|ALTER|DROP|RENAME|TRUNCATE)\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
             r"[`\"]?([\w$]+)[`\"]?(?:\.[`\"]?([\w$]+)[`\"]?)?")


def ddl_tables() -> Column:
    """The tables a schema-change event is about, spelled as ``table`` is (db.table, db.schema.table):
    its ``tableChanges[].id`` without quotes, else the table its DDL names (dtle writes no tableChanges)."""
    changes = F.from_json(F.col("table_changes"), "array<struct<type:string,id:string>>")
    ids = F.transform(changes, lambda c: F.regexp_replace(c["id"], '"', ""))
    first, second = F.regexp_extract("ddl_text", DDL_TABLE, 1), F.regexp_extract("ddl_text", DDL_TABLE, 2)
    named = F.when(second != "", F.concat_ws(".", first, second)).when(
        first != "", F.concat_ws(".", F.col("ddl_database"), first))
    return F.when(F.size(ids) > 0, ids).when(named.isNotNull(), F.array(named)).otherwise(F.array().cast("array<string>"))


def non_envelope() -> Column:
    """A decoded value with none of a change event's parts (op, source, row images, message):
    a flattened row (ExtractNewRecordState) or some wrapper object. Checks judge it once per topic."""
    return (F.col("op").isNull() & F.col("source").isNull() & F.col("before").isNull() & F.col("after").isNull()
            & ~F.col("has_message"))


def without_texts(events: DataFrame) -> DataFrame:
    """The events frame every check but the embedded-schema one reads."""
    return events.drop(*TEXT_COLUMNS)


def valid_source_ts(col: Column) -> Column:
    """A valid source timestamp: an integer between 2000-01-01 and 2100-01-01 (ms)."""
    return col.isNotNull() & (col >= TS_MIN_MS) & (col < TS_MAX_MS)


def valid_ts_us(col: Column) -> Column:
    """A plausible time in microseconds: the same 2000..2100 span."""
    return col.isNotNull() & (col >= TS_MIN_MS * 1000) & (col < TS_MAX_MS * 1000)
