"""A value or key is one JSON document: text after the first value makes it invalid_json."""

import pytest
from pyspark.sql import functions as F

from cdc_monitor.decoding.events import _one_document

CASES = [
    ('{"a": 1}', True),
    ('  {"a": {"b": [1, 2]}}\n ', True),
    ('"a string"', True),
    ("[1, 2]", True),
    ('{"a": 1}{"b": 2}', False),
    ('{"a": 1}\t{"b": 2}', False),
    ('{"a": 1}^{"b": 2}', False),
    ('{"a": 1},{"b": 2}', False),
    ('{"a": 1}]', False),
    ('{"a": 1}] x', False),
    ('{"a": 1} x', False),
    ('{"a": 1,}', False),
    ("", False),
]


@pytest.fixture(scope="module")
def verdicts(spark):
    frame = spark.createDataFrame([(t,) for t, _ in CASES], "t string")
    return {r["t"]: r["one"] for r in frame.select("t", _one_document(F.col("t")).alias("one")).collect()}


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_one_document(verdicts, text, expected):
    assert verdicts[text] is expected
