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
    fields = [
        row_schema(flavour, table, "before"),
        row_schema(flavour, table, "after"),
        flavour.source_schema(),
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
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
