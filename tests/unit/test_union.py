"""A union of many frames matched by name: the
same rows and types as unionByName, columns matched by name. Its cost is measured in
benchmarks, not here."""

from __future__ import annotations

from pyspark.sql import functions as F

from cdc_monitor.engine.union import narrow_union, union_all


def frames(spark):
    base = spark.range(40).cache()
    out = [base.select((F.col("id") + i).alias("a"), F.col("id").cast("string").alias("b")) for i in range(12)]
    # another column order and a narrower type: matched by name, widened as unionByName widens
    out.append(spark.createDataFrame([("x", 7)], "b string, a int"))
    return out


def test_rows_and_types_are_unionbyname_s(spark):
    parts = frames(spark)
    chained = parts[0]
    for f in parts[1:]:
        chained = chained.unionByName(f)
    got = union_all(parts, ["a", "b"])
    assert got.schema == chained.schema
    assert sorted(got.collect()) == sorted(chained.collect())
    assert got.count() == 12 * 40 + 1
    assert union_all(parts[:1], ["b"]).columns == ["b"]  # one frame: its columns, selected


def test_narrow_union_keeps_rows_in_fewer_partitions(spark):
    parts = [spark.range(i * 10, i * 10 + 10, numPartitions=3) for i in range(5)]
    wide = union_all(parts)
    assert wide.rdd.getNumPartitions() == 15
    narrow = narrow_union(wide)
    assert narrow.rdd.getNumPartitions() == int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert sorted(narrow.collect()) == sorted(wide.collect())
