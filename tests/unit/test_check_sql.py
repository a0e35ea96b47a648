"""Checks written as SQL text (checks/sql.py): the finding contract's select-list, one statement
for several checks with their subqueries and parameters, on tiny hand-made frames."""

from __future__ import annotations

import pytest

from cdc_monitor.checks.findings import FINDING_COLUMNS, FINDING_SCHEMA, finding
from cdc_monitor.checks.ordering import DUPLICATE
from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame, lit, sql_over
from cdc_monitor.checks.stalls import CONNECTOR_STALLED


def test_literals_are_quoted_and_escaped(spark):
    text = "it's a \\ back'slash"
    assert spark.sql(f"SELECT {lit(text)} AS t, {lit(None)} AS n, {lit(True)} AS b, {lit(7)} AS i").first() == (
        text, None, True, 7)


def test_a_finding_in_sql_is_the_finding_the_dataframe_api_builds(spark):
    """The same rule and locations both ways: equal rows and types (typed nulls, the key's payload,
    offsets from the offset)."""
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([("t", 0, 5, '{"schema": {"type": "int32"}, "payload": 1004}', "s1"),
                                  ("t", 1, None, "plain", None)],
                                 "topic string, partition int, offset bigint, key string, server string")
    by_api = rows.select(*finding(DUPLICATE, F.concat(F.lit("at "), F.col("offset")), topic=F.col("topic"),
                                  partition=F.col("partition"), offset=F.col("offset"), key=F.col("key"),
                                  server=F.col("server")))
    by_sql = spark.sql(f"""SELECT {finding_sql(DUPLICATE, "concat('at ', offset)", topic="topic", partition="partition",
                                              offset="offset", key="key", server="server")} FROM {{rows}}""", rows=rows)
    assert by_sql.schema == by_api.schema and by_sql.columns == FINDING_COLUMNS
    assert sorted(by_sql.collect()) == sorted(by_api.collect())
    assert sorted(r["key"] for r in by_sql.collect()) == ["1004", "plain"]


def test_checks_of_one_scope_are_one_statement_with_their_subqueries_and_parameters(spark, caps):
    events = spark.createDataFrame([("a", 1), ("a", 5), ("b", 2)], "topic string, offset bigint")
    base = dict(topic="topic", offset="offset")
    first = SqlFindings(
        ctes=(("late", "SELECT * FROM {events} WHERE offset > :from_offset"),),
        args={"from_offset": 1},
        selects=(f"SELECT {finding_sql(DUPLICATE, lit('late'), **base)} FROM late",))
    second = SqlFindings(
        ctes=(("by_topic", "SELECT topic, max(offset) AS offset FROM {events} GROUP BY topic"),),
        args={"from_offset": 1},  # the same value under the same name: one parameter
        selects=(f"SELECT {finding_sql(CONNECTOR_STALLED, lit('last'), **base)} FROM by_topic WHERE offset >= :from_offset",))
    expected = [("connector_stalled", "a", 5), ("connector_stalled", "b", 2), ("duplicate", "a", 5), ("duplicate", "b", 2)]
    got = findings_frame([first, second], {"events": events}, caps)
    assert sorted((r["rule"], r["topic"], r["offset"]) for r in got.collect()) == expected
    clashing = SqlFindings(selects=second.selects, args={"from_offset": 3})
    with pytest.raises(AssertionError, match="from_offset"):
        findings_frame([first, clashing], {"events": events}, caps)
    empty = findings_frame([], {"events": events}, caps)
    assert empty.count() == 0 and empty.schema == spark.createDataFrame([], FINDING_SCHEMA).schema


def test_a_statement_over_frames_leaves_them_persisted_and_no_view_behind(spark, caps):
    """``sql_over``: PySpark's own ``spark.sql(text, frame=...)`` unpersists a persisted frame passed in
    (it drops its view through ``catalog.dropTempView``, which uncaches the view's plan)."""
    from pyspark import StorageLevel

    kept = spark.range(100).selectExpr("id", "id % 7 AS k").persist(StorageLevel.DISK_ONLY)
    try:
        kept.count()
        got = sql_over(caps, "SELECT k, count(1) AS n FROM {kept} WHERE id >= :lo GROUP BY k", {"kept": kept}, {"lo": 50})
        assert sum(r["n"] for r in got.collect()) == 50
        assert kept.storageLevel == StorageLevel.DISK_ONLY
        assert [t.name for t in spark.catalog.listTables() if t.name.startswith("cdc_")] == []
    finally:
        kept.unpersist()
