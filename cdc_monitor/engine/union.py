"""Unions of many frames, planned once.

``a.unionByName(b)`` is a new DataFrame whose whole plan Spark analyzes again (renaming the
attributes of every relation both sides share: the checks all read the same cached events). The
findings of a scan are a union of ~17 frames, so a chain of binary unions re-analyzed a growing
plan 17 times: 24 unions cost 1.5-1.65 s of a warm 8.4-9.2 s scan of a 400-event capture
(measured on 2 cores). ``union_all`` builds one n-ary ``Union`` of all of them, analyzed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def union_all(frames: Sequence[DataFrame], columns: Sequence[str] | None = None) -> DataFrame:
    """The rows of every frame (``columns``, by name, in that order; default the first frame's),
    as ``unionByName`` would give them (types widened as it widens them)."""
    if not frames:
        raise ValueError("union_all needs at least one frame")
    names = list(columns if columns is not None else frames[0].columns)
    aligned = [f.select(*names) if f.columns != names else f for f in frames]
    if len(aligned) == 1:
        return aligned[0]
    spark = aligned[0].sparkSession
    if all(hasattr(f, "_jdf") for f in aligned):  # classic PySpark: one plan node, one analysis
        from py4j.protocol import Py4JError

        first = [(f.name, f.dataType) for f in aligned[0].schema.fields]
        same = all([(f.name, f.dataType) for f in frame.schema.fields] == first for frame in aligned[1:])
        try:
            return _nary(spark, aligned, same)
        except (Py4JError, ImportError, AttributeError):  # a Spark without these internals: the chain below
            pass
    out = aligned[0]
    for frame in aligned[1:]:
        out = out.unionByName(frame)
    return out


def _nary(spark, frames: Sequence[DataFrame], same_types: bool = False) -> DataFrame:
    """One ``Union`` node over the frames' analyzed plans. Where every frame has the same column
    types nothing is left to analyze (no type to widen; each child is analyzed), so the node is
    marked analyzed: Spark's analysis and checks of the whole plan again cost ~0.1 s per union of
    a watch batch's findings (four per batch)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    jvm = spark._jvm
    plans = jvm.org.apache.spark.api.python.PythonUtils.toSeq([f._jdf.queryExecution().analyzed() for f in frames])
    union = jvm.org.apache.spark.sql.catalyst.plans.logical.Union(plans, False, False)
    if same_types:
        union.setAnalyzed()
    datasets = getattr(getattr(jvm.org.apache.spark.sql.classic, "Dataset$"), "MODULE$")
    return ClassicFrame(datasets.ofRows(spark._jsparkSession, union), spark)


def narrow_union(frame: DataFrame, one_partition: bool = False) -> DataFrame:
    """A union of the checks' findings has a partition per partition of every frame in it (35 for
    a small scan), each a task of its own in every stage that reads it; coalesced (no shuffle) to
    the shuffle partitions, one per core in local mode, a no-op where there are fewer. A window
    held in one partition (engine/cache.py) keeps its union in one."""
    return frame.coalesce(1 if one_partition else int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200))
