"""A value or key is one JSON object, and only one: text after the first value, a bare scalar or
an array is invalid_json; a JSON object with a known field of the wrong kind is invalid_envelope
(decided by the decoder, cdc_monitor/java/Decoded.java, with Spark's JSON options)."""

import pytest

from cdc_monitor.decoding import decode_records
from cdc_monitor.vocabulary import DecodeError

JSON, ENVELOPE = DecodeError.JSON.value, DecodeError.ENVELOPE.value
CASES = [  # (value text, decode_error)
    ('{"a": 1}', None),
    ('  {"a": {"b": [1, 2]}}\n ', None),
    ("{'op': 'c'}", None),  # single quotes: Spark's JSON option, kept
    ('"a string"', JSON),
    ("[1, 2]", JSON),
    ("null", JSON),
    ('{"a": 1}{"b": 2}', JSON),
    ('{"a": 1}\t{"b": 2}', JSON),
    ('{"a": 1}^{"b": 2}', JSON),
    ('{"a": 1},{"b": 2}', JSON),
    ('{"a": 1}]', JSON),
    ('{"a": 1}] x', JSON),
    ('{"a": 1} x', JSON),
    ('{"a": 1,}', JSON),
    ('{"a": 01}', JSON),  # leading zeros: not JSON
    ("", JSON),
    ('{"source": "x", "op": "c"}', ENVELOPE),  # source must be an object
    ('{"payload": 5}', ENVELOPE),
    ('{"payload": {"transaction": []}}', ENVELOPE),
    ('{"data_collections": {"a": 1}}', ENVELOPE),
    ('{"payload": null, "op": "c"}', None),
]
KEYS = [('{"id": 1}', None), ('{"schema": {}, "payload": {"id": 1}}', None), ("1", JSON), ('{"id": 1} 2', JSON)]


@pytest.fixture(scope="module")
def verdicts(spark, caps):
    rows = [("t", None, v.encode()) for v, _ in CASES] + [("k", k.encode(), b'{"op": "c"}') for k, _ in KEYS]
    frame = spark.createDataFrame(rows, "topic string, key binary, value binary").selectExpr(
        "topic", "0 AS partition", "monotonically_increasing_id() AS offset", "key", "value",
        "current_timestamp() AS timestamp", "0 AS timestampType", "CAST(NULL AS array<struct<key:string,value:binary>>) AS headers")
    out = decode_records(frame, texts=True, session=caps).select(
        "topic", "key", "value_text", "decode_error", "decode_detail").collect()
    return {(r["topic"], r["key"] if r["topic"] == "k" else r["value_text"]): (r["decode_error"], r["decode_detail"])
            for r in out}


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_a_value_is_one_json_object(verdicts, text, expected):
    assert verdicts[("t", text)] == (expected, "value" if expected else None)


@pytest.mark.parametrize(("text", "expected"), KEYS)
def test_a_key_is_one_json_object(verdicts, text, expected):
    assert verdicts[("k", text)] == (expected, "key" if expected else None)


CANONICAL_KEYS = ['{"b": 1, "a": "x"}', '{"id":-0}', '{"id": 12345678901234567890, "ok": true, "n": null}',
                  '{"schema": {"type": "struct"}, "payload": {"z": 1, "y": 2}}', '{"id": 1.50}', '{"a": {"c": 1, "b": 2}}',
                  '{"s": "caf\\u00e9"}', '{"a": 1, "a": 2}', '{"payload": "abc", "schema": {}}', '{"payload": 5, "schema": {}}']


def test_keys_are_grouped_by_their_canonical_payload_as_spark_writes_it(spark, caps):
    """The decoder writes flat keys canonically itself (fields sorted, no whitespace); Spark's
    canonical_key writes the others: both give what Spark's alone gives."""
    from pyspark.sql import functions as F

    from cdc_monitor.decoding.events import canonical_key

    rows = [("t", k.encode(), b'{"op": "c"}') for k in CANONICAL_KEYS]
    frame = spark.createDataFrame(rows, "topic string, key binary, value binary").selectExpr(
        "topic", "0 AS partition", "monotonically_increasing_id() AS offset", "key", "value",
        "current_timestamp() AS timestamp", "0 AS timestampType", "CAST(NULL AS array<struct<key:string,value:binary>>) AS headers")
    payload = F.coalesce(F.get_json_object("key", "$.payload"), F.col("key"))
    got = decode_records(frame, session=caps).select("key", "key_payload", canonical_key(payload).alias("spark")).collect()
    assert len(got) == len(CANONICAL_KEYS)
    assert [(r["key"], r["key_payload"]) for r in got] == [(r["key"], r["spark"]) for r in got]
