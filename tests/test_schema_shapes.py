"""Spark's spelling of shapes is what the pure parser reads (guards a Spark upgrade)."""

import json

from cdc_monitor.checks.schema import _SHAPE_SQL, _payload_sql
from cdc_monitor.checks.variant_shape import parse_shape


def test_spark_shapes_parse_with_quoted_names_and_dropped_decimal_precision(spark):
    payload = {"after": {"id": 1, "a b": 2.5, "c`d": [1, "x"], "e:f": {"value": 1.25}, "": None, "big": 10**20},
               "op": "c", "n": True}
    frame = spark.createDataFrame([(json.dumps({"schema": {}, "payload": payload}),)], "value_text string")
    row = frame.selectExpr(*[f"{_SHAPE_SQL.replace('payload', _payload_sql('value_text', only))} AS {name}"
                             for name, only in (("a", True), ("b", False))]).first()
    assert row["a"] == row["b"]
    text = row["a"]
    assert "DECIMAL(" not in text
    shape = parse_shape(text)
    after = shape.fields["after"].fields
    assert {k: v.kind for k, v in after.items()} == {
        "id": "BIGINT", "a b": "DECIMAL", "c`d": "ARRAY", "e:f": "OBJECT", "": "VOID", "big": "DECIMAL"}
    assert after["e:f"].fields["value"].kind == "DECIMAL"
    assert shape.fields["n"].kind == "BOOLEAN" and shape.fields["op"].kind == "STRING"
