"""Avro records -> the JSON text the decoder reads, in Arrow batches (``mapInArrow``), so every check
works unchanged on Avro topics.

* Confluent wire format (byte 0, a 4-byte big-endian schema id, the Avro binary body): decoded
  with the writer schema from the registry (fetched on the driver once per id, shipped with the
  plan) by fastavro, written as the JSON converter would write it (bytes as base64). Values and
  keys not starting with byte 0 are left as they are (JSON topics beside Avro ones).
* Avro-JSON text (``kafka-avro-console-consumer``, ``kcat -s avro``): union branches unwrapped.

A record that cannot be decoded keeps its bytes and gets ``pre_error`` (``undecodable_avro``,
``unknown_schema_id``), ``pre_detail`` (value/key) and ``pre_message``: the decoder makes it a
finding instead of an ``invalid_json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_monitor.avro.schemas import strip_logical_types, unwrap_avro_json
from cdc_monitor.vocabulary import DecodeError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from cdc_monitor.avro.registry import RegistryClient, RegistrySettings
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.engine.cache import FrameCache

MAGIC = b"\x00"
HEADER = 5
PRE_COLUMNS = T.StructType([
    T.StructField("pre_error", T.StringType()), T.StructField("pre_detail", T.StringType()),
    T.StructField("pre_message", T.StringType()),
    T.StructField("key_schema_id", T.LongType()), T.StructField("value_schema_id", T.LongType()),
])
MESSAGE_CHARS = 120


def _wire_id(col: str):
    c = F.col(col)
    return F.when(c.isNotNull() & (F.length(c) >= HEADER) & (F.substring(c, 1, 1) == F.lit(MAGIC)),
                  F.conv(F.hex(F.substring(c, 2, 4)), 16, 10).cast("bigint"))


def schema_id_usage(records: DataFrame) -> list[dict[str, Any]]:
    """Which schema ids each topic's keys and values name, with record counts (one small job)."""
    rows = (records.select("topic", _wire_id("key").alias("key_id"), _wire_id("value").alias("value_id"))
            .where(F.col("key_id").isNotNull() | F.col("value_id").isNotNull())
            .groupBy("topic", "key_id", "value_id").count().collect())
    return [r.asDict() for r in rows]


def _decoder(schemas: dict[int, str]) -> Callable[[bytes], tuple[bytes | None, str | None, str | None, int | None]]:
    import io

    import fastavro
    import orjson

    parsed: dict[int, Any] = {}

    def default(obj: Any) -> Any:
        if isinstance(obj, bytes | bytearray):
            import base64

            return base64.b64encode(obj).decode("ascii")
        raise TypeError(type(obj).__name__)

    def decode(data: bytes) -> tuple[bytes | None, str | None, str | None, int | None]:
        """(JSON text, error rule, message, schema id) of one key or value in wire format."""
        if len(data) < HEADER:
            return None, DecodeError.AVRO.value, f"{len(data)} byte(s), shorter than the 5-byte wire-format header", None
        sid = int.from_bytes(data[1:HEADER], "big")
        if sid not in parsed:
            text = schemas.get(sid)
            if text is None:
                return None, DecodeError.SCHEMA_ID.value, f"schema id {sid} is not in the schema registry", sid
            try:
                parsed[sid] = fastavro.parse_schema(strip_logical_types(json.loads(text)))
            except Exception as err:  # a registry schema fastavro cannot use: every record of it is a finding
                parsed[sid] = err
        schema = parsed[sid]
        if isinstance(schema, Exception):
            return None, DecodeError.AVRO.value, f"schema id {sid} is not a usable Avro schema ({schema})"[:MESSAGE_CHARS], sid
        body = io.BytesIO(data)
        body.seek(HEADER)
        try:
            datum = fastavro.schemaless_reader(body, schema, None)
        except Exception as err:  # bad input is a finding, never a crash
            return None, DecodeError.AVRO.value, f"does not decode with schema id {sid} ({type(err).__name__}: {err})"[
                :MESSAGE_CHARS], sid
        left = len(data) - body.tell()
        if left:
            return None, DecodeError.AVRO.value, f"{left} byte(s) left after decoding with schema id {sid}", sid
        return orjson.dumps(datum, default=default), None, None, sid

    return decode


def _with_pre(schema: T.StructType) -> T.StructType:
    return T.StructType([*schema.fields, *PRE_COLUMNS.fields])


def _rebuild(batch: pa.RecordBatch, keys: list[Any], values: list[Any], pre: dict[str, list[Any]]) -> pa.RecordBatch:
    """The batch with new keys and values and the stage's columns (the others passed through as they are)."""
    import pyarrow as pa

    types = {"pre_error": pa.string(), "pre_detail": pa.string(), "pre_message": pa.string(),
             "key_schema_id": pa.int64(), "value_schema_id": pa.int64()}
    arrays = [pa.array(keys, pa.binary()) if name == "key" else pa.array(values, pa.binary()) if name == "value"
              else batch.column(name) for name in batch.schema.names]
    arrays += [pa.array(pre[name], types[name]) for name in PRE_COLUMNS.fieldNames()]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, *PRE_COLUMNS.fieldNames()])


