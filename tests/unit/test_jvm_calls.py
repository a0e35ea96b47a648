"""Column functions cost one py4j round trip each once their JVM member is known (the checks
rebuild the same functions every window and micro-batch)."""

from __future__ import annotations

import gc

from pyspark.sql import functions as F

from cdc_monitor.engine import jvm_calls


def expression():
    return F.when(F.col("id") == 1, F.lit("one")).otherwise(F.concat(F.lit("n"), F.col("id").cast("string")))


def test_a_column_function_is_one_round_trip_and_means_the_same(spark):
    jvm_calls.count_round_trips()
    expression()  # members looked up (first use in this process, or already)
    gc.collect()  # (earlier tests' JVM objects are released when collected: not while counting)
    gc.disable()
    try:
        before = jvm_calls.round_trips()
        built = expression()
        after = jvm_calls.round_trips()
    finally:
        gc.enable()
    # col, ==, lit, when, lit, col, cast, concat, otherwise: one call each (PySpark alone: the six
    # column functions cost three each, 21 in all)
    assert after - before <= 9
    assert [r[0] for r in spark.range(3).select(built).collect()] == ["n0", "one", "n2"]
