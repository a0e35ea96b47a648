"""The one decoder: a Java UDF (``cdcmonitor.Decoder`` in the jar of ``cdc_monitor/java``, Spark's public
UDF API) that reads each record's value and key in one streaming pass and returns its decoded facts
as one struct (the columns of ``DECODED``, documented in decoding/events.py).

The decoder is told what it needs to know as data, in one JSON text passed with every call (Spark
keeps it a literal; the JVM parses it once): the source block's fields (decoding/envelope.py), the
connectors (vocabulary.py), the topic roles and the output columns. Nothing it judges is spelled
twice: the Python side declares, the Java side reads.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_monitor.avro.schemas import AVRO_BRANCH_JSON
from cdc_monitor.decoding.envelope import CHECKED_SOURCE_FIELDS, SOURCE_FIELDS, SOURCE_SCHEMA
from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.vocabulary import (
    ALLOWED_OPS,
    CONNECTORS,
    DELETE_KEEPS_AFTER,
    DELETE_WITHOUT_IMAGES,
    GENERIC_OPS,
    MESSAGE_OP_FLAVOURS,
    PG_TXN_ID,
    POSITION_FORMS,
    REQUIRED_SOURCE,
    SNAPSHOT_OPS_UNDOCUMENTED,
    TRANSACTION_SERVER_REGEX,
    UNKNOWN_FLAVOUR,
    DecodeError,
    TopicRoles,
)

if TYPE_CHECKING:
    from cdc_monitor.runtime.session import SessionCaps

UDF_NAME = "cdc_monitor_decode"
NEEDS = "cdc-monitor's decoder"  # (its fix-it errors' subject)
DECODER_CLASS = "cdcmonitor.Decoder"
SNIPPET = 80
SNAPSHOT_VALUES = ("true", "last", "first", "incremental", "first_in_data_collection", "last_in_data_collection")
DDL_TABLE = (r"(?i)^\s*(?:CREATE|ALTER|DROP|RENAME|TRUNCATE)\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"
             r"[`\"]?([\w$]+)[`\"]?(?:\.[`\"]?([\w$]+)[`\"]?)?")

_S, _L, _B = T.StringType(), T.LongType(), T.BooleanType()
# the decoder's columns, in order (each documented in decoding/events.py)
DECODED = T.StructType([
    T.StructField(name, typ) for name, typ in (
        ("kind", _S), ("decode_error", _S), ("decode_detail", _S), ("decode_snippet", _S), ("flavour", _S),
        ("server", _S), ("db", _S), ("schema_name", _S), ("table_name", _S), ("table", _S), ("op", _S),
        ("ts_ms", _L), ("ts_ms_raw", _S), ("source_ts_ms", _L), ("ts_us", _L), ("source_ts_us", _L),
        ("source_ts_raw", _S), ("snapshot", _B), ("snapshot_marker", _S), ("txn_id", _S), ("txn_key", _S),
        ("txn_total_order", _L), ("txn_collection_order", _L), ("position", T.ArrayType(_L)),
        ("source", SOURCE_SCHEMA), ("before", _S), ("after", _S), ("value_schema", _S), ("key_schema", _S),
        ("key_payload", _S), ("status", _S), ("marker_id", _S), ("marker_key", _S), ("has_message", _B),
        ("has_update_description", _B), ("update_hash", _L), ("marker_event_count", _L),
        ("marker_collections", T.ArrayType(T.StructType([T.StructField("data_collection", _S),
                                                          T.StructField("event_count", _L)]))),
        ("ddl_tables", T.ArrayType(_S)),
        # the rules the record alone breaks, judged by the decoder (checks/findings.py: verdict_findings)
        ("verdicts", T.ArrayType(T.StructType([T.StructField("rule", _S), T.StructField("message", _S)]))),
        ("value_schema_hash", _L), ("key_schema_hash", _L),  # a version of each embedded schema
        # key_payload as events.canonical_key writes it, where the decoder can (a flat object); else null
        ("key_canonical", _S),
        ("avro_json", _B),  # the value was Avro's JSON encoding, read as the JSON converter's text (java/AvroJson.java)
        # a change event in Debezium's envelope another producer wrote (Decoded.foreignProducer: events.foreign_producer)
        ("foreign_producer", _B),
    )
])
# the embedded schemas' texts: only reconcile reads them (checks read their hashes and the decoder's verdicts)
TEXTS = ("value_schema", "key_schema")
# what the checks read instead of the texts (``texts=False``): each row image as a 64-bit digest of its
# compact text (null when absent: presence and equality are all a check asks of it), and the source block's
# fields the checks name (decoding/envelope.py). Every stage after the decoder then carries tens of bytes a
# record where the texts were kilobytes
NARROW = {"before": _L, "after": _L,
          "source": T.StructType([T.StructField(n, T.StringType()) for n in CHECKED_SOURCE_FIELDS])}


def decoded_type(texts: bool) -> T.StructType:
    """The decoder's struct: with ``texts`` every text (the row images, the whole source block, the
    embedded schemas: reconcile); without, what the checks read (``NARROW``)."""
    if texts:
        return DECODED
    return T.StructType([T.StructField(f.name, NARROW.get(f.name, f.dataType)) for f in DECODED.fields
                         if f.name not in TEXTS])


@lru_cache(maxsize=16)
def decoder_config(roles: TopicRoles, texts: bool = False, detect_avro_json: bool = True) -> str:
    """The JSON text the decoder is configured with (one per topic roles, column set and Avro-JSON
    detection: off where --avro-json or --no-avro-json decided)."""
    return json.dumps({
        "source_fields": SOURCE_FIELDS,
        "connectors": CONNECTORS,
        "unknown_flavour": UNKNOWN_FLAVOUR,
        "snapshot_values": SNAPSHOT_VALUES,
        "transaction_topic_regex": roles.transaction_topic_regex,
        "transaction_server_regex": TRANSACTION_SERVER_REGEX,
        "heartbeat_topic_prefix": roles.heartbeat_topic_prefix,
        "heartbeat_server_regex": roles.heartbeat_server_regex,
        "pg_txn_id": PG_TXN_ID,
        "ddl_table": DDL_TABLE,
        "snippet": SNIPPET,
        "json_error": DecodeError.JSON.value,
        "envelope_error": DecodeError.ENVELOPE.value,
        "avro_error": DecodeError.AVRO.value,
        "schema_id_error": DecodeError.SCHEMA_ID.value,
        "generic_ops": GENERIC_OPS,
        "allowed_ops": ALLOWED_OPS,
        "message_op_flavours": MESSAGE_OP_FLAVOURS,
        "delete_keeps_after": DELETE_KEEPS_AFTER,
        "delete_without_images": DELETE_WITHOUT_IMAGES,
        "snapshot_ops_undocumented": SNAPSHOT_OPS_UNDOCUMENTED,
        "required_source": REQUIRED_SOURCE,
        "position_forms": POSITION_FORMS,
        # presence judged by another rule (missing_source_field, op_missing), types still checked
        "skip_null_check": ["op", *sorted({f"source.{f}" for fields in REQUIRED_SOURCE.values() for f in fields})],
        "detect_avro_json": detect_avro_json,
        "avro_branches": AVRO_BRANCH_JSON,
        "fields": decoded_type(texts).fieldNames(),
        "image_digests": not texts,
        "source_out": None if texts else list(CHECKED_SOURCE_FIELDS),
    }, separators=(",", ":"))


def register_decoder(session: SessionCaps, texts: bool = False) -> None:
    """Registers the decoder in ``session`` (idempotent); a missing or mismatched jar is a fix-it error."""
    if (problem := session.jar_problem(NEEDS)) is not None:
        raise EnvironmentProblem(problem)
    session.register_java_function(_udf_name(texts), DECODER_CLASS, decoded_type(texts), NEEDS)


def _udf_name(texts: bool) -> str:
    return UDF_NAME + ("_texts" if texts else "")


def decode_column(topic: Column, key: Column, value: Column, pre: tuple[Column, Column, Column], roles: TopicRoles,
                  texts: bool = False, detect_avro_json: bool = True) -> Column:
    """The decoder's struct for one record (register_decoder first). ``pre``: an Avro stage's error,
    detail and message (decoding/avro_wire.py), nulls on JSON input. ``texts``: with the embedded schemas' texts.
    ``detect_avro_json``: a value in Avro's JSON encoding is recognised and read as the JSON converter's."""
    return F.call_udf(_udf_name(texts), topic, key, value, *pre, F.lit(decoder_config(roles, texts, detect_avro_json)))
