"""schema check: envelope rules, and each key/value payload against its own embedded schema.

Embedded schemas are few (one per table and version) and so are the shapes their records take:
schemas are compiled on the driver (``connect_schema``), each distinct (schema, payload shape)
is judged there once (``variant_shape``) and the verdicts are joined back to the records.
Per record and rule there is at most one finding, listing the offending paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.checks.connect_schema import FieldCheck, compile_schema, invalid_avro_names, parse_schema
from cdc_monitor.checks.context import fact_lookup
from cdc_monitor.checks.findings import MAX_OFFSETS, RecordRule, dynamic_finding, record_findings
from cdc_monitor.checks.mongo_ids import mongo_id
from cdc_monitor.checks.variant_shape import ShapeSyntaxError, field_problems, parse_shape
from cdc_monitor.decoding.events import non_envelope
from cdc_monitor.vocabulary import (
    ALLOWED_OPS,
    DELETE_KEEPS_AFTER,
    DELETE_WITHOUT_IMAGES,
    GENERIC_OPS,
    MESSAGE_OP_FLAVOURS,
    UNKNOWN_FLAVOUR,
    Rule,
    Severity,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY_SCHEMA_NAME_MISMATCH = Rule("key_schema_name_mismatch", "schema", Severity.ERROR, "record",
    "key schema name does not match the topic")
TYPE_MISMATCH = Rule("type_mismatch", "schema", Severity.ERROR, "record",
    "payload value does not match its schema type (or an integer is outside its width)")
NON_OPTIONAL_NULL = Rule("non_optional_null", "schema", Severity.ERROR, "record", "non-optional field absent or null")
INVALID_AVRO_NAME = Rule("invalid_avro_name", "schema", Severity.WARNING, "record", "schema name is not a valid Avro full name")
OP_MISSING = Rule("op_missing", "schema", Severity.ERROR, "record", "change event without op")
INVALID_OP = Rule("invalid_op", "schema", Severity.ERROR, "record", "an op the record's connector never emits")
BEFORE_AFTER_MISMATCH = Rule("before_after_mismatch", "schema", Severity.ERROR, "record",
    "before/after presence contradicts op, per connector: a delete needs before, except Cassandra's (after with "
    "deletion_ts) and MongoDB's (no pre-image)")
MISSING_SOURCE_FIELD = Rule("missing_source_field", "schema", Severity.ERROR, "record",
    "a source field the connector always sends is missing")
KEY_PAYLOAD_MISMATCH = Rule("key_payload_mismatch", "schema", Severity.ERROR, "record",
    "key payload differs from the row's key columns")
NON_ENVELOPE_VALUES = Rule("non_envelope_values", "schema", Severity.WARNING, "table",
    "a topic's values are not Debezium envelopes (flattened rows, wrappers): one finding per topic")
UNKNOWN_CONNECTOR = Rule("unknown_connector", "schema", Severity.INFO, "table",
    "source.connector names a connector without known rules: generic rules only")
NON_DEBEZIUM_PRODUCER = Rule("non_debezium_producer", "schema", Severity.INFO, "table",
    "a topic's change events carry no source block (another producer writing Debezium's envelope): one note per "
    "topic with the count; source-based rules (source fields, source time, lag, positions) are skipped for them")
RULES = (
    KEY_SCHEMA_NAME_MISMATCH, TYPE_MISMATCH, NON_OPTIONAL_NULL, INVALID_AVRO_NAME, OP_MISSING, INVALID_OP,
    BEFORE_AFTER_MISMATCH, MISSING_SOURCE_FIELD, KEY_PAYLOAD_MISMATCH, NON_ENVELOPE_VALUES, UNKNOWN_CONNECTOR,
    NON_DEBEZIUM_PRODUCER
)
# rules said once per topic (offset: the topic's first record involved; key and txn_id null)
TOPIC_RULES = (NON_ENVELOPE_VALUES, NON_DEBEZIUM_PRODUCER, UNKNOWN_CONNECTOR)
ONCE_PER_TOPIC = frozenset(r.name for r in TOPIC_RULES)
# rules a record's embedded schema is judged by (their messages: _MESSAGES)
SCHEMA_RULES = (NON_OPTIONAL_NULL, TYPE_MISMATCH, INVALID_AVRO_NAME, KEY_SCHEMA_NAME_MISMATCH)


# Fields each connector always sends (its identity, time and position).
REQUIRED_SOURCE: dict[str, tuple[str, ...]] = {
    "mysql": ("name", "ts_ms", "file", "pos"),
    "dtle": ("name", "ts_sec", "file", "pos"),
    "postgresql": ("name", "ts_ms", "lsn"),
    "sqlserver": ("name", "ts_ms", "commit_lsn"),
    "oracle": ("name", "ts_ms", "scn"),
    "yugabyte": ("name", "ts_ms", "lsn"),
    "mongodb": ("name", "ts_ms", "ord"),
    "db2": ("name", "ts_ms", "commit_lsn"),
    "informix": ("name", "ts_ms", "commit_lsn"),
    "vitess": ("name", "ts_ms", "keyspace", "vgtid"),
    "spanner": ("name", "ts_ms"),
    "cassandra": ("name", "cluster", "keyspace", "ts_micro"),
}
SKIP_NULL_CHECK = frozenset({"op"} | {f"source.{f}" for fields in REQUIRED_SOURCE.values() for f in fields})
LOC_COLUMNS = ("topic", "partition", "offset", "key", "txn_id", "server", "table")


def _data(events: DataFrame) -> DataFrame:
    return events.where("data_event")


def _allowed_ops() -> Column:
    """The op values the record's connector emits (the generic set for unknown connectors)."""
    ops = F.array(*map(F.lit, GENERIC_OPS))
    for flavour, allowed in ALLOWED_OPS.items():
        ops = F.when(F.col("flavour") == flavour, F.array(*map(F.lit, allowed))).otherwise(ops)
    return ops


