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


def _imports_during(action):
    """Module names imported (or looked up by an import statement) while ``action`` runs."""
    import builtins

    names, original = [], builtins.__import__

    def spy(name, *args, **kwargs):
        names.append(name)
        return original(name, *args, **kwargs)

    builtins.__import__ = spy
    try:
        result = action()
    finally:
        builtins.__import__ = original
    return names, result


def test_literals_and_jvm_calls_do_not_import_pyspark_testing_and_so_pandas(spark):
    # PySpark's lit and its py4j numpy converters start with `from pyspark.testing.utils import
    # have_numpy`, whose first import loads pandas (0.28 s of a cold scan's start)
    jvm_calls.numpy_converters_on_demand()
    names, frame = _imports_during(lambda: spark.range(2).select(
        (F.col("id") >= 0) & (F.col("id") < 5),  # Column & Column: lit(Column)
        F.lit([1, 2]).alias("list"), F.lit([]).cast("array<string>").alias("empty"), F.lit(F.col("id")).alias("same")))
    assert "pyspark.testing.utils" not in names
    assert [tuple(r)[1:] for r in frame.collect()] == [([1, 2], [], 0), ([1, 2], [], 1)]


def test_numpy_values_still_convert_for_jvm_calls(spark):
    import numpy as np

    jvm_calls.numpy_converters_on_demand()
    names, text = _imports_during(lambda: spark._jvm.java.lang.String.valueOf("x"))
    assert "pyspark.testing.utils" not in names and text == "x"
    assert spark._jvm.java.lang.String.valueOf(np.int64(5)) == "5"
    assert spark._jvm.java.util.Arrays.toString(np.array([1, 2])) == "[1, 2]"


def test_lists_reach_the_jvm_in_one_call_and_the_same_without_the_operator_jar(spark, monkeypatch):
    """Up to 32 values go through ``cdcmonitor.Seqs.of`` (one round trip); a JVM without the jar
    (Spark started elsewhere) falls back to PySpark's list conversion with the same result."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    assert jvm_calls._seqs_of(sc) is not None  # the session has the operator jar
    jvm_calls.count_round_trips()
    names = [f"c{i}" for i in range(12)]
    gc.collect()
    gc.disable()
    try:
        before = jvm_calls.round_trips()
        seq = jvm_calls._cached_to_seq(sc, names)
        one_call = jvm_calls.round_trips() - before
    finally:
        gc.enable()
    assert one_call <= 1 and seq.length() == 12  # (py4j alone: a call per element and two more)

    def rows():
        frame = spark.range(2).select(*[(F.col("id") + i).alias(n) for i, n in enumerate(names)])
        return [tuple(r) for r in frame.select(F.struct(*names).alias("s")).select("s.*").collect()]

    with_jar = rows()
    monkeypatch.setitem(jvm_calls._seqs, id(sc._gateway), None)
    assert rows() == with_jar == [tuple(range(12)), tuple(range(1, 13))]
