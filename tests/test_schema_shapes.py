"""Spark's spelling of shapes is what the pure parser reads (guards a Spark upgrade)."""

import json

from cdc_monitor.checks.variant_shape import parse_shape
from cdc_monitor.decoding.events import _payload_shapes


def test_spark_shapes_parse_with_quoted_names_and_dropped_decimal_precision(spark):
    payload = {"after": {"id": 1, "a b": 2.5, "c`d": [1, "x"], "e:f": {"value": 1.25}, "": None, "big": 10**20},
               "op": "c", "n": True}
    text = json.dumps({"schema": {}, "payload": payload})
    frame = spark.createDataFrame([(text, text, "{}", "{}", True)],
                                  "value_text string, key string, value_schema string, key_schema string, data_event boolean")
    row = _payload_shapes(frame).first()  # a value's payload parsed alone, a key parsed whole: one shape
    assert row["value_shape"] == row["key_shape"]
    text = row["value_shape"]
    assert "DECIMAL(" not in text
    shape = parse_shape(text)
    after = shape.fields["after"].fields
    assert {k: v.kind for k, v in after.items()} == {
        "id": "BIGINT", "a b": "DECIMAL", "c`d": "ARRAY", "e:f": "OBJECT", "": "VOID", "big": "DECIMAL"}
    assert after["e:f"].fields["value"].kind == "DECIMAL"
    assert shape.fields["n"].kind == "BOOLEAN" and shape.fields["op"].kind == "STRING"
