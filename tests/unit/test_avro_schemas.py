"""Pure Avro parts, without Spark: Connect -> Avro schemas (round trip through fastavro), Avro-JSON
unwrapping, schema judgments, wire-format damage, the registry client's errors."""

from __future__ import annotations

import base64
import io
import json

import fastavro
import pytest

from cdc_monitor.avro.registry import RegistryClient, RegistrySettings
from cdc_monitor.avro.schemas import connect_to_avro, strip_logical_types, to_avro_datum, unwrap_avro_json
from cdc_monitor.checks.registry_schemas import avro_name, judge_schema
from cdc_monitor.errors import InputError, UsageError
from cdc_monitor.generator.avro_traffic import UNKNOWN_SCHEMA_ID, avro_json, damage
from cdc_monitor.generator.connect_schemas import MARKER_VALUE_SCHEMA, envelope_schema, key_schema
from cdc_monitor.generator.flavours import FLAVOURS, TABLES
from tests.registry_server import RegistryServer

PRODUCTS = next(t for t in TABLES if t.name == "products")
ROW = {"id": 7, "name": "n", "weight": 1.5, "quantity": 3, "price": base64.b64encode(b"\x01\x4e").decode()}
SOURCE = {"version": "2.7", "connector": "mysql", "name": "s", "ts_ms": 5, "snapshot": "false", "db": "inventory",
          "table": "products", "server_id": 1, "file": "f", "pos": 4, "row": 0}


def _value() -> dict:
    return {"before": None, "after": dict(ROW), "source": dict(SOURCE), "op": "c", "ts_ms": 6,
            "transaction": {"id": "t1", "total_order": 1, "data_collection_order": 1}}


def test_connect_envelope_becomes_debeziums_avro_schema_and_round_trips():
    connect = envelope_schema(FLAVOURS["mysql"], PRODUCTS)
    avsc = connect_to_avro(connect)
    assert avsc["name"] == "Envelope" and avsc["namespace"] == "mysql_server_1.inventory.products"
    fields = {f["name"]: f for f in avsc["fields"]}
    value = fields["before"]["type"][1]
    assert fields["before"]["type"][0] == "null" and fields["before"]["default"] is None
    assert fields["after"]["type"] == ["null", "mysql_server_1.inventory.products.Value"]  # named once, then referenced
    price = next(f for f in value["fields"] if f["name"] == "price")["type"]
    assert price["logicalType"] == "decimal" and price["scale"] == 2 and price["connect.name"].endswith("Decimal")
    quantity = next(f for f in value["fields"] if f["name"] == "quantity")["type"]
    assert quantity == {"type": "int", "connect.type": "int16"}
    parsed = fastavro.parse_schema(strip_logical_types(avsc))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, to_avro_datum(connect, _value()))
    back = fastavro.schemaless_reader(io.BytesIO(out.getvalue()), parsed, None)
    assert back["after"]["price"] == b"\x01\x4e" and back["source"]["gtid"] is None and back["op"] == "c"


def test_unnamed_structs_get_connect_default_names():
    avsc = connect_to_avro(MARKER_VALUE_SCHEMA)
    items = next(f for f in avsc["fields"] if f["name"] == "data_collections")["type"][1]["items"]
    assert items["name"] == "ConnectDefault" and items["namespace"] == "io.confluent.connect.avro"
    fastavro.parse_schema(avsc)


def test_avro_json_unwraps_to_the_json_converters_document():
    connect = envelope_schema(FLAVOURS["mysql"], PRODUCTS)
    wrapped = avro_json(connect, _value())
    assert wrapped["after"] == {"mysql_server_1.inventory.products.Value": {**ROW, "price": "\u0001N"}}
    assert wrapped["ts_ms"] == {"long": 6} and wrapped["source"]["snapshot"] == {"string": "false"}
    doc = unwrap_avro_json(wrapped)
    # a required bytes column is not wrapped: without the schema it cannot be told from a string
    assert doc["after"] == {**ROW, "price": "\u0001N"} and doc["ts_ms"] == 6 and doc["transaction"]["id"] == "t1"
    nullable = envelope_schema(FLAVOURS["postgresql"], PRODUCTS)  # optional columns: unions, bytes wrapped
    assert unwrap_avro_json(avro_json(nullable, _value()))["after"] == ROW
    assert unwrap_avro_json({"bytes": "\u00ff\u0000"}) == base64.b64encode(b"\xff\x00").decode()
    assert unwrap_avro_json({"id": 5, "name": {"string": "x"}}) == {"id": 5, "name": "x"}  # two members: a record
    assert unwrap_avro_json({"id": {"int": 5}}) == {"id": 5}


