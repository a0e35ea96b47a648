"""Everything a window reports that Spark computes, brought to the driver in one job: the
findings (complete counts per check, rule, severity, server and table, each with the topics its
findings are on; the first ``limit`` in report order), the lag table and the transaction summary. Each part is a differently shaped
frame, so each row travels as (part, JSON text) through one union and one collect."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.checks.findings import FINDING_COLUMNS, REPORTED_COLUMNS
from cdc_monitor.engine.census import nulls_first
from cdc_monitor.engine.series import SET, FindingsSeries
from cdc_monitor.engine.union import union_all

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

GROUP = ["check", "rule", "severity", "server", "table"]
ORDER = ["check", "rule", "topic", "partition", "offset", "txn_id"]


@dataclass
class Collected:
    findings: list[dict[str, Any]]  # the first ``limit`` in ORDER
    counts: list[dict[str, Any]]  # per GROUP, with ``count`` and ``topics`` (those its findings are on), in GROUP order
    parts: dict[str, list[dict[str, Any]]]  # part name -> its rows (all columns, nulls included)


def collect_all(findings: DataFrame, limit: int, parts: dict[str, DataFrame],
                series: FindingsSeries | None = None, planned: Callable[[], None] | None = None) -> Collected:
    """One Spark job. Findings are ranked per GROUP (a window, bounded per group) so no group
    sends more than ``limit`` findings; the driver merges the groups in report order. With
    ``series``, the findings per interval of their record's time come from the same pass (part
    ``findings_series``): the union of the checks' findings is computed once, not once per use.
    ``planned`` is called once the job is planned, before it runs (callers time the two apart)."""
    tagged, columns = tag_all(findings, limit, parts, series)
    if planned is not None:
        planned()
    return read_tagged(tagged.collect(), columns, limit)


def tag_all(findings: DataFrame, limit: int, parts: dict[str, DataFrame],
            series: FindingsSeries | None = None) -> tuple[DataFrame, dict[str, list[str]]]:
    """What ``collect_all`` collects, not yet computed: one frame of (part, JSON text) rows, and the
    columns of each part."""
    ranked = findings.select(*FINDING_COLUMNS).withColumn("rn", F.row_number().over(
        Window.partitionBy(*GROUP).orderBy(*ORDER[2:])))
    keys: list[Column] = [F.col(c) for c in GROUP]
    part = F.lit("findings")
    if series is not None:
        ranked, keys, part = series.expand(ranked, GROUP)
    groups = ranked.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("count"),
        F.array_sort(F.collect_set("topic")).alias("topics"),
        F.collect_list(F.when(F.col("rn") <= limit, F.struct(*REPORTED_COLUMNS))).alias("first"))
    values = [c for c in groups.columns if c != SET]
    tagged = union_all([groups.select(part.alias("part"), F.to_json(F.struct(*values)).alias("row")),
                        *[frame.select(F.lit(name).alias("part"), F.to_json(F.struct(*frame.columns)).alias("row"))
                          for name, frame in parts.items()]])
    columns = {name: frame.columns for name, frame in parts.items()}
    if series is not None:
        columns |= series.parts
    return tagged, columns


def read_tagged(tagged: list[Row], columns: dict[str, list[str]], limit: int) -> Collected:
    """The rows of ``tag_all``'s frame, as collected, by part."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in columns}
    counts: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for r in tagged:
        d = json.loads(r["row"])
        if r["part"] == "findings":
            counts.append({**{k: d.get(k) for k in [*GROUP, "count"]}, "topics": d.get("topics") or []})
            rows += [{k: f.get(k) for k in REPORTED_COLUMNS} for f in d.get("first") or []]
        else:
            out[r["part"]].append({k: d.get(k) for k in columns[r["part"]]})
    counts.sort(key=lambda c: nulls_first(*(c[k] for k in GROUP)))
    rows.sort(key=lambda f: nulls_first(*(f[k] for k in ORDER)))
    return Collected(findings=rows[:limit], counts=counts, parts=out)
