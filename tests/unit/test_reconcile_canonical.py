"""``reconcile``'s column functions on tiny hand-made frames: each side's value as canonical text."""

from __future__ import annotations

import base64
import random
from decimal import Decimal, localcontext

import pytest
from pyspark.sql import functions as F

from cdc_monitor.reconcile.canonical import UNAVAILABLE, plain_decimal, source_value, topic_value
from cdc_monitor.reconcile.dialects import ColumnKind as K


def b64(v: Decimal, scale: int) -> str:
    with localcontext(prec=80):
        u = int(v.scaleb(scale))
    return base64.b64encode(u.to_bytes(max(1, (u.bit_length() + 8) // 8), "big", signed=True)).decode()


def canonical(d: Decimal) -> str:
    text = format(d, "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


def test_base64_decimals_decode_exactly(spark):
    rng = random.Random(5)
    values = [Decimal(0), Decimal("-128"), Decimal("127"), Decimal("-0.001"), Decimal("12345678901234567890123456.1234")]
    values += [Decimal(rng.randint(-10**20, 10**20)).scaleb(-rng.randint(0, 10)) for _ in range(40)]
    rows = [(b64(v, 10), format(v, "f")) for v in values]  # the source's text: PostgreSQL's numeric::text
    df = spark.createDataFrame(rows, "b string, v string")
    got = df.select(topic_value(F.col("b"), K.DECIMAL, scale=10).alias("t"), source_value(F.col("v"), K.DECIMAL).alias("s"))
    for (t, s), v in zip(got.collect(), values, strict=True):
        assert t == s == canonical(v), v


@pytest.mark.parametrize(("value", "kind", "logical", "expected"), [
    ("1704164645123", K.TIMESTAMP, "io.debezium.time.Timestamp", "1704164645123000"),
    ("1704164645123456", K.TIMESTAMP, "io.debezium.time.MicroTimestamp", "1704164645123456"),
    ("1704164645123456789", K.TIMESTAMP, "io.debezium.time.NanoTimestamp", "1704164645123456"),
    ("1704164645123456", K.TIMESTAMP, None, "1704164645123456"),  # no schema: its size says µs
    ("1704164645123", K.TIMESTAMP, None, "1704164645123000"),  # ... or ms
    ("2024-01-02T01:04:05.123456+02:00", K.TIMESTAMPTZ, "io.debezium.time.ZonedTimestamp", "1704150245123456"),
    ("-31", K.DATE, "io.debezium.time.Date", "-31"),
    ("36672500000", K.TIME, "io.debezium.time.MicroTime", "36672500000"),
    ("36672500", K.TIME, "io.debezium.time.Time", "36672500000"),
    ('{"scale": 2, "value": "AMg="}', K.DECIMAL, "io.debezium.data.VariableScaleDecimal", "2"),
    ("1.2E3", K.DECIMAL, None, "1200"),
    ('{ "b": 1,  "a": [1, 2] }', K.JSON, "io.debezium.data.Json", '{"a":[1,2],"b":1}'),
    ('["__debezium_unavailable_value"]', K.ARRAY, None, UNAVAILABLE),
    ("__debezium_unavailable_value", K.TEXT, None, UNAVAILABLE),
    ("True", K.BOOLEAN, None, "true"),
])
def test_topic_values_by_debeziums_type_mapping(spark, value, kind, logical, expected):
    df = spark.createDataFrame([(value,)], "v string")
    assert df.select(topic_value(F.col("v"), kind, logical, scale=3).alias("c")).first()["c"] == expected


def test_plain_decimal_has_one_spelling_per_number(spark):
    texts = ["123.4500", "+5", "-0.000", "0007.10", ".5", "-.5", "10"]
    df = spark.createDataFrame([(t,) for t in texts], "t string")
    assert [r["c"] for r in df.select(plain_decimal(F.col("t")).alias("c")).collect()] == [
        "123.45", "5", "0", "7.1", "0.5", "-0.5", "10"]


def test_the_last_event_by_position_wins_and_a_truncate_removes_what_came_before(spark):
    from cdc_monitor.reconcile.topic_state import TopicTable, latest_state

    rows = [  # table, topic, kind, op, key, after, position, offset
        ("s.t", "p.s.t", "data", "c", '{"id":1}', '{"id":1,"v":"a"}', [10], 0),
        ("s.t", "p.s.t", "data", "u", '{"id":1}', '{"id":1,"v":"b"}', [30], 1),
        ("s.t", "p.s.t", "data", "u", '{"id":1}', '{"id":1,"v":"late"}', [20], 2),  # replayed out of order
        ("s.t", "p.s.t", "data", "c", '{"id":2}', '{"id":2,"v":"x"}', [11], 3),
        ("s.t", "p.s.t", "data", "d", '{"id":2}', None, [12], 4),
        (None, "p.s.t", "tombstone", None, '{"id":2}', None, None, 5),
        ("s.t", "p.s.t", "data", "c", '{"id":3}', '{"id":3,"v":"y"}', [13], 6),
        ("s.t", "p.s.t", "data", "t", None, None, [14], 7),
        ("s.t", "p.s.t", "data", "c", '{"id":4}', '{"id":4,"v":"z"}', [15], 8),
    ]
    df = spark.createDataFrame(
        [(t, topic, kind, kind == "data", op, key if key else "{}", after, pos, 0, off, {"txId": "1"})
         for t, topic, kind, op, key, after, pos, off in rows],
        "table string, topic string, kind string, data_event boolean, op string, key_payload string, after string, "
        "position array<bigint>, partition int, offset bigint, source struct<txId:string>")
    state = {r["key_payload"]: r for r in latest_state(df, {"s.t": TopicTable("s.t", ("p.s.t",), 9)}).collect()}
    assert state['{"id":1}']["after"] == '{"id":1,"v":"b"}' and not state['{"id":1}']["removed"]
    assert state['{"id":2}']["removed"] and state['{"id":3}']["removed"]  # deleted; truncated after its create
    assert not state['{"id":4}']["removed"]
