"""A pass's groups read as streams: how a judge of the operators jar is fed its groups.

A pass (docs/architecture.md, "The passes") groups the window's records by its partitioning (a key,
a transaction, a table) and hands each group to one Java judge. ``GroupPass`` declares the pass as
data: the SQL giving its records (the group columns, then the fields the judge's ``Rec`` reads), the
group, the order the judge reads a group in, and the judge. ``pass_frame`` feeds it one of two ways:

- **a classic session**: the records sorted within each group by Spark's external sort (it spills)
  and walked by the judge's ``stream`` (``java/Passes.java``: ``groupBy(...).as(...)
  .flatMapSortedGroups``, Spark's public Dataset API, reached through the session's JVM as watch's
  operator is), so memory does not grow with a group: a hot key, a large transaction or a table's
  initial snapshot are read as streams;
- **a Spark Connect session** (no JVM to reach): one aggregate collects each group's records
  (``collect_list``) and the judge's Java UDF sorts and walks them: a group is held in memory as an
  array there (docs/deploy.md says so).

Both run the same walk of the same judge: the feeding differs, never the rules. The output is a frame
of the group columns the pass keeps and the judge's findings (or facts), which the check's SQL reads
as a relation named ``name``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.sql import JavaFunction, register, sql_over

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps


@dataclass(frozen=True)
class GroupPass:
    """One pass: its records, its groups, its order, its judge (see the module)."""

    name: str  # the relation its output is to the check's SQL
    records: str  # SQL over the window's relations ({events}): the group columns, the Rec's fields, then parameters
    group: tuple[str, ...]  # the group columns (the first columns of ``records``)
    order: tuple[str, ...]  # a group's order (SQL sort expressions over ``records``)
    fields: tuple[str, ...]  # the Rec's fields, columns of ``records`` in the judge's order
    judge: JavaFunction  # the judge's UDF (Spark Connect) and class (its static ``stream``)
    keep: tuple[str, ...]  # the group columns its output keeps, before the judge's rows
    udf_args: tuple[str, ...] = ()  # the UDF's further arguments: SQL over a group's rows (aggregates, group columns)

    def output(self) -> str:
        """The stream's output schema (DDL): the kept columns, then the fields of one judged row."""
        element = self.judge.returns.removeprefix("array<").removesuffix(">")
        assert element.startswith("struct<"), f"{self.judge.name} must return an array of structs"
        keep = ",".join(f"`{c}`:string" for c in self.keep)
        return f"struct<{keep},{element.removeprefix('struct<')}"

    def frame(self, relations: Mapping[str, DataFrame], session: SessionCaps,
              args: Mapping[str, Any] | None = None) -> DataFrame:
        """The pass's output (``pass_frame``): the relation ``name`` a check's SQL reads (checks/sql.py)."""
        return pass_frame(self, relations, session, args)


def distribute_by(group: tuple[str, ...], several: bool) -> str:
    """The clause a pass's records end with before their SQL windows: in several partitions,
    distributed by the group (the windows and the stream then share one shuffle); in one, nothing
    (one partition needs no shuffle at all)."""
    return f"DISTRIBUTE BY {', '.join(f'`{g}`' for g in group)}" if several else ""


def pass_frame(spark_pass: GroupPass, relations: Mapping[str, DataFrame], session: SessionCaps,
               args: Mapping[str, Any] | None = None, streamed: bool | None = None) -> DataFrame:
    """The pass's output over ``relations`` (see the module; ``session``: the capabilities of their
    session): a sorted stream walked by the judge where the session's JVM is this process's (classic),
    the judge's UDF over collected groups on Spark Connect (``streamed``: either way, where the session allows it:
    tests/test_pass_feedings.py compares the two)."""
    p = spark_pass
    records = sql_over(session, p.records, relations, args)
    if streamed is None:
        streamed = session.jvm
    if not streamed:
        register(session, p.judge)
        keep = ", ".join(f"`{c}`" for c in p.keep)
        fields = ", ".join(f"`{f}`" for f in p.fields)
        call = ", ".join([f"collect_list(struct({fields}))", *p.udf_args])
        return sql_over(session, f"""SELECT {keep}, inline({p.judge.name}({call}))
                                   FROM {{records}} GROUP BY {', '.join(f'`{g}`' for g in p.group)}""",
                        {"records": records}, args)
    return _stream(records, p, session)


def _stream(records: DataFrame, p: GroupPass, session: SessionCaps) -> DataFrame:
    """``records`` walked by ``p``'s judge on the JVM (``<judge class>.stream``)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    judge = session.operator_class(p.judge.java_class)
    jdf = judge.stream(records._jdf, list(p.group), list(p.order), p.output())  # type: ignore[attr-defined]
    return ClassicFrame(jdf, records.sparkSession)