def test_schema_names_are_judged_as_debezium_adjusts_them():
    assert avro_name("my-server.inventory.2024orders") == "my_server.inventory._2024orders"
    key = json.dumps(connect_to_avro(key_schema(FLAVOURS["mysql"], PRODUCTS)))
    env = json.dumps(connect_to_avro(envelope_schema(FLAVOURS["mysql"], PRODUCTS)))
    topic = "mysql_server_1.inventory.products"
    assert judge_schema(topic, "key", key) == [] and judge_schema(topic, "value", env) == []
    assert [(r.name, m) for r, m in judge_schema("other.inventory.products", "value", env)] == [(
        "avro_schema_name", "value schema is named mysql_server_1.inventory.products.Envelope, Debezium names it "
        "other.inventory.products.Envelope")]
    marker = json.dumps(connect_to_avro(MARKER_VALUE_SCHEMA))
    assert judge_schema("mysql_server_1.transaction", "value", marker) == []  # Debezium's own schemas
    flat = json.dumps({"type": "record", "name": "Envelope", "namespace": topic, "fields": [{"name": "id", "type": "int"}]})
    assert [r.name for r, _ in judge_schema(topic, "value", flat)] == ["avro_envelope_fields"]


def test_wire_faults_damage_the_body_or_the_id():
    data = b"\x00\x00\x00\x00\x07" + b"\x02" * 20
    assert damage(data, "truncated") == data[:7]
    assert damage(data, "trailing").startswith(data) and len(damage(data, "trailing")) == len(data) + 2
    assert int.from_bytes(damage(data, "unknown_id")[1:5], "big") == UNKNOWN_SCHEMA_ID


def test_registry_client_fetches_each_id_once_and_says_what_is_unknown():
    with RegistryServer() as srv:
        sid = srv.registry.register("t-value", json.dumps({"type": "record", "name": "R", "fields": []}))
        client = RegistryClient(RegistrySettings(srv.url))
        client.check()
        assert json.loads(client.schema(sid))["name"] == "R"
        assert client.schema(sid) is not None and client.schema(4242) is None and client.schema(4242) is None
        fetched = [p for m, p, _ in srv.registry.requests if p.startswith("/schemas/ids/")]
        assert fetched == [f"/schemas/ids/{sid}", "/schemas/ids/4242"]
    with pytest.raises(InputError, match="is unreachable"):
        RegistryClient(RegistrySettings(srv.url)).check()
    with pytest.raises(UsageError, match="is not http"):
        RegistrySettings.from_conf({"url": "registry:8081"})


def test_registry_credentials_come_from_the_file_or_environment_and_are_never_shown(tmp_path):
    from cdc_monitor.config import load_config

    conf = tmp_path / "c.toml"
    conf.write_text('[schema_registry]\nurl = "https://sr.example:8081"\nbearer_token = "t0ken"\n')
    cfg = load_config(str(conf), env={})
    settings = RegistrySettings.from_conf(cfg.schema_registry)
    assert settings.headers()["Authorization"] == "Bearer t0ken" and "t0ken" not in repr(settings)
    env = {"CDC_MONITOR_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "u:p"}
    both = RegistrySettings.from_conf(load_config(str(conf), env=env).schema_registry)
    assert both.headers()["Authorization"] == "Basic " + base64.b64encode(b"u:p").decode()  # basic wins
    conf.write_text('[schema_registry]\nurl = "https://sr.example:8081"\npassword = "x"\n')
    with pytest.raises(UsageError, match="unknown \\[schema_registry\\] setting"):
        load_config(str(conf), env={})
