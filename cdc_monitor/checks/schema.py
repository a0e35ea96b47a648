"""schema check: envelope rules, each key/value payload against its own embedded schema, and
what a topic's values say as a whole.

The envelope rules (op, before/after, source fields, key against row) and the embedded-schema rules
(a payload against the Connect schema it carries: non-optional fields, JSON types, integer widths,
Avro names) need the record alone: the decoder judges them while it reads the record
(checks/verdicts.py; cdc_monitor/java/Verdicts.java and ConnectSchema.java), each schema compiled
once per distinct text. Per record and rule there is at most one finding, listing the offending
paths. They are declared here with the rest of the check; the per-topic rules are judged here.
"""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import MAX_OFFSETS, dynamic_finding
from cdc_monitor.decoding.events import foreign_producer, non_envelope
from cdc_monitor.vocabulary import UNKNOWN_FLAVOUR, Rule, Severity

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame

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
    "a topic's change events are another producer's in Debezium's envelope, giving no sign of being Debezium's: no "
    "source block, or a source block with neither connector nor version: one note per topic naming what they lack, "
    "with the count; source-based rules (source fields, source time, lag, positions) are skipped for them (a block "
    "naming either is Debezium's: what it lacks is judged)")
AVRO_JSON_VALUES = Rule("avro_json_values", "decode", Severity.INFO, "table",
    "a topic's values are Avro's JSON encoding (unions wrapped, as kcat -s avro and kafka-avro-console-consumer print "
    "them), recognised without --avro-json and read as it reads them: one note per topic with the count")
RULES = (
    KEY_SCHEMA_NAME_MISMATCH, TYPE_MISMATCH, NON_OPTIONAL_NULL, INVALID_AVRO_NAME, OP_MISSING, INVALID_OP,
    BEFORE_AFTER_MISMATCH, MISSING_SOURCE_FIELD, KEY_PAYLOAD_MISMATCH, NON_ENVELOPE_VALUES, UNKNOWN_CONNECTOR,
    NON_DEBEZIUM_PRODUCER, AVRO_JSON_VALUES
)
# rules said once per topic (offset: the topic's first record involved; key and txn_id null)
TOPIC_RULES = (NON_ENVELOPE_VALUES, NON_DEBEZIUM_PRODUCER, UNKNOWN_CONNECTOR, AVRO_JSON_VALUES)
ONCE_PER_TOPIC = frozenset(r.name for r in TOPIC_RULES)
# rules a record's embedded schema is judged by (their messages: _MESSAGES)
SCHEMA_RULES = (NON_OPTIONAL_NULL, TYPE_MISMATCH, INVALID_AVRO_NAME, KEY_SCHEMA_NAME_MISMATCH)




# -- per-topic rules ---------------------------------------------------------------------------
def _topic_conditions() -> tuple[Column, ...]:
    """Which records each per-topic rule counts (``topic_findings``, in that order): data events whose
    values are not envelopes, change events another producer wrote in Debezium's envelope, events of a
    connector without known rules; and records of any kind read from Avro's JSON encoding (the decoder
    recognised it)."""
    data = F.col("data_event")
    return (data & non_envelope(), foreign_producer(), data & (F.col("flavour") == UNKNOWN_FLAVOUR),
            F.coalesce(F.col("avro_json"), F.lit(False)))


def topic_flagged() -> Column:
    """A record some per-topic rule counts (the census counts them: checks/context.py)."""
    return reduce(or_, _topic_conditions())


def _foreign_kinds() -> tuple[tuple[Column, str], ...]:
    """What a foreign producer's change event lacks (``foreign_producer``'s cases: no source block, or one
    naming neither connector nor version; each event in one case), as the note names it."""
    source = F.col("source")
    timeless = F.col("source_ts_raw").isNull()
    return ((source.isNull(), "no source block"),
            (source.isNotNull() & timeless, "a source block with neither connector, version nor a time"),
            (source.isNotNull() & ~timeless, "a source block with neither connector nor version"))


def _foreign_message(when: Column, n: Column) -> Column:
    """The note's message: the count, what the events lack (each case's count where the topic has several), why."""
    kinds = [(F.sum((when & case).cast("int")), text) for case, text in _foreign_kinds()]
    return F.concat(n.cast("string"), F.lit(" change event(s) carry "), F.concat_ws("; ", *[
        F.when(count == n, F.lit(text)).when(count > 0, F.concat(F.lit(text + " ("), count.cast("string"), F.lit(")")))
        for count, text in kinds]), F.lit(
        ": written by a producer other than Debezium (a stream processor's Debezium-format sink?); their source fields, "
        "source time, lag and positions are not judged"))


def _counted(after: str) -> Callable[[Column, Column], Column]:
    """A message that is the count, then ``after``."""
    return lambda _when, n: F.concat(n.cast("string"), F.lit(after))


def topic_findings(events: DataFrame) -> DataFrame:
    """Once per topic, not per record: values that are not Debezium envelopes (thousands of
    identical per-record errors otherwise), another producer's change events, connectors without
    known rules, values read from Avro's JSON encoding. One aggregate; the finding sits at the topic's
    first such record and lists the first offsets."""
    connectors = F.to_json(F.array_sort(F.collect_set(F.when(F.col("flavour") == UNKNOWN_FLAVOUR,
                                                                F.col("source")["connector"]))))
    values, foreign, unknown, avro_json = _topic_conditions()
    per_rule: dict[str, tuple[Column, Callable[[Column, Column], Column]]] = {  # rule -> (which records, message)
        NON_ENVELOPE_VALUES.name: (values, _counted(
            " value(s) are not Debezium change events (no op, source, before or after: flattened rows such as "
            "ExtractNewRecordState's, or wrapper objects); the checks need Debezium's envelope")),
        NON_DEBEZIUM_PRODUCER.name: (foreign, _foreign_message),
        UNKNOWN_CONNECTOR.name: (unknown, lambda _when, n: F.concat(
            F.lit("source.connector "), connectors, F.lit(" has no connector-specific rules: "), n.cast("string"),
            F.lit(" event(s) judged by the generic rules only"))),
        AVRO_JSON_VALUES.name: (avro_json, _counted(
            " value(s) are Avro's JSON encoding (unions wrapped, as kcat -s avro and kafka-avro-console-consumer print "
            "them): read as --avro-json reads them (--no-avro-json: as plain JSON)")),
    }
    pos = F.struct("partition", "offset", "record_ts_ms")  # (the first: by partition and offset)
    per_topic = events.where(topic_flagged()).groupBy("topic").agg(
        F.first("server").alias("server"),
        F.array(*[F.when(F.sum(when.cast("int")) > 0, F.struct(
            F.lit(rule).alias("rule"), F.min(F.when(when, pos)).alias("at"),
            F.slice(F.sort_array(F.collect_list(F.when(when, pos))), 1, MAX_OFFSETS)["offset"].alias("offsets"),
            message(when, F.sum(when.cast("int"))).alias("message")))
            for rule, (when, message) in per_rule.items()]).alias("found"),
    )
    return per_topic.select("topic", "server", F.explode("found").alias("f")).where(F.col("f").isNotNull()).select(
        *dynamic_finding(F.col("f.rule"), TOPIC_RULES, F.col("f.message"), topic=F.col("topic"), partition=F.col("f.at.partition"),
                         offset=F.col("f.at.offset"), offsets=F.col("f.offsets"), server=F.col("server"),
                         at=F.col("f.at.record_ts_ms")))
