"""The source side, through Spark's JDBC source only (read-only sessions): the catalogue, the
current log position, and each table as (table, key, values, version) canonical text.

A table with a one-column integer key is read in key ranges (``partitionColumn``), one
partition per ``rows_per_partition`` rows, so executors read it in parallel; others in one.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.engine.union import union_all
from cdc_monitor.reconcile.canonical import source_value
from cdc_monitor.reconcile.dialects import ColumnKind, SourceColumn, SourceTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from cdc_monitor.reconcile.connection import JdbcSettings

MAX_PARTITIONS = 64
PART = "cdc_part"
VERSION = "cdc_version"


def _query(spark: SparkSession, jdbc: JdbcSettings, sql: str) -> DataFrame:
    return spark.read.format("jdbc").options(url=jdbc.url, query=sql, **jdbc.properties()).load()


def split_name(name: str) -> tuple[str, str]:
    """``schema.table`` as Debezium names a PostgreSQL data collection."""
    schema, sep, table = name.rpartition(".")
    return (schema if sep else "public"), table


def read_catalogue(spark: SparkSession, jdbc: JdbcSettings, names: list[str]) -> dict[str, SourceTable]:
    """The named tables that exist in the source, with their columns and primary key (one job)."""
    wanted = [split_name(n) for n in names]
    rows = _query(spark, jdbc, jdbc.dialect.catalogue_query(wanted)).collect()
    by_table: dict[tuple[str, str], list] = {}
    for r in rows:
        by_table.setdefault((r["schema_name"], r["table_name"]), []).append(r)
    out: dict[str, SourceTable] = {}
    for name, key in zip(names, wanted, strict=True):
        cols = sorted(by_table.get(key, []), key=lambda r: r["position"])
        if not cols:
            continue
        pk = tuple(r["name"] for r in sorted((r for r in cols if r["key_position"] is not None),
                                             key=lambda r: r["key_position"]))
        columns = tuple(SourceColumn(r["name"], jdbc.dialect.kind(r["type_name"]),
                                     int(r["scale"]) if r["scale"] is not None else None) for r in cols)
        out[name] = SourceTable(name, key[0], key[1], columns, pk)
    return out


def read_position(spark: SparkSession, jdbc: JdbcSettings) -> int | None:
    """The source's current log position (PostgreSQL: the WAL LSN as a number), where it has one."""
    if jdbc.dialect.position_sql is None:
        return None
    return int(_query(spark, jdbc, jdbc.dialect.position_sql).first()["position"])


def _key_ranges(spark: SparkSession, jdbc: JdbcSettings, tables: list[SourceTable]) -> dict[str, tuple[int, int, int]]:
    """(low, high, rows) of each table whose key is one integer column: one job for all of them."""
    ranged = [t for t in tables if len(t.key) == 1 and t.column(t.key[0]).kind is ColumnKind.INTEGER]
    if not ranged:
        return {}
    d = jdbc.dialect
    sql = " union all ".join(
        f"select {d.literal(t.name)} as name, min({d.quote(t.key[0])}) as lo, max({d.quote(t.key[0])}) as hi, "
        f"count(*) as n from {d.qualified(t)}" for t in ranged)
    return {r["name"]: (int(r["lo"] or 0), int(r["hi"] or 0), int(r["n"])) for r in _query(spark, jdbc, sql).collect()}


def read_tables(spark: SparkSession, jdbc: JdbcSettings, tables: list[SourceTable],
                rows_per_partition: int) -> tuple[DataFrame, dict[str, int]]:
    """Every table as (table, key, s_vals, version) rows, unioned; and how many partitions each was read in."""
    ranges = _key_ranges(spark, jdbc, tables)
    d = jdbc.dialect
    frames, partitions = [], {}
    for t in tables:
        select = [f"{d.column_text(c)} as c{i}" for i, c in enumerate(t.columns)]
        select += [f"{d.column_text(t.column(k))} as k{i}" for i, k in enumerate(t.key)]
        select.append(f"{d.row_version_sql if d.row_version_sql else 'null'} as {VERSION}")
        options = {"url": jdbc.url, **jdbc.properties()}
        lo, hi, n = ranges.get(t.name, (0, 0, 0))
        parts = min(MAX_PARTITIONS, math.ceil(n / rows_per_partition)) if t.name in ranges else 1
        if parts > 1 and hi > lo:
            select.append(f"{d.quote(t.key[0])} as {PART}")
            options |= {"partitionColumn": PART, "lowerBound": str(lo), "upperBound": str(hi + 1),
                        "numPartitions": str(parts)}
        else:
            parts = 1
        options["dbtable"] = f"(select {', '.join(select)} from {d.qualified(t)}) cdc_source"
        raw = spark.read.format("jdbc").options(**options).load()
        frames.append(raw.select(
            F.lit(t.name).alias("table"),
            F.to_json(F.array(*[source_value(F.col(f"k{i}"), t.column(k).kind) for i, k in enumerate(t.key)])).alias("key"),
            F.array(*[source_value(F.col(f"c{i}"), c.kind) for i, c in enumerate(t.columns)]).alias("s_vals"),
            F.col(VERSION).cast("bigint").alias("version")))
        partitions[t.name] = parts
    return union_all(frames), partitions
