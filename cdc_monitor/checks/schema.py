"""schema check: envelope rules, and each key/value payload against its own embedded schema.

Embedded schemas are few (one per table and version) and so are the shapes their records take:
schemas are compiled on the driver (``connect_schema``), each distinct (schema, payload shape)
is judged there once (``variant_shape``) and the verdicts are joined back to the records.
Per record and rule there is at most one finding, listing the offending paths.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.checks.connect_schema import compile_schema, invalid_avro_names, parse_schema
from cdc_monitor.checks.findings import RecordRule, dynamic_finding, record_findings
from cdc_monitor.checks.variant_shape import ShapeSyntaxError, field_problems, parse_shape

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
    """Required source fields the record lacks, comma-separated ('' when none or connector unknown)."""
    src = F.col("source")
    missing = F.lit("")
    for flavour, fields in REQUIRED_SOURCE.items():
        names = F.concat_ws(", ", *[F.when(src[f].isNull(), F.lit(f)) for f in fields])
        missing = F.when(F.col("flavour") == flavour, names).otherwise(missing)
    return F.when(src.isNull(), F.lit("source")).otherwise(missing)


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


def envelope_rules() -> list[RecordRule]:
    is_data = (F.col("kind") == "data") & F.col("decode_error").isNull()
    op = F.col("op")
    ba = _before_after_problem()
    missing = _missing_source()
    key_diff = F.array_join(_key_mismatch(), ", ")
    return [
        RecordRule("op_missing", is_data & op.isNull(), F.lit("change event without op")),
        RecordRule("invalid_op", is_data & op.isNotNull() & ~op.isin(*OPS),
                   F.concat(F.lit("op "), F.to_json(F.array(op)), F.lit(" is not one of c,u,d,r,t,m"))),
        RecordRule("before_after_mismatch", is_data & ba.isNotNull(), ba),
        RecordRule("missing_source_field", is_data & (missing != ""), F.concat(
            F.lit("source lacks "), missing, F.lit(" ("), F.coalesce("flavour", F.lit("unknown connector")), F.lit(")"))),
        RecordRule("key_payload_mismatch",
                   is_data & F.col("key_payload").isNotNull() & op.isin("c", "u", "d", "r") & (key_diff != ""),
                   F.concat(F.lit("key differs from the row in "), key_diff)),
    ]


def envelope_findings(events: DataFrame) -> list[DataFrame]:
    return [record_findings(events, envelope_rules())]


# -- embedded schema rules --------------------------------------------------------------------
def _shape_sql(text_col: str, payload_only: bool) -> str:
    """The payload's shape (variant_shape.py) as Spark computes it, decimal precision dropped.
    ``payload_only`` parses just the payload into a variant (get_json_object skips the schema's
    tokens; 1.5 s instead of 2.3 s for 100k events, measured); it would miss a bare string
    payload, which only a key can have (keys are small and parsed whole)."""
    payload = (f"try_parse_json(get_json_object({text_col}, '$.payload'))" if payload_only
               else f"try_variant_get(try_parse_json({text_col}), '$.payload', 'variant')")
    return rf"regexp_replace(schema_of_variant({payload}), 'DECIMAL\\(\\d+,\\d+\\)', 'DECIMAL')"


def _judge(schema: dict, label: str, shape_text: str, topic: str | None) -> dict[str, str]:
    """Problem texts of one (schema, shape[, topic]) per rule; rules without a problem are left out."""
    checks = compile_schema(schema, skip=SKIP_NULL_CHECK, unwrap_top=label == "key")
    try:
        nulls, types = field_problems(checks, parse_shape(shape_text))
    except ShapeSyntaxError:  # a Spark version spelling shapes differently: judge nothing rather than everything
        nulls, types = [], []
    out = {"non_optional_null": ", ".join(nulls), "type_mismatch": ", ".join(types),
           "invalid_avro_name": ", ".join(invalid_avro_names(schema))}
    name = schema.get("name")
    if (label == "key" and isinstance(name, str) and topic is not None
            and re.sub(r"[^A-Za-z0-9_.]", "_", name) != re.sub(r"[^A-Za-z0-9_.]", "_", topic) + ".Key"):
        out["key_schema_name_mismatch"] = name
    return {rule: text for rule, text in out.items() if text}


_MESSAGES = {
    "non_optional_null": "{label}: non-optional field null or absent: ",
    "type_mismatch": "{label}: value does not match its schema type at ",
    "invalid_avro_name": "{label} schema name(s) not valid Avro full names: ",
    "key_schema_name_mismatch": "key schema name does not match the topic: ",
}
_PROBLEMS = "hash bigint, shape string, topic string, rule string, message string"


def embedded_schema_findings(events: DataFrame) -> list[DataFrame]:
    """Findings of every record against its own embedded key and value schema.

    Each record gets the shape of its payload (one generic expression, whatever the schema);
    the distinct (schema, shape) pairs, few, are collected with their schema text in one
    aggregate, judged on the driver (variant_shape.py) and joined back to the records (a second
    pass, only when some pair has a problem). Keys are judged per topic too (the key schema
    name must match it).
    """
    data = _data(events)
    frames: list[DataFrame] = []
    for column, text_col, label in (("value_schema", "value_text", "value"), ("key_schema", "key", "key")):
        by_topic = label == "key"
        on = ["hash", "shape", *(["topic"] if by_topic else [])]
        shaped = (
            data.where(F.col(column + "_hash").isNotNull())
            .selectExpr(*LOC_COLUMNS, f"{column}_hash AS hash", f"{column} AS schema_text",
                        f"{_shape_sql(text_col, payload_only=not by_topic)} AS shape")
            .where("shape IS NOT NULL")  # decoded by from_json, so a variant-only parse failure
        )
        schemas: dict[int, dict | None] = {}
        problems = []
        for r in shaped.groupBy(*on).agg(F.first("schema_text").alias("schema_text")).collect():
            if r["hash"] not in schemas:
                schemas[r["hash"]] = parse_schema(r["schema_text"])
            schema = schemas[r["hash"]]
            topic = r["topic"] if by_topic else None
            if schema is not None:
                problems += [(r["hash"], r["shape"], topic, rule, _MESSAGES[rule].format(label=label) + text)
                             for rule, text in _judge(schema, label, r["shape"], topic).items()]
        if problems:
            table = events.sparkSession.createDataFrame(problems, _PROBLEMS).select(*on, "rule", "message")
            frames.append(shaped.join(F.broadcast(table), on)
                          .select(*dynamic_finding(F.col("rule"), F.col("message"), **_loc())))
    return frames