def decode_wire_format(records: DataFrame, schemas: dict[int, str] | RegistrySchemas) -> DataFrame:
    """Keys and values in the Confluent wire format as JSON text (``schemas``: registry id -> Avro schema text;
    ids missing from it are ``unknown_schema_id``)."""
    out_struct = _with_pre(records.schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decode = _decoder(schemas)
        for batch in batches:
            keys, values = batch.column("key").to_pylist(), batch.column("value").to_pylist()
            pre: dict[str, list[Any]] = {f.name: [None] * len(keys) for f in PRE_COLUMNS.fields}
            for i, (k, v) in enumerate(zip(keys, values, strict=True)):
                for role, data, out in (("key", k, keys), ("value", v, values)):
                    if data is None or data[:1] != MAGIC:
                        continue
                    text, error, message, sid = decode(data)
                    pre[f"{role}_schema_id"][i] = sid
                    if error is None:
                        out[i] = text
                    elif pre["pre_error"][i] is None or role == "value":
                        pre["pre_error"][i], pre["pre_detail"][i], pre["pre_message"][i] = error, role, message
            yield _rebuild(batch, keys, values, pre)

    return records.mapInArrow(run, out_struct)


def decode_avro_json(records: DataFrame) -> DataFrame:
    """Keys and values holding Avro-JSON text as the JSON converter's text (text that is not JSON is
    left for the decoder to report)."""
    out_struct = _with_pre(records.schema)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import orjson

        def convert(data: bytes | None) -> bytes | None:
            if data is None or data[:1] not in (b"{", b"["):
                return data
            try:
                return orjson.dumps(unwrap_avro_json(orjson.loads(data)))
            except orjson.JSONDecodeError:
                return data
            except TypeError:  # a number orjson cannot hold: keep the text as written
                return data

        for batch in batches:
            keys = [convert(k) for k in batch.column("key").to_pylist()]
            values = [convert(v) for v in batch.column("value").to_pylist()]
            pre = {f.name: [None] * len(keys) for f in PRE_COLUMNS.fields}
            yield _rebuild(batch, keys, values, pre)

    return records.mapInArrow(run, out_struct)


@dataclass
class AvroInput:
    records: DataFrame  # keys and values as JSON text, with the PRE_COLUMNS
    usage: list[dict[str, Any]] | None = None  # with a registry: schema ids per topic (schema_id_usage)
    schemas: dict[int, str] = field(default_factory=dict)  # the ids the registry knows


@lru_cache(maxsize=8)
def registry_client(settings: RegistrySettings) -> RegistryClient:
    """One client per registry and process: watch's micro-batches fetch each schema id once."""
    from cdc_monitor.avro.registry import RegistryClient

    return RegistryClient(settings)


class RegistrySchemas:
    """Schema texts by id, fetched from the registry where they are first needed (one client per
    process: each Python worker fetches an id once). For streams, where no pass can list the ids first."""

    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings

    def get(self, schema_id: int) -> str | None:
        return registry_client(self.settings).schema(schema_id)


def avro_stream_as_json(records: DataFrame, cfg: ScanConfig) -> DataFrame:
    """``avro_as_json`` for a stream, where no pass can list the schema ids first: with a schema
    registry, each id fetched where first met (``RegistrySchemas``); with ``avro_json``, Avro-JSON
    text unwrapped; otherwise the records as they are."""
    from cdc_monitor.avro.registry import RegistrySettings

    registry = RegistrySettings.from_conf(cfg.schema_registry)
    if registry is not None:
        return decode_wire_format(records, RegistrySchemas(registry))
    return decode_avro_json(records) if cfg.avro_json else records


def avro_as_json(records: DataFrame, cfg: ScanConfig, cache: FrameCache) -> AvroInput:
    """The records as the decoder reads them. With a schema registry one small job finds the schema
    ids the records name (the records are kept, so the input is read once), the driver fetches
    each id once, and keys and values are decoded in Arrow batches; with ``avro_json``, Avro-JSON
    text is unwrapped; otherwise the records are returned as they are."""
    from cdc_monitor.avro.registry import RegistrySettings

    settings = RegistrySettings.from_conf(cfg.schema_registry)
    if settings is not None:
        records = cache.keep(records)
        usage = schema_id_usage(records)
        client = registry_client(settings)
        ids = sorted({int(u[k]) for u in usage for k in ("key_id", "value_id") if u[k] is not None})
        schemas = {i: text for i in ids if (text := client.schema(i)) is not None}
        return AvroInput(decode_wire_format(records, schemas), usage, schemas)
    if cfg.avro_json:
        return AvroInput(decode_avro_json(records))
    return AvroInput(records)
