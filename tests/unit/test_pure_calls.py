"""A column expression built again is the JVM object built the first time, with no round trip, and
means the same wherever it is used; calls that differ from call to call are never shared."""

from __future__ import annotations

import gc

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.engine import jvm_calls, pure_calls


def expression():
    w = Window.partitionBy("k").orderBy(F.col("id").desc())
    return F.struct(
        F.when(F.col("id") % 2 == 0, F.lit("even")).otherwise(F.concat(F.lit("odd "), F.col("id").cast("string"))).alias("parity"),
        F.row_number().over(w).alias("rank"),
    )


def _round_trips(action):
    gc.collect()  # (other tests' JVM objects are released when collected: not while counting)
    gc.disable()
    try:
        before = jvm_calls.round_trips()
        out = action()
        return out, jvm_calls.round_trips() - before
    finally:
        gc.enable()


def test_an_expression_built_again_costs_no_round_trip_and_means_the_same(spark):
    jvm_calls.count_round_trips()
    first, _ = _round_trips(expression)
    again, trips = _round_trips(expression)
    assert trips <= 2  # PySpark's Window looks its JVM class up on every call (partitionBy, orderBy)
    assert again._jc._target_id == first._jc._target_id
    # the shared column in two frames joined to each other (each use is its own expression)
    frame = spark.range(6).withColumn("k", F.col("id") % 3)
    left = frame.select("id", first.alias("s"))
    right = frame.select(F.col("id").alias("rid"), again.alias("t"))
    rows = sorted(left.join(right, F.col("id") == F.col("rid")).select("id", "s.parity", "s.rank", "t.rank").collect())
    assert [tuple(r) for r in rows] == [
        (0, "even", 2, 2), (1, "odd 1", 2, 2), (2, "even", 2, 2),
        (3, "odd 3", 1, 1), (4, "even", 1, 1), (5, "odd 5", 1, 1)]


def test_random_functions_and_list_arguments_are_built_each_time(spark):
    assert F.rand()._jc._target_id != F.rand()._jc._target_id  # a seed drawn per call
    values = spark.range(1).select(F.rand().alias("a"), F.rand().alias("b")).first()
    assert values["a"] != values["b"]
    # a Python list is converted afresh by py4j: never memoised (its content could differ); a
    # scalar is, by type and value (True is not 1)
    seqs = spark.sparkContext._jvm.cdcmonitor.Seqs
    assert seqs.of([1])._target_id != seqs.of([1])._target_id
    assert seqs.of(1, "a")._target_id == seqs.of(1, "a")._target_id
    assert (seqs.of(1).toString(), seqs.of(True).toString()) == ("List(1)", "List(true)")


def test_a_column_without_window_costs_nothing_the_second_time(spark):
    def build():
        return F.concat_ws("|", F.col("topic"), F.col("partition").cast("string")).alias("k") == F.lit("t|0")

    jvm_calls.count_round_trips()
    _round_trips(build)
    assert _round_trips(build)[1] == 0


def test_the_memo_starts_over_when_full(spark, monkeypatch):
    monkeypatch.setattr(pure_calls, "MAX_ENTRIES", 5)
    pure_calls.clear()
    for i in range(12):
        F.col("id") + i
        assert len(pure_calls._memo) <= 5
    assert [r[0] for r in spark.range(2).select(F.col("id") + 11).collect()] == [11, 12]
