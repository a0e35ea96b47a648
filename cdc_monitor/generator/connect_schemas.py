"""Kafka Connect schemas for generated keys, values and transaction markers."""

from __future__ import annotations

from typing import Any

from cdc_monitor.generator.flavours import Flavour, TableDef

DECIMAL = "org.apache.kafka.connect.data.Decimal"
DECIMAL_SCALE = 2


def _column_schema(flavour: Flavour, col: Any, field: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"type": col.type, "optional": (not col.key) and flavour.nullable_columns}
    if col.logical:
        s["name"] = col.logical
        s["version"] = 1
    if col.logical == DECIMAL:
        s["parameters"] = {"scale": str(DECIMAL_SCALE), "connect.decimal.precision": "10"}
    s["field"] = field or flavour.ident(col.name)
    return s


JSON_NAME = "io.debezium.data.Json"
UPDATE_DESCRIPTION = {
    "type": "struct", "optional": True, "name": "io.debezium.connector.mongodb.changestream.updatedescription",
    "version": 1, "field": "updateDescription", "fields": [
        {"type": "array", "items": {"type": "string", "optional": False}, "optional": True, "field": "removedFields"},
        {"type": "string", "optional": True, "name": JSON_NAME, "version": 1, "field": "updatedFields"},
        {"type": "array", "optional": True, "field": "truncatedArrays", "items": {
            "type": "struct", "optional": False, "name": "io.debezium.connector.mongodb.changestream.truncatedarray",
            "version": 1, "fields": [{"type": "string", "optional": False, "field": "field"},
                                     {"type": "int32", "optional": False, "field": "size"}]}},
    ],
}


def row_schema(flavour: Flavour, table: TableDef, field: str) -> dict[str, Any]:
    if flavour.documents:  # MongoDB: the document as JSON text
        return {"type": "string", "optional": True, "name": JSON_NAME, "version": 1, "field": field}
    return {
        "type": "struct",
        "fields": [_column_schema(flavour, c) for c in table.columns],
        "optional": True,
        "name": f"{flavour.topic(table.name)}.Value",
        "field": field,
    }


def key_schema(flavour: Flavour, table: TableDef, name: str | None = None) -> dict[str, Any]:
    key_fields = ([{"type": "string", "optional": False, "field": "id"}] if flavour.documents
                  else [_column_schema(flavour, c) for c in table.columns if c.key])
    return {
        "type": "struct",
        "fields": key_fields,
        "optional": False,
        "name": name or f"{flavour.topic(table.name)}.Key",
    }


TRANSACTION_BLOCK = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
}


def envelope_schema(flavour: Flavour, table: TableDef, name: str | None = None) -> dict[str, Any]:
    times = [{"type": "int64", "optional": True, "field": "ts_ms"}]
    if flavour.v3:  # Debezium 3.x: transaction before op, the processing time in us and ns too; version 2
        fields = [row_schema(flavour, table, "before"), row_schema(flavour, table, "after"), flavour.source_schema(),
                  TRANSACTION_BLOCK, {"type": "string", "optional": False, "field": "op"}, *times,
                  {"type": "int64", "optional": True, "field": "ts_us"},
                  {"type": "int64", "optional": True, "field": "ts_ns"}]
        return {"type": "struct", "fields": fields, "optional": False,
                "name": name or f"{flavour.topic(table.name)}.Envelope", "version": 2}
    fields = [
        row_schema(flavour, table, "before"),
        row_schema(flavour, table, "after"),
        flavour.source_schema(),
        {"type": "string", "optional": False, "field": "op"},
        *times,
    ]
    if flavour.documents:
        fields.append(UPDATE_DESCRIPTION)
    if flavour.name != "dtle":
        fields.append(TRANSACTION_BLOCK)
    return {"type": "struct", "fields": fields, "optional": False,
            "name": name or f"{flavour.topic(table.name)}.Envelope", "version": 1}


# Debezium's heartbeat records (topic __debezium-heartbeat.<prefix>)
HEARTBEAT_KEY_SCHEMA = {
    "type": "struct", "fields": [{"type": "string", "optional": False, "field": "serverName"}],
    "optional": False, "name": "io.debezium.connector.common.ServerNameKey",
}
HEARTBEAT_VALUE_SCHEMA = {
    "type": "struct", "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
    "optional": False, "name": "io.debezium.connector.common.Heartbeat",
}
MARKER_KEY_SCHEMA = {
    "type": "struct",
    "fields": [{"type": "string", "optional": False, "field": "id"}],
    "optional": False,
    "name": "io.debezium.connector.common.TransactionMetadataKey",
}

MARKER_VALUE_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "status"},
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": True, "field": "event_count"},
        {
            "type": "array",
            "items": {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": False, "field": "data_collection"},
                    {"type": "int64", "optional": False, "field": "event_count"},
                ],
                "optional": False,
            },
            "optional": True,
            "field": "data_collections",
        },
        {"type": "int64", "optional": False, "field": "ts_ms"},
    ],
    "optional": False,
    "name": "io.debezium.connector.common.TransactionMetadataValue",
}


def _v3(schema: dict[str, Any]) -> dict[str, Any]:
    """A common schema as Debezium 3.x writes it: versioned."""
    return {**schema, "version": 1}


# Debezium 3.x: the marker's and heartbeat's schemas are versioned, a data_collections entry is an
# optional struct named event.collection
MARKER_SCHEMAS_V3 = (_v3(MARKER_KEY_SCHEMA), _v3({**MARKER_VALUE_SCHEMA, "fields": [
    *MARKER_VALUE_SCHEMA["fields"][:3],
    {**MARKER_VALUE_SCHEMA["fields"][3], "items": {**MARKER_VALUE_SCHEMA["fields"][3]["items"], "optional": True,
                                                   "name": "event.collection", "version": 1}},
    MARKER_VALUE_SCHEMA["fields"][4]]}))
HEARTBEAT_SCHEMAS_V3 = (_v3(HEARTBEAT_KEY_SCHEMA), _v3(HEARTBEAT_VALUE_SCHEMA))


def marker_schemas(flavour: Flavour) -> tuple[dict[str, Any], dict[str, Any]]:
    """The transaction marker's key and value schemas."""
    return MARKER_SCHEMAS_V3 if flavour.v3 else (MARKER_KEY_SCHEMA, MARKER_VALUE_SCHEMA)


def heartbeat_schemas(flavour: Flavour) -> tuple[dict[str, Any], dict[str, Any]]:
    """The heartbeat's key and value schemas."""
    return HEARTBEAT_SCHEMAS_V3 if flavour.v3 else (HEARTBEAT_KEY_SCHEMA, HEARTBEAT_VALUE_SCHEMA)
