"""Generated traffic as a Debezium connector with Confluent's Avro converter writes it: keys and
values in the wire format, schemas registered in a Schema Registry under ``<topic>-key`` and
``<topic>-value`` (confluent-kafka's ``AvroSerializer``), or, for captures, the Avro-JSON text
``kcat -s avro`` prints. Wire-format faults (``Rec.wire_fault``) damage the serialized bytes."""

from __future__ import annotations

import io
import json
from typing import Any

from cdc_monitor.avro.schemas import connect_to_avro, to_avro_datum
from cdc_monitor.errors import EnvironmentProblem, InputError
from cdc_monitor.generator.records import Rec

UNKNOWN_SCHEMA_ID = 999_999
HEADER = 5


def _avro_text(connect_schema: dict[str, Any]) -> str:
    return json.dumps(connect_to_avro(connect_schema), separators=(",", ":"))


class AvroWireEncoder:
    """Keys and values in the Confluent wire format, registering schemas as the converter does."""

    def __init__(self, registry_url: str, registry_conf: dict[str, str] | None = None):
        try:
            from confluent_kafka.schema_registry import SchemaRegistryClient
        except ImportError as err:
            raise EnvironmentProblem(f"writing Avro needs confluent-kafka's schema registry client ({err}): "
                                     "pip install 'cdc-monitor[avro]'") from None
        conf = {"url": registry_url}
        if registry_conf and registry_conf.get("basic_auth_user_info"):
            conf["basic.auth.user.info"] = registry_conf["basic_auth_user_info"]
        self.client = SchemaRegistryClient(conf)
        self.url = registry_url
        self._serializers: dict[str, Any] = {}

    def _serialize(self, topic: str, role: str, schema: dict[str, Any], value: Any) -> bytes:
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        text = _avro_text(schema)
        ser = self._serializers.get(text)
        if ser is None:
            ser = self._serializers[text] = AvroSerializer(self.client, text, conf={"auto.register.schemas": True})
        field = MessageField.KEY if role == "key" else MessageField.VALUE
        try:
            return ser(to_avro_datum(schema, value), SerializationContext(topic, field))
        except Exception as err:
            if "Connect" in type(err).__name__ or "connect" in str(err).lower():
                raise InputError(f"schema registry at {self.url} is unreachable ({err}): check --schema-registry") from None
            raise

    def encode(self, rec: Rec) -> tuple[bytes | None, bytes | None]:
        key = None if rec.key is None else self._serialize(rec.topic, "key", rec.key_schema or {}, rec.key)
        value = None if rec.value is None else self._serialize(rec.topic, "value", rec.value_schema or {}, rec.value)
        if value is not None and rec.wire_fault is not None:
            value = damage(value, rec.wire_fault)
        return key, value


def damage(data: bytes, fault: str) -> bytes:
    """A wire-format value made undecodable (``truncated``, ``trailing``) or naming a schema id no
    registry knows (``unknown_id``)."""
    if fault == "truncated":
        return data[:HEADER + 2]
    if fault == "trailing":
        return data + b"\x02\x04"
    if fault == "unknown_id":
        return data[:1] + UNKNOWN_SCHEMA_ID.to_bytes(4, "big") + data[HEADER:]
    raise ValueError(fault)


def avro_json(connect_schema: dict[str, Any], value: Any) -> Any:
    """``value`` as the Avro spec's JSON encoding (unions wrapped), parsed: what kcat -s avro -J embeds."""
    import fastavro

    out = io.StringIO()
    schema = fastavro.parse_schema(connect_to_avro(connect_schema))
    fastavro.json_writer(out, schema, [to_avro_datum(connect_schema, value)])
    return json.loads(out.getvalue())
