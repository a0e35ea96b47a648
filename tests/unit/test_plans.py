"""A plan built once and run again over other checkpoints and facts (engine/plans.py): the same
rows as the plan built for them, a self-join's two readings of one checkpoint kept apart,
persisted frames persisted again, and a shape missing from the key caught in verify mode."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.facts import fact_lookup, fact_text
from cdc_monitor.engine.plans import PlanMismatch, PlanTemplates


def checkpoint(spark, rows):
    return spark.createDataFrame(rows, "k string, v bigint").localCheckpoint()


def build_for(events, limits, cache, calls):
    """Rows over a limit per key (a fact), joined with the same checkpoint read again."""

    def build():
        calls.append(1)
        over = events.where(F.col("v") > fact_lookup("limit", limits, F.col("k"), "bigint", F.lit(0)))
        over = cache.keep(over)
        totals = events.groupBy("k").agg(F.sum("v").alias("total"))  # the checkpoint read a second time
        out = over.join(totals, "k").union(over.join(totals, "k").where("v > 100"))
        return out, {"columns": out.columns}

    return build


BATCHES = [
    ([("a", 1), ("a", 5), ("b", 7)], {"a": 2}),
    ([("a", 3), ("b", 1), ("b", 9), ("c", 200)], {"a": 10, "b": 2}),
    ([("c", 150), ("c", 1)], {}),
]


@pytest.mark.parametrize("mode", ["on", "verify"])
def test_reused_plan_gives_the_rows_of_a_plan_built_for_the_batch(spark, mode):
    plans = PlanTemplates(mode=mode)
    calls: list[int] = []
    for i, (rows, limits) in enumerate(BATCHES):
        cache = FrameCache()
        events = checkpoint(spark, rows)
        got, meta = plans.frame("shape", [events], {"limit": fact_text("limit", limits)},
                                build_for(events, limits, cache, calls), cache)
        expected, _ = build_for(events, limits, FrameCache(), [])()
        assert sorted(got.collect()) == sorted(expected.collect())
        assert meta == {"columns": ["k", "v", "total"]}
        # built: its frame kept through the cache; reused: the same frame over the new leaves persisted
        # (and verify's own build keeps one more)
        rebuilt = i == 0 or mode == "verify"
        assert len(cache.kept) == int(rebuilt)
        assert len(cache._frames) == (1 if i == 0 else 1 + int(rebuilt))
        cache.release()
    assert plans.built == 1 and plans.reused == 2
    assert len(calls) == (1 if mode == "on" else 3)  # verify builds each batch's plan again to compare


def test_off_builds_every_plan(spark):
    plans = PlanTemplates(mode="off")
    calls: list[int] = []
    for rows, limits in BATCHES:
        events = checkpoint(spark, rows)
        plans.frame("shape", [events], {"limit": fact_text("limit", limits)}, build_for(events, limits, FrameCache(), calls),
                    FrameCache())
    assert len(calls) == 3 and plans.reused == 0


def test_a_shape_missing_from_the_key_is_caught_in_verify_mode(spark):
    plans = PlanTemplates(mode="verify")
    for rows, _ in BATCHES[:2]:
        events = checkpoint(spark, rows)
        # the plan depends on the batch's size, which the key does not say
        threshold = len(rows)

        def build(events=events, threshold=threshold):
            frame = events.where(F.col("v") > threshold)
            return frame, None

        if rows is BATCHES[0][0]:
            plans.frame("shape", [events], {}, build, FrameCache())
        else:
            with pytest.raises(PlanMismatch):
                plans.frame("shape", [events], {}, build, FrameCache())


def test_a_template_that_fails_gives_way_to_building_every_plan(spark):
    """A leaf the template cannot take (here not a checkpoint; in the field a Spark whose internals
    it does not know): the plan is built, and from then on every plan; verify mode fails instead."""
    events = checkpoint(spark, BATCHES[0][0])
    other = spark.range(3).withColumnRenamed("id", "v")
    for mode in ("on", "verify"):
        plans = PlanTemplates(mode=mode)
        plans.frame("shape", [events], {}, lambda: (events.where("v > 1"), None), FrameCache())
        if mode == "verify":
            with pytest.raises(Exception, match="not a checkpoint"):
                plans.frame("shape", [other], {}, lambda: (other.where("v > 1"), None), FrameCache())
            continue
        frame, _ = plans.frame("shape", [other], {}, lambda: (other.where("v > 1"), None), FrameCache())
        assert sorted(frame.collect()) == [(2,)]
        assert plans.given_up and plans.reused == 0 and "not a checkpoint" in plans.why
        plans.frame("shape", [events], {}, lambda: (events.where("v > 1"), None), FrameCache())
        assert (plans.built, plans.reused) == (3, 0)


def test_leaves_with_other_columns_get_their_own_plan(spark):
    plans = PlanTemplates(mode="verify")
    narrow = checkpoint(spark, BATCHES[0][0])
    wide = spark.createDataFrame([("a", 1, "x")], "k string, v bigint, w string").localCheckpoint()
    nullable = spark.createDataFrame([("a", None)], "k string, v bigint").localCheckpoint()
    for events in (narrow, wide, nullable, checkpoint(spark, BATCHES[1][0])):
        frame, _ = plans.frame("shape", [events], {}, lambda events=events: (events.where("v > 1"), None), FrameCache())
        assert frame.columns == events.columns
    assert (plans.built, plans.reused) == (2, 2)  # a null value is no other column: the last two reuse the first


def test_a_leaf_with_other_partitions_is_planned_as_it_is(spark):
    """Built over rows in one partition (which needs no shuffle for an aggregate), reused over rows
    in three: the aggregate still shuffles them."""
    plans = PlanTemplates(mode="on")
    rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
    for parts in (1, 3):
        events = spark.createDataFrame(rows, "k string, v bigint").repartition(parts).localCheckpoint()
        assert events.rdd.getNumPartitions() == parts
        frame, _ = plans.frame("shape", [events], {}, lambda events=events: (
            events.groupBy("k").agg(F.sum("v").alias("total")), None), FrameCache())
        assert sorted(frame.collect()) == [("a", 10), ("b", 7), ("c", 4)]
    assert plans.reused == 1
