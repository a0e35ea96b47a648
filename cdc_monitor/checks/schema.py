"""schema check: envelope rules, and each key/value payload against its own embedded schema.

Embedded schemas are few (one per table and version), so they are collected once, compiled on
the driver (``connect_schema``) and applied as Spark variant expressions, grouped by schema
hash. Per record and rule there is at most one finding, listing the offending paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.checks.connect_schema import FieldCheck, compile_schema, invalid_avro_names, parse_schema
from cdc_monitor.checks.findings import dynamic_finding, finding

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OPS = ("c", "u", "d", "r", "t", "m")
# Fields each connector always sends (its identity, time and position).
REQUIRED_SOURCE: dict[str, tuple[str, ...]] = {
    "mysql": ("name", "ts_ms", "file", "pos"),
    "dtle": ("name", "ts_sec", "file", "pos"),
    "postgresql": ("name", "ts_ms", "lsn"),
    "sqlserver": ("name", "ts_ms", "commit_lsn"),
    "oracle": ("name", "ts_ms", "scn"),
    "yugabyte": ("name", "ts_ms", "lsn"),
    "mongodb": ("name", "ts_ms", "ord"),
}
SKIP_NULL_CHECK = frozenset({"op"} | {f"source.{f}" for fields in REQUIRED_SOURCE.values() for f in fields})
LOC_COLUMNS = ("topic", "partition", "offset", "key", "txn_id", "server", "table")


def _data(events: DataFrame) -> DataFrame:
    return events.where((F.col("kind") == "data") & F.col("decode_error").isNull())


def _loc() -> dict[str, Column]:
    return dict(topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"), key=F.col("key"),
                txn_id=F.col("txn_id"), server=F.col("server"), table=F.col("table"))


# -- envelope rules ---------------------------------------------------------------------------
def _before_after_problem() -> Column:
    op, before, after = F.col("op"), F.col("before").isNotNull(), F.col("after").isNotNull()
    return (
        F.when((op == "c") & before, F.lit("op c with before set"))
        .when((op == "c") & ~after, F.lit("op c without after"))
        .when((op == "u") & ~after, F.lit("op u without after"))
        .when((op == "d") & after, F.lit("op d with after set"))
        .when((op == "r") & ~after, F.lit("op r without after"))
        .when((op == "t") & (before | after), F.lit("op t with a row image"))
    )


def _missing_source() -> Column:
    src = F.col("source")
    missing = F.lit(None).cast("array<string>")
    for flavour, fields in REQUIRED_SOURCE.items():
        arr = F.filter(F.array(*[F.when(src[f].isNull(), F.lit(f)) for f in fields]), lambda x: x.isNotNull())
        missing = F.when(F.col("flavour") == flavour, arr).otherwise(missing)
    return F.when(src.isNull(), F.array(F.lit("source"))).otherwise(F.coalesce(missing, F.array()))


def _unwrap_text(values: Column) -> Column:
    return F.transform_values(
        values, lambda _, v: F.when(v.startswith("{"), F.coalesce(F.get_json_object(v, "$.value"), v)).otherwise(v)
    )


def _key_mismatch() -> Column:
    key = _unwrap_text(F.from_json("key_payload", "map<string,string>"))
    row_text = F.when(F.col("op") == "d", F.col("before")).otherwise(F.coalesce("after", "before"))
    row = _unwrap_text(F.from_json(row_text, "map<string,string>"))
    return F.filter(
        F.map_keys(key), lambda k: F.element_at(row, k).isNotNull() & (F.element_at(row, k) != F.element_at(key, k))
    )


def envelope_findings(events: DataFrame) -> list[DataFrame]:
    data = _data(events)
    loc = _loc()
    ba = _before_after_problem()
    missing = _missing_source()
    key_diff = _key_mismatch()
    return [
        data.where(F.col("op").isNull()).select(*finding("op_missing", F.lit("change event without op"), **loc)),
        data.where(F.col("op").isNotNull() & ~F.col("op").isin(*OPS)).select(
            *finding("invalid_op", F.concat(F.lit("op "), F.to_json(F.array("op")), F.lit(" is not one of c,u,d,r,t,m")), **loc)),
        data.where(ba.isNotNull()).select(*finding("before_after_mismatch", ba, **loc)),
        data.withColumn("missing", missing).where(F.size("missing") > 0).select(*finding(
            "missing_source_field", F.concat(F.lit("source lacks "), F.array_join("missing", ", "),
                                             F.lit(" ("), F.coalesce("flavour", F.lit("unknown connector")), F.lit(")")),
            **loc)),
        data.where(F.col("key_payload").isNotNull() & F.col("op").isin("c", "u", "d", "r"))
        .withColumn("diff", key_diff).where(F.size("diff") > 0)
        .select(*finding("key_payload_mismatch", F.concat(F.lit("key differs from the row in "),
                                                          F.array_join("diff", ", ")), **loc)),
    ]


# -- embedded schema rules --------------------------------------------------------------------
def _sql_path(prefix: str, path: Iterable[str]) -> str | None:
    """A variant path as a SQL string literal, or None for names it cannot quote safely."""
    names = list(path)
    if any('"' in n or "'" in n or "\\" in n for n in names):
        return None
    return "'" + prefix + "".join(f'["{n}"]' for n in names) + "'"


def _field_problems_sql(root: str, prefix: str, checks: list[FieldCheck]) -> tuple[str, str]:
    """SQL for (paths of null/absent non-optional fields, paths of wrongly typed values), each a
    comma-separated string, empty when none.

    Built as SQL text and parsed once: building it as Column objects costs a Py4J round trip per
    function call (about 30 s of driver time for 36 schemas, measured). No higher-order
    functions, so Spark generates code and evaluates shared sub-expressions once.
    """
    nulls, types = [], []
    for c in checks:
        path, parent_path = _sql_path(prefix, c.path), _sql_path(prefix, c.path[:-1])
        if path is None or parent_path is None:
            continue
        x = f"try_variant_get({root}, {path}, 'variant')"
        if c.unwrap:
            x = (f"(CASE WHEN startswith(schema_of_variant({x}), 'OBJECT') "
                 f"THEN try_variant_get({x}, '$.value', 'variant') ELSE {x} END)")
        parent = f"try_variant_get({root}, {parent_path}, 'variant')"
        parent_ok = "true" if len(c.path) == 1 else f"({parent} IS NOT NULL AND NOT is_variant_null({parent}))"
        is_null = f"({x} IS NULL OR is_variant_null({x}))"
        label = "'" + c.dotted.replace("'", "") + "'"
        if not c.optional:
            nulls.append(f"CASE WHEN {parent_ok} AND {is_null} THEN {label} END")
        if c.type == "struct":  # avoid rendering a whole object's schema just to learn it is one
            ok = f"(try_variant_get({x}, '$', 'map<string,variant>') IS NOT NULL)"
        elif c.allowed:
            allowed = ", ".join(f"'{a}'" for a in c.allowed)
            ok = f"(regexp_extract(schema_of_variant({x}), '^([A-Z]+)', 1) IN ({allowed}))"
        else:
            ok = "true"
        if c.int_range is not None:
            lo, hi = c.int_range
            ok = f"({ok} AND coalesce(try_variant_get({x}, '$', 'bigint') BETWEEN {lo} AND {hi}, false))"
        types.append(f"CASE WHEN {parent_ok} AND NOT {is_null} AND NOT {ok} THEN {label} END")

    def joined(parts: list[str]) -> str:
        return f"concat_ws(', ', {', '.join(parts)})" if parts else "''"

    return joined(nulls), joined(types)


def _distinct_schemas(data: DataFrame, column: str) -> dict[int, str]:
    rows = data.where(F.col(column + "_hash").isNotNull()).groupBy(column + "_hash").agg(
        F.first(column).alias("s")).collect()
    return {r[column + "_hash"]: r["s"] for r in rows}


def _schema_sql(schema: dict, label: str) -> dict[str, str]:
    """Per-record problem texts against ``schema`` as SQL ("" = none), one per rule."""
    checks = compile_schema(schema, skip=SKIP_NULL_CHECK, unwrap_top=label == "key")
    nulls, types = _field_problems_sql("_v", "$.payload", checks)
    bad = ", ".join(invalid_avro_names(schema)).replace("'", "")
    sql = {"non_optional_null": nulls, "type_mismatch": types, "invalid_avro_name": f"'{bad}'",
           "key_schema_name_mismatch": "''"}
    name = schema.get("name")
    if label == "key" and isinstance(name, str) and "'" not in name:
        actual = re.sub(r"[^A-Za-z0-9_.]", "_", name)
        sql["key_schema_name_mismatch"] = (
            f"CASE WHEN '{actual}' != concat(regexp_replace(topic, '[^A-Za-z0-9_.]', '_'), '.Key') "
            f"THEN '{name}' ELSE '' END")
    return sql


_MESSAGES = {
    "non_optional_null": "{label}: non-optional field null or absent: ",
    "type_mismatch": "{label}: value does not match its schema type at ",
    "invalid_avro_name": "{label} schema name(s) not valid Avro full names: ",
    "key_schema_name_mismatch": "key schema name does not match the topic: ",
}


def embedded_schema_findings(events: DataFrame) -> list[DataFrame]:
    """Findings of every record against its own embedded key and value schema.

    One pass per distinct schema: a CASE over several schemas grows past what Spark compiles
    to code and runs about 4x slower interpreted (measured on 3 schemas, 20k events). Each
    pass is a handful of SQL strings, so building many passes costs the driver little.
    """
    data = _data(events)
    frames: list[DataFrame] = []
    finding_cols = dynamic_finding(F.col("p.rule"), F.col("p.message"), **_loc())
    for column, text_col, label in (("value_schema", "value_text", "value"), ("key_schema", "key", "key")):
        explode = "explode(array({})) AS p".format(", ".join(
            f"CASE WHEN _{rule} != '' THEN named_struct('rule', '{rule}', 'message', "
            f"concat('{msg.format(label=label)}', _{rule})) END"
            for rule, msg in _MESSAGES.items()
        ))
        for h, text in _distinct_schemas(data, column).items():
            schema = parse_schema(text)
            if schema is None:
                continue
            problems = [f"{sql} AS _{rule}" for rule, sql in _schema_sql(schema, label).items()]
            frames.append(
                data.where(f"{column}_hash = {h}")
                .selectExpr(*LOC_COLUMNS, f"try_parse_json({text_col}) AS _v")
                .where("_v IS NOT NULL")  # decoded by from_json, so a variant-only parse failure
                .selectExpr(*LOC_COLUMNS, *problems)
                .selectExpr(*LOC_COLUMNS, explode)
                .where("p IS NOT NULL")
                .select(*finding_cols)
            )
    return frames


def schema_drift(events: DataFrame) -> list[dict]:
    rows = (
        _data(events).groupBy("topic")
        .agg(F.countDistinct("value_schema_hash").alias("value_schemas"),
             F.countDistinct("key_schema_hash").alias("key_schemas"))
        .orderBy("topic").collect()
    )
    return [r.asDict() for r in rows]
