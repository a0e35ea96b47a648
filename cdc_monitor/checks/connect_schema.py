"""Pure Kafka Connect schema logic (no Spark): parse an embedded schema into field checks.

A schema becomes a flat list of ``FieldCheck``s, one per field path, each saying what JSON
types a conforming value may have and whether it may be null or absent. ``schema.py`` turns
them into Spark variant expressions. Tolerates the dialects seen in the seeds: the usual
``{"field","type","optional"}`` entries, and ``{"name","index","schema":{"type":"INT32",
"optional":"false"}}`` (seed 004's key).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

AVRO_FULLNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

INT_TYPES = ("int8", "int16", "int32", "int64")
ARRAY_ITEMS = "[]"  # a path step into an array's elements
# the range of each narrower integer type: a shape says BIGINT whatever the magnitude, so these
# are judged on the values (schema.py), beyond int64 a value's shape is DECIMAL
INT_RANGES: dict[str, tuple[int, int]] = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
                                          "int32": (-(2**31), 2**31 - 1)}
DECIMAL_LOGICAL = "org.apache.kafka.connect.data.Decimal"
# bytes with the Decimal logical type: base64 text by default, a JSON number with the
# JsonConverter's decimal.format=NUMERIC
DECIMAL_JSON_TYPES = ("STRING", "BIGINT", "DECIMAL", "DOUBLE")
# Connect type -> variant type names (schema_of_variant prefixes) a JSON value may have
JSON_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(INT_TYPES, ("BIGINT",)),  # a value beyond int64 is a DECIMAL
    "float32": ("BIGINT", "DECIMAL", "DOUBLE", "STRING"),  # the converter writes NaN/Infinity as strings
    "float64": ("BIGINT", "DECIMAL", "DOUBLE", "STRING"),
    "float": ("BIGINT", "DECIMAL", "DOUBLE", "STRING"),
    "double": ("BIGINT", "DECIMAL", "DOUBLE", "STRING"),
    "boolean": ("BOOLEAN",),
    "string": ("STRING",),
    "bytes": ("STRING",),
    "struct": ("OBJECT",),
    "map": ("OBJECT", "ARRAY"),
    "array": ("ARRAY",),
}


@dataclass(frozen=True)
class FieldCheck:
    path: tuple[str, ...]  # field names from the payload root
    type: str  # normalised Connect type
    optional: bool
    unwrap: bool = False  # value may be wrapped as {"value": x} (seed 004's row images)
    logical: str | None = None  # the Connect logical type name (for example ...data.Decimal)

    @property
    def dotted(self) -> str:
        return ".".join(self.path).replace("." + ARRAY_ITEMS, ARRAY_ITEMS)

    @property
    def allowed(self) -> tuple[str, ...]:
        if self.type == "bytes" and self.logical == DECIMAL_LOGICAL:
            return DECIMAL_JSON_TYPES
        return JSON_TYPES.get(self.type, ())

    @property
    def int_range(self) -> tuple[int, int] | None:
        """Judged per record on the value (schema.py): not inside arrays, whose elements a path cannot name."""
        return None if ARRAY_ITEMS in self.path else INT_RANGES.get(self.type)


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return default


def _entry(raw: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(field name, schema) of one ``fields`` entry in either dialect."""
    if "schema" in raw and isinstance(raw["schema"], dict) and "type" not in raw:
        return raw.get("field") or raw.get("name"), raw["schema"]
    return raw.get("field"), raw


def compile_schema(schema: dict[str, Any], *, skip: frozenset[str] = frozenset(),
                   unwrap_under: frozenset[str] = frozenset({"before", "after"}), unwrap_top: bool = False,
                   ) -> list[FieldCheck]:
    """Field checks for a payload described by ``schema`` (the root itself is not checked).

    Column values may be wrapped as ``{"value": x}`` (seed 004) in row images (``unwrap_under``)
    and, with ``unwrap_top``, in a key's top-level fields.
    ``skip``: dotted paths whose presence/null is judged by another rule (for example required
    ``source`` fields, judged by ``missing_source_field``); their type is still checked.
    """
    out: list[FieldCheck] = []

    def walk(s: dict[str, Any], path: tuple[str, ...]) -> None:
        for raw in s.get("fields") or []:
            if not isinstance(raw, dict):
                continue
            name, fs = _entry(raw)
            if not name or not isinstance(fs, dict):
                continue
            typ = str(fs.get("type", "")).lower()
            p = (*path, name)
            optional = _bool(fs.get("optional"), False) or ".".join(p) in skip
            wrapped = (path[0] in unwrap_under) if path else unwrap_top
            logical = fs.get("name") if isinstance(fs.get("name"), str) else None
            out.append(FieldCheck(p, typ, optional, unwrap=wrapped and typ != "struct", logical=logical))
            if typ == "struct":
                walk(fs, p)
            items = fs.get("items")
            if typ == "array" and isinstance(items, dict) and str(items.get("type", "")).lower() == "struct":
                walk(items, (*p, ARRAY_ITEMS))  # the fields of struct elements (MongoDB's truncatedArrays)

    walk(schema, ())
    return out


def schema_names(schema: dict[str, Any]) -> list[str]:
    """Every ``name`` in the schema tree (the root's, nested structs', logical types')."""
    names: list[str] = []

    def walk(s: Any) -> None:
        if isinstance(s, dict):
            if isinstance(s.get("name"), str) and ("type" in s or "fields" in s):
                names.append(s["name"])
            for key in ("fields", "items", "keys", "values", "schema"):
                v = s.get(key)
                if isinstance(v, list):
                    for x in v:
                        walk(x)
                elif isinstance(v, dict):
                    walk(v)

    walk(schema)
    return names


def invalid_avro_names(schema: dict[str, Any]) -> list[str]:
    return [n for n in schema_names(schema) if not AVRO_FULLNAME.match(n)]


def parse_schema(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