def _op_problem() -> Column:
    """Why the op is invalid, or null: not an op the connector emits; ``m`` only on a
    logical-decoding message (a ``message`` block, no row image)."""
    op, allowed = F.col("op"), _allowed_ops()
    message_ok = (F.col("flavour").isin(*MESSAGE_OP_FLAVOURS) & F.col("has_message")
                  & F.col("before").isNull() & F.col("after").isNull())
    return (
        F.when(op == "m", F.when(~message_ok, F.lit(" is a logical-decoding message op on a row change")))
        .when(~F.array_contains(allowed, op), F.concat(
            F.lit(" is not one of "), F.array_join(allowed, ","), F.lit(" ("),
            F.coalesce(F.col("flavour"), F.lit(UNKNOWN_FLAVOUR)), F.lit(")")))
    )


def _loc() -> dict[str, Column]:
    return dict(topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"), key=F.col("key"),
                txn_id=F.col("txn_id"), server=F.col("server"), table=F.col("table"))


# -- envelope rules ---------------------------------------------------------------------------
def _before_after_problem() -> Column:
    op, before, after = F.col("op"), F.col("before").isNotNull(), F.col("after").isNotNull()
    return (
        F.when((op == "c") & before, F.lit("op c with before set"))
        .when((op == "c") & ~after, F.lit("op c without after"))
        # MongoDB without full-document lookup: an update says what changed instead of the document
        .when((op == "u") & ~after & ~((F.col("flavour") == "mongodb") & F.col("has_update_description")),
              F.lit("op u without after"))
        .when((op == "d") & after & ~F.col("flavour").isin(*DELETE_KEEPS_AFTER), F.lit("op d with after set"))
        .when((op == "d") & ~before & ~after & ~F.col("flavour").isin(*DELETE_WITHOUT_IMAGES),
              F.lit("op d without before or after (nothing says which row was deleted)"))
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
    return F.when(src.isNull(), F.lit("")).otherwise(missing)  # no source block at all: non_debezium_producer


def _unwrap_text(values: Column) -> Column:
    return F.transform_values(
        values, lambda _, v: F.when(v.startswith("{"), F.coalesce(F.get_json_object(v, "$.value"), v)).otherwise(v)
    )


def _key_mismatch() -> Column:
    key = _unwrap_text(F.from_json("key_payload", "map<string,string>"))
    row_text = F.when(F.col("op") == "d", F.col("before")).otherwise(F.coalesce("after", "before"))
    row = _unwrap_text(F.from_json(row_text, "map<string,string>"))
    # MongoDB: the key's id is the document's _id as extended JSON text, compared by value (mongo_id)
    mongo = F.col("flavour") == "mongodb"

    def differs(k: Column) -> Column:
        field = F.when(mongo & (k == "id"), F.lit("_id")).otherwise(k)
        value, expected = F.element_at(row, field), F.element_at(key, k)
        value = F.when(mongo, mongo_id(value)).otherwise(value)
        # a string _id is quoted in the key ("\"abc\""), bare in the row's map
        expected = F.when(mongo, mongo_id(F.regexp_replace(F.regexp_replace(expected, r"\s", ""), r'^"(.*)"$', "$1"))
                          ).otherwise(expected)
        return value.isNotNull() & (value != expected)

    return F.filter(F.map_keys(key), differs)


def envelope_rules() -> list[RecordRule]:
    is_data = F.col("envelope")
    op = F.col("op")
    ba = _before_after_problem()
    missing = _missing_source()
    key_diff = F.array_join(_key_mismatch(), ", ")
    op_problem = _op_problem()
    return [
        RecordRule(OP_MISSING, is_data & op.isNull(), F.lit("change event without op")),
        RecordRule(INVALID_OP, is_data & op.isNotNull() & op_problem.isNotNull(),
                   F.concat(F.lit("op "), F.to_json(F.array(op)), op_problem)),
        RecordRule(BEFORE_AFTER_MISMATCH, is_data & ba.isNotNull() & op_problem.isNull(), ba),
        RecordRule(MISSING_SOURCE_FIELD, is_data & (missing != ""), F.concat(
            F.lit("source lacks "), missing, F.lit(" ("), F.coalesce("flavour", F.lit("unknown connector")), F.lit(")"))),
        RecordRule(KEY_PAYLOAD_MISMATCH,
                   is_data & F.col("key_payload").isNotNull() & op.isin("c", "u", "d", "r") & (key_diff != ""),
                   F.concat(F.lit("key differs from the row in "), key_diff)),
    ]


def envelope_findings(events: DataFrame) -> list[DataFrame]:
    return [record_findings(events, envelope_rules())]


# -- per-topic rules ---------------------------------------------------------------------------
def topic_findings(events: DataFrame) -> DataFrame:
    """Once per topic, not per record: values that are not Debezium envelopes (thousands of
    identical per-record errors otherwise) and connectors without known rules. One aggregate;
    the finding sits at the topic's first such record and lists the first offsets."""
    connectors = F.to_json(F.array_sort(F.collect_set(F.when(F.col("flavour") == UNKNOWN_FLAVOUR,
                                                                F.col("source")["connector"]))))
    per_rule = {  # rule -> (which records, message before their count, message after it)
        NON_ENVELOPE_VALUES.name: (non_envelope(), F.lit(""), F.lit(
            " value(s) are not Debezium change events (no op, source, before or after: flattened rows such as "
            "ExtractNewRecordState's, or wrapper objects); the checks need Debezium's envelope")),
        NON_DEBEZIUM_PRODUCER.name: (F.col("envelope") & F.col("source").isNull(), F.lit(""), F.lit(
            " change event(s) carry no source block: written by a producer other than Debezium (a stream processor's "
            "Debezium-format sink?); their source fields, source time, lag and positions are not judged")),
        UNKNOWN_CONNECTOR.name: (F.col("flavour") == UNKNOWN_FLAVOUR,
                              F.concat(F.lit("source.connector "), connectors, F.lit(" has no connector-specific rules: ")),
                              F.lit(" event(s) judged by the generic rules only")),
    }
    pos = F.struct("partition", "offset")
    per_topic = _data(events).where(reduce(or_, [when for when, _, _ in per_rule.values()])).groupBy("topic").agg(
        F.first("server").alias("server"),
        F.array(*[F.when(F.sum(when.cast("int")) > 0, F.struct(
            F.lit(rule).alias("rule"), F.min(F.when(when, pos)).alias("at"),
            F.slice(F.sort_array(F.collect_list(F.when(when, pos))), 1, MAX_OFFSETS)["offset"].alias("offsets"),
            F.concat(before, F.sum(when.cast("int")).cast("string"), after).alias("message")))
            for rule, (when, before, after) in per_rule.items()]).alias("found"),
    )
    return per_topic.select("topic", "server", F.explode("found").alias("f")).where(F.col("f").isNotNull()).select(
        *dynamic_finding(F.col("f.rule"), TOPIC_RULES, F.col("f.message"), topic=F.col("topic"), partition=F.col("f.at.partition"),
                         offset=F.col("f.at.offset"), offsets=F.col("f.offsets"), server=F.col("server")))


# -- embedded schema rules --------------------------------------------------------------------
def _judge(schema: dict, label: str, shape_text: str, topic: str | None) -> dict[str, str]:
    """Problem texts of one (schema, shape[, topic]) per rule; rules without a problem are left out."""
    checks = compile_schema(schema, skip=SKIP_NULL_CHECK, unwrap_top=label == "key")
    try:
        nulls, types = field_problems(checks, parse_shape(shape_text))
    except ShapeSyntaxError:  # a Spark version spelling shapes differently: judge nothing rather than everything
        nulls, types = [], []
    out = {NON_OPTIONAL_NULL.name: ", ".join(nulls), TYPE_MISMATCH.name: ", ".join(types),
           INVALID_AVRO_NAME.name: ", ".join(invalid_avro_names(schema))}
    name = schema.get("name")
    if (label == "key" and isinstance(name, str) and topic is not None
            and re.sub(r"[^A-Za-z0-9_.]", "_", name) != re.sub(r"[^A-Za-z0-9_.]", "_", topic) + ".Key"):
        out[KEY_SCHEMA_NAME_MISMATCH.name] = name
    return {rule: text for rule, text in out.items() if text}


_MESSAGES = {  # one per SCHEMA_RULES
    NON_OPTIONAL_NULL.name: "{label}: non-optional field null or absent: ",
    TYPE_MISMATCH.name: "{label}: value does not match its schema type at ",
    INVALID_AVRO_NAME.name: "{label} schema name(s) not valid Avro full names: ",
    KEY_SCHEMA_NAME_MISMATCH.name: "key schema name does not match the topic: ",
}


def _variant_path(path: tuple[str, ...]) -> str:
    return "$" + "".join("['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']" for name in path)


def _out_of_range(checks_by_hash: dict[int, list[FieldCheck]]) -> Column:
    """Per record: the integer fields outside their declared width ('' when none), as
    ``after.quantity (int16) = 70000``. A shape says BIGINT whatever the magnitude, so the
    values of int8/int16/int32 fields are read from the parsed payload, only for those fields."""
    cases = F.lit("")
    for h, checks in checks_by_hash.items():
        parts = []
        for c in checks:
            lo, hi = c.int_range  # type: ignore[misc]
            v = F.try_variant_get(F.col("payload"), _variant_path(c.path), "bigint")
            if c.unwrap:
                v = F.coalesce(F.try_variant_get(F.col("payload"), _variant_path((*c.path, "value")), "bigint"), v)
            parts.append(F.when((v < lo) | (v > hi), F.concat(F.lit(f"{c.dotted} ({c.type}) = "), v.cast("string"))))
        cases = F.when(F.col("hash") == F.lit(h), F.concat_ws(", ", *parts)).otherwise(cases)
    return cases


def _problem_map(problems: dict[str, list[tuple[str, str]]]) -> dict[str, list[dict[str, str]]]:
    return {k: [{"rule": r, "message": m} for r, m in found] for k, found in problems.items()}


def _problem_rows(problems: dict[str, list[tuple[str, str]]], checks_by_hash: dict[int, list[FieldCheck]],
                  label: str, by_topic: bool) -> Column:
    """Per record: [(rule, message)] of its (schema, shape[, topic]) pair, with out-of-range
    integers merged into its type_mismatch (one finding per record and rule)."""
    entry = "struct<rule:string,message:string>"
    pair = F.concat_ws("|", F.col("hash").cast("string"), "shape", *(["topic"] if by_topic else []))
    probs = fact_lookup(_problem_map(problems), pair, f"array<{entry}>")
    if not checks_by_hash:
        return probs
    ranged = _out_of_range(checks_by_hash)
    range_text = F.concat(F.lit(f"{label}: integer out of its type's range at "), ranged)
    has_tm = F.exists(F.coalesce(probs, F.array()), lambda p: p["rule"] == TYPE_MISMATCH.name)
    merged_tm = F.transform(probs, lambda p: F.when(p["rule"] == TYPE_MISMATCH.name, F.struct(
        p["rule"].alias("rule"), F.concat(p["message"], F.lit("; integer out of its type's range at "), ranged).alias("message")))
        .otherwise(p))
    added = F.concat(F.coalesce(probs, F.array().cast(f"array<{entry}>")),
                     F.array(F.struct(F.lit(TYPE_MISMATCH.name).alias("rule"), range_text.alias("message"))))
    return F.when(F.coalesce(ranged, F.lit("")) == "", probs).when(has_tm, merged_tm).otherwise(added)


SIDES = (("value_schema", "value"), ("key_schema", "key"))


def _shaped(data: DataFrame, column: str, label: str) -> DataFrame:
    """Records with an embedded ``label`` schema, their payload (variant) and its shape, as decoded."""
    # a shape only where the schema is embedded (so hashed); none after a variant-only parse failure
    return data.select(*LOC_COLUMNS, F.col(f"{column}_hash").alias("hash"), F.col(column).alias("schema_text"),
                       F.col(f"{label}_variant").alias("payload"), F.col(f"{label}_shape").alias("shape")
                       ).where("shape IS NOT NULL")


@dataclass
class ShapeVerdicts:
    """The verdicts on a window's distinct (schema, payload shape[, topic]) pairs, per side (value,
    key): problems per pair, and the int8/int16/int32 fields of each schema, whose range a shape
    cannot tell (judged per record)."""

    problems: dict[str, dict[str, list[tuple[str, str]]]] = field(default_factory=dict)
    ranged: dict[str, dict[int, list[FieldCheck]]] = field(default_factory=dict)


def judge_shapes(events: DataFrame) -> ShapeVerdicts:
    """One Spark job: the distinct (side, schema, shape) triples, few, collected with their schema
    text in one aggregate for keys and values, and judged on the driver (variant_shape.py). Keys
    are judged per topic too (the key schema name must match it)."""
    data = _data(events)
    groups = [_shaped(data, column, label).groupBy(
        "hash", "shape", *(["topic"] if label == "key" else [F.lit(None).cast("string").alias("topic")]))
        .agg(F.first("schema_text").alias("schema_text")).withColumn("side", F.lit(label)) for column, label in SIDES]
    pairs = groups[0].unionByName(groups[1]).collect()
    verdicts = ShapeVerdicts()
    for _, label in SIDES:
        by_topic = label == "key"
        schemas: dict[int, dict | None] = {}
        problems: dict[str, list[tuple[str, str]]] = {}
        for r in pairs:
            if r["side"] != label:
                continue
            if r["hash"] not in schemas:
                schemas[r["hash"]] = parse_schema(r["schema_text"])
            schema = schemas[r["hash"]]
            topic = r["topic"] if by_topic else None
            if schema is not None:
                found = [(rule, _MESSAGES[rule].format(label=label) + text)
                         for rule, text in _judge(schema, label, r["shape"], topic).items()]
                if found:
                    problems["|".join(str(x) for x in (r["hash"], r["shape"], *([topic] if by_topic else [])))] = found
        verdicts.problems[label] = problems
        verdicts.ranged[label] = {h: checks for h, schema in schemas.items() if schema is not None and (checks := [
            c for c in compile_schema(schema, unwrap_top=by_topic) if c.int_range is not None])}
    return verdicts


def embedded_schema_findings(events: DataFrame, verdicts: ShapeVerdicts | None = None) -> list[DataFrame]:
    """Findings of every record against its own embedded key and value schema.

    Each record has the shape of its payload (decoded with it: one generic expression, whatever
    the schema); the distinct shapes are judged once (``judge_shapes``, one Spark job, unless
    ``verdicts`` are given). The verdicts then ride back to the records as a literal map (no join), with the range of
    each int8/int16/int32 field, which a shape cannot tell, judged on the record's value.
    """
    verdicts = judge_shapes(events) if verdicts is None else verdicts
    data = _data(events)
    frames: list[DataFrame] = []
    for column, label in SIDES:
        problems, ranged = verdicts.problems.get(label, {}), verdicts.ranged.get(label, {})
        if problems or ranged:
            rows = _problem_rows(problems, ranged, label, label == "key")
            frames.append(_shaped(data, column, label).select(*LOC_COLUMNS, F.explode(rows).alias("p")).select(
                *dynamic_finding(F.col("p.rule"), SCHEMA_RULES, F.col("p.message"), **_loc())))
    return frames
