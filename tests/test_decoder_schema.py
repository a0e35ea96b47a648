"""Each key and value against the Kafka Connect schema it carries (JsonConverter with schemas), as
the decoder judges it while it reads the record (cdc_monitor/java/ConnectSchema.java): hand-made
records, one decode for all. The schema dialects are Kafka's JsonConverter (``asConnectSchema``:
``{"type","optional","field","fields","name"}``) and seed 004's key (``{"name","index","schema"}``);
Decimal is ``org.apache.kafka.connect.data.Decimal`` bytes (base64 text, or a number with
``decimal.format=NUMERIC``)."""

from __future__ import annotations

import json

import pytest

from cdc_monitor.checks.schema import SCHEMA_RULES
from cdc_monitor.decoding import decode_records


def _struct(field: str | None, fields: list[dict], optional: bool = True, name: str | None = None) -> dict:
    out = {"type": "struct", "optional": optional, "fields": fields}
    if field:
        out["field"] = field
    if name:
        out["name"] = name
    return out


ROW = [{"field": "id", "type": "int32", "optional": False}, {"field": "note", "type": "string", "optional": True},
       {"field": "price", "type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal"},
       {"field": "blob", "type": "bytes", "optional": True},
       {"field": "items", "type": "array", "optional": True,
        "items": _struct(None, [{"field": "sku", "type": "string", "optional": False}], optional=False)}]
ENVELOPE = _struct(None, [_struct("before", ROW), _struct("after", ROW),
                          _struct("source", [{"field": "db", "type": "string", "optional": False}], optional=False),
                          {"field": "op", "type": "string", "optional": False}], optional=False, name="srv.db.t.Envelope")
SEED_004_KEY = {"type": "struct", "name": "dbserver1.public.customers.Key", "optional": False,
                "fields": [{"name": "id", "index": "0", "schema": {"type": "INT32", "optional": "false"}}]}
SRC = {"db": "d"}

CASES: dict[str, tuple[str, dict | None, dict, dict[str, str]]] = {  # name -> (topic, key, value, schema verdicts)
    "a conforming update": ("srv.db.t", None, {"schema": ENVELOPE, "payload": {
        "before": {"id": 1, "note": "x"}, "after": {"id": 1, "note": None, "price": "AQ==", "items": [{"sku": "a"}]},
        "op": "u", "source": SRC}}, {}),
    "null and absent fields under present parents (before null: not judged; op: op_missing's)": (
        "srv.db.t", None, {"schema": ENVELOPE, "payload": {"after": {"note": "x"}, "before": None, "source": {"db": None}}},
        {"non_optional_null": "value: non-optional field null or absent: after.id, source.db"}),
    "wrong JSON types, a wrapped value judged by what it wraps": (
        "srv.db.t", None, {"schema": ENVELOPE, "payload": {
            "after": {"id": {"value": "x"}, "note": 5, "blob": 7, "price": 1.25}, "op": "c", "source": SRC}},
        {"type_mismatch": "value: value does not match its schema type at after.id, after.note, after.blob"}),
    "an int32 beyond its width, alone and beside a type mismatch": (
        "srv.db.t", None, {"schema": ENVELOPE, "payload": {"after": {"id": 3000000000}, "op": "c", "source": SRC}},
        {"type_mismatch": "value: integer out of its type's range at after.id (int32) = 3000000000"}),
    "both": ("srv.db.t", None, {"schema": ENVELOPE, "payload": {
        "after": {"id": -3000000000, "note": 1}, "op": "c", "source": SRC}},
        {"type_mismatch": "value: value does not match its schema type at after.note; integer out of its type's range "
                          "at after.id (int32) = -3000000000"}),
    "one element of an array of structs without its required field": (
        "srv.db.t", None, {"schema": ENVELOPE, "payload": {
            "after": {"id": 1, "items": [{"sku": "a"}, {"sku": None}, {"sku": "c"}]}, "op": "c", "source": SRC}},
        {"non_optional_null": "value: non-optional field null or absent: after.items[].sku"}),
    "a schema name that is no Avro full name": (
        "srv.db.t", None, {"schema": dict(ENVELOPE, name="mysql-server-1.inventory.customers.Envelope"),
                           "payload": {"after": {"id": 1}, "op": "c", "source": SRC}},
        {"invalid_avro_name": "value schema name(s) not valid Avro full names: mysql-server-1.inventory.customers.Envelope"}),
    "seed 004's key dialect, named after its topic": (
        "dbserver1.public.customers", {"schema": SEED_004_KEY, "payload": {"id": "x"}},
        {"op": "c", "after": {"id": 1}, "source": SRC}, {"type_mismatch": "key: value does not match its schema type at id"}),
    "a key schema named after another topic": (
        "other.public.customers", {"schema": SEED_004_KEY, "payload": {"id": 1}}, {"op": "c", "after": {"id": 1}, "source": SRC},
        {"key_schema_name_mismatch": "key schema name does not match the topic: dbserver1.public.customers.Key"}),
}


@pytest.fixture(scope="module")
def verdicts(spark, caps):
    rows = [(topic, json.dumps(key) if key else None, json.dumps(value), name)
            for name, (topic, key, value, _) in CASES.items()]
    frame = spark.createDataFrame(rows, "topic string, key string, value string, name string").selectExpr(
        "topic", "0 AS partition", "monotonically_increasing_id() AS offset", "CAST(key AS binary) AS key",
        "CAST(value AS binary) AS value", "current_timestamp() AS timestamp", "0 AS timestampType",
        "CAST(NULL AS array<struct<key:string,value:binary>>) AS headers", "name")
    schema_rules = {r.name for r in SCHEMA_RULES}
    out = decode_records(frame, keep=("name",), session=caps).select("name", "decode_error", "verdicts").collect()
    assert all(r["decode_error"] is None for r in out)
    return {r["name"]: {v["rule"]: v["message"] for v in r["verdicts"] or [] if v["rule"] in schema_rules} for r in out}


@pytest.mark.parametrize("name", CASES)
def test_a_payload_against_its_embedded_schema(verdicts, name):
    assert verdicts[name] == CASES[name][3]
