"""Pure schema logic, no Spark."""

from cdc_monitor.checks.connect_schema import compile_schema, invalid_avro_names

ENVELOPE = {
    "type": "struct",
    "name": "srv.db.t.Envelope",
    "fields": [
        {"type": "struct", "optional": True, "name": "srv.db.t.Value", "field": "after",
         "fields": [{"type": "int32", "optional": False, "field": "id"},
                    {"type": "string", "optional": True, "field": "email"}]},
        {"type": "struct", "optional": False, "name": "io.debezium.connector.mysql.Source", "field": "source",
         "fields": [{"type": "int64", "optional": False, "field": "pos"}]},
        {"type": "string", "optional": False, "field": "op"},
    ],
}


def test_compile_flattens_nested_structs_with_paths_and_optionality():
    checks = {c.dotted: c for c in compile_schema(ENVELOPE)}
    assert set(checks) == {"after", "after.id", "after.email", "source", "source.pos", "op"}
    assert checks["after.id"].type == "int32" and not checks["after.id"].optional and checks["after.id"].unwrap
    assert checks["after.email"].optional
    assert not checks["source.pos"].unwrap


def test_skip_makes_a_path_optional_but_keeps_its_type():
    checks = {c.dotted: c for c in compile_schema(ENVELOPE, skip=frozenset({"source.pos"}))}
    assert checks["source.pos"].optional and checks["source.pos"].type == "int64"


def test_seed_004_key_dialect():
    key = {"type": "struct", "name": "dbserver1.public.customers.Key", "optional": False,
           "fields": [{"name": "id", "index": "0", "schema": {"type": "INT32", "optional": "false"}}]}
    (check,) = compile_schema(key)
    assert (check.dotted, check.type, check.optional) == ("id", "int32", False)


def test_invalid_avro_names_finds_hyphens_anywhere():
    schema = dict(ENVELOPE, name="mysql-server-1.inventory.customers.Envelope")
    assert invalid_avro_names(schema) == ["mysql-server-1.inventory.customers.Envelope"]
    assert invalid_avro_names(ENVELOPE) == []


def test_decimal_bytes_allow_base64_text_and_numeric_json():
    schema = {"type": "struct", "fields": [
        {"type": "bytes", "optional": False, "name": "org.apache.kafka.connect.data.Decimal", "field": "price",
         "parameters": {"scale": "2"}},
        {"type": "bytes", "optional": False, "field": "blob"}]}
    checks = {c.dotted: c for c in compile_schema(schema)}
    assert {"STRING", "BIGINT", "DECIMAL", "DOUBLE"} <= set(checks["price"].allowed)
    assert checks["blob"].allowed == ("STRING",)


def test_narrow_integers_carry_their_range():
    schema = {"type": "struct", "fields": [{"type": t, "optional": False, "field": t} for t in
                                           ("int8", "int16", "int32", "int64")]}
    ranges = {c.dotted: c.int_range for c in compile_schema(schema)}
    assert ranges == {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2147483648, 2147483647),
                      "int64": None}
