"""Pure (no Spark): Kafka Connect schemas as Avro schemas, as Confluent's ``AvroData`` writes them
for a connector using the Avro converter, and data the JSON converter would write as Avro datums.

* struct -> record (name split into namespace and name; ``connect.name`` kept), optional -> a
  union with null and ``"default": null`` (a non-null default puts its type first);
* int8/int16 -> int with ``connect.type``, int32 -> int, int64 -> long, float32 -> float,
  float64 -> double, bytes, string, boolean, array, map (string keys);
* named logical types keep ``connect.name``/``connect.version``/``connect.parameters``;
  Connect's Decimal is ``bytes`` with ``logicalType: decimal``, precision and scale;
* a named type used twice (``before``/``after`` share ``<topic>.Value``) is referenced by its
  full name the second time; unnamed structs are ``io.confluent.connect.avro.ConnectDefault<n>``.
"""

from __future__ import annotations

import base64
from typing import Any

DECIMAL = "org.apache.kafka.connect.data.Decimal"
PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float32": "float", "float": "float",
              "float64": "double", "double": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}


def connect_to_avro(schema: dict[str, Any]) -> dict[str, Any] | str | list[Any]:
    """The Avro schema (JSON-ready) of a Connect schema."""
    return _Converter().convert(schema, top=True)


class _Converter:
    def __init__(self) -> None:
        self.named: set[str] = set()
        self.defaults = 0

    def convert(self, s: dict[str, Any], top: bool = False) -> Any:
        body = self._body(s)
        if s.get("optional") and not top:
            default = s.get("default")
            return [body, "null"] if default is not None else ["null", body]
        return body

    def _body(self, s: dict[str, Any]) -> Any:
        t = s["type"]
        name = s.get("name")
        if t == "struct":
            full = name or self._default_name()
            if full in self.named:
                return full
            self.named.add(full)
            namespace, _, short = full.rpartition(".")
            record: dict[str, Any] = {"type": "record", "name": short, "fields": [self._field(f) for f in s["fields"]]}
            if namespace:
                record["namespace"] = namespace
            if name:
                record["connect.name"] = name
            return record
        if t == "array":
            return {"type": "array", "items": self.convert(s["items"])}
        if t == "map":
            return {"type": "map", "values": self.convert(s["values"])}
        if t not in PRIMITIVES:
            raise ValueError(f"Connect type {t!r} has no Avro equivalent")
        out: dict[str, Any] = {"type": PRIMITIVES[t]}
        if t in ("int8", "int16"):
            out["connect.type"] = t
        if name:
            if s.get("version") is not None:
                out["connect.version"] = s["version"]
            if s.get("parameters"):
                out["connect.parameters"] = dict(s["parameters"])
            out["connect.name"] = name
        if name == DECIMAL:
            params = s.get("parameters") or {}
            out |= {"logicalType": "decimal", "scale": int(params.get("scale", 0)),
                    "precision": int(params.get("connect.decimal.precision", 64))}
        return out if len(out) > 1 else out["type"]

    def _field(self, f: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": f["field"], "type": self.convert(f)}
        if f.get("optional"):
            out["default"] = f.get("default")
        elif f.get("default") is not None:
            out["default"] = f["default"]
        return out

    def _default_name(self) -> str:
        self.defaults += 1
        return "io.confluent.connect.avro.ConnectDefault" + (str(self.defaults) if self.defaults > 1 else "")


def to_avro_datum(schema: dict[str, Any], value: Any) -> Any:
    """A value as the JSON converter writes it (base64 Decimals, numbers, objects) as the Avro
    converter would write it (bytes). Fields the schema does not name are dropped."""
    if value is None:
        return None
    t = schema["type"]
    if t == "struct":
        return {f["field"]: to_avro_datum(f, value.get(f["field"])) for f in schema["fields"]}
    if t == "array":
        return [to_avro_datum(schema["items"], v) for v in value]
    if t == "map":
        return {k: to_avro_datum(schema["values"], v) for k, v in value.items()}
    if t == "bytes" and isinstance(value, str):
        return base64.b64decode(value)
    if t in ("float32", "float64", "float", "double") and isinstance(value, int):
        return float(value)
    return value


# --- Avro-JSON text (the Avro spec's JSON encoding) -> the JSON converter's text -------------------------
# a union branch's name -> the JSON type of its value (a named type's branch is its dotted full name: an
# object, or a string for an enum or fixed); the decoder recognises Avro-JSON by them (decoding/decoder.py)
AVRO_BRANCH_JSON = {"boolean": "boolean", "int": "integer", "long": "integer", "float": "number", "double": "number",
                    "bytes": "string", "string": "string", "array": "array", "map": "object"}
AVRO_BRANCHES = frozenset(AVRO_BRANCH_JSON)


def unwrap_avro_json(doc: Any) -> Any:
    """Avro-JSON as ``kafka-avro-console-consumer`` or ``kcat -s avro`` print it, as Debezium's JSON
    converter (schemas off) would have written the same data: a union's value is wrapped in a
    one-member object named by its branch (``{"string": "x"}``, ``{"long": 5}``,
    ``{"<topic>.Value": {...}}``), and bytes are text with one character per byte (written as
    base64 here, as the JSON converter does). A branch is a primitive type name or a dotted full
    name (a field name can hold no dot), so without the schema a one-field record whose field is
    called ``string`` or ``long`` would be unwrapped too: Debezium's records never are."""
    if isinstance(doc, dict):
        if len(doc) == 1:
            (branch, inner), = doc.items()
            if branch == "bytes" and isinstance(inner, str):
                return _latin1_base64(inner)
            if branch in AVRO_BRANCHES or "." in branch:
                return unwrap_avro_json(inner)
        return {k: unwrap_avro_json(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [unwrap_avro_json(v) for v in doc]
    return doc


def _latin1_base64(text: str) -> str:
    try:
        return base64.b64encode(text.encode("latin-1")).decode("ascii")
    except UnicodeEncodeError:  # not Avro-JSON bytes after all: keep the text
        return text


def strip_logical_types(schema: Any) -> Any:
    """The schema without ``logicalType`` annotations: fastavro then returns a Decimal's bytes and a
    timestamp's number as written (what the JSON converter writes), not Python objects."""
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [strip_logical_types(v) for v in schema]
    return schema
