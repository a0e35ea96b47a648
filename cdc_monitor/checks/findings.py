"""The finding contract (design.md section 2) and the rule catalogue."""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FINDING_COLUMNS = [
    "check", "rule", "severity", "topic", "partition", "offset", "offsets", "key", "txn_id", "message",
    "server", "table",
]
SEVERITIES = ("error", "warning", "info")
MAX_OFFSETS = 20

# rule -> (check, default severity, what it means)
RULES: dict[str, tuple[str, str, str]] = {
    "invalid_json": ("decode", "error", "value or key is not valid JSON"),
    "invalid_envelope": ("decode", "error", "valid JSON, but not a Kafka Connect / Debezium object"),
    "invalid_capture_line": ("decode", "error", "a capture-file line that is not a kcat -J record"),
    "lag_spike": ("lag", "warning", "lag above the table's threshold"),
    "negative_lag": ("lag", "warning", "ts_ms before source.ts_ms (clock skew)"),
    "invalid_source_ts": ("lag", "warning", "source timestamp missing or outside 2000..2100"),
    "missing_end": ("transactions", "error", "a BEGIN followed by another BEGIN without its END"),
    "missing_begin": ("transactions", "error", "an END without its BEGIN"),
    "count_mismatch": ("transactions", "error", "END.event_count differs from the data events seen"),
    "collection_count_mismatch": ("transactions", "error", "END.data_collections differs per collection"),
    "order_gap": ("transactions", "error", "total_order/data_collection_order not 1..n"),
    "orphan_event": ("transactions", "warning", "transaction id on no BEGIN/END covering its time"),
    "key_schema_name_mismatch": ("schema", "error", "key schema name does not match the topic"),
    "type_mismatch": ("schema", "error", "payload value does not match its schema type"),
    "non_optional_null": ("schema", "error", "non-optional field absent or null"),
    "invalid_avro_name": ("schema", "warning", "schema name is not a valid Avro full name"),
    "op_missing": ("schema", "error", "change event without op"),
    "invalid_op": ("schema", "error", "op not one of c, u, d, r, t, m"),
    "before_after_mismatch": ("schema", "error", "before/after presence contradicts op"),
    "missing_source_field": ("schema", "error", "a source field the connector always sends is missing"),
    "key_payload_mismatch": ("schema", "error", "key payload differs from the row's key columns"),
    "non_envelope_values": ("schema", "warning",
                            "a topic's values are not Debezium envelopes (flattened rows, wrappers): one finding per topic"),
    "unknown_connector": ("schema", "info", "source.connector names a connector without known rules: generic rules only"),
    "position_regression": ("ordering", "error", "source position went backwards for a key"),
    "duplicate": ("ordering", "warning", "the same event again (redelivery/replay)"),
    "missing_create": ("ordering", "warning", "update/delete of a key never created in a full partition"),
    "event_after_delete": ("ordering", "error", "update/delete after the key was deleted"),
    "tombstone_without_delete": ("ordering", "warning", "tombstone not preceded by a delete"),
    "key_in_multiple_partitions": ("ordering", "error", "one key in several partitions of a topic"),
}
CHECKS = ("decode", "lag", "transactions", "schema", "ordering")
# rules reported once per topic (offset: the first record involved; key and txn_id null)
TOPIC_RULES = frozenset({"non_envelope_values", "unknown_connector"})


def _finding_columns(
    check: Column,
    rule: Column,
    severity: Column,
    message: Column,
    *,
    topic: Column | None = None,
    partition: Column | None = None,
    offset: Column | None = None,
    offsets: Column | None = None,
    key: Column | None = None,
    txn_id: Column | None = None,
    server: Column | None = None,
    table: Column | None = None,
) -> list[Column]:
    """Select-list for one finding row; missing locations become typed nulls."""

    def _or_null(col: Column | None, typ: str) -> Column:
        return (col if col is not None else F.lit(None)).cast(typ)

    offset_col = _or_null(offset, "bigint")
    if offsets is None:
        offsets = F.when(offset_col.isNotNull(), F.array(offset_col))
    return [
        check.alias("check"),
        rule.alias("rule"),
        severity.alias("severity"),
        _or_null(topic, "string").alias("topic"),
        _or_null(partition, "int").alias("partition"),
        offset_col.alias("offset"),
        F.slice(offsets.cast("array<bigint>"), 1, MAX_OFFSETS).alias("offsets"),
        _or_null(key, "string").alias("key"),
        _or_null(txn_id, "string").alias("txn_id"),
        message.cast("string").alias("message"),
        _or_null(server, "string").alias("server"),
        _or_null(table, "string").alias("table"),
    ]


def finding(rule: str, message: Column, **loc: Column | None) -> list[Column]:
    """Select-list for a finding of ``rule`` (check and severity from RULES)."""
    check, severity, _ = RULES[rule]
    return _finding_columns(F.lit(check), F.lit(rule), F.lit(severity), message, **loc)


def dynamic_finding(rule: Column, message: Column, **loc: Column | None) -> list[Column]:
    """Like ``finding`` for a rule computed per row."""
    checks = F.create_map(*[x for r, (c, _, _) in RULES.items() for x in (F.lit(r), F.lit(c))])
    sevs = F.create_map(*[x for r, (_, s, _) in RULES.items() for x in (F.lit(r), F.lit(s))])
    return _finding_columns(F.element_at(checks, rule), rule, F.element_at(sevs, rule), message, **loc)


@dataclass(frozen=True)
class RecordRule:
    """A rule judged on each record alone: ``when`` (its scope included) and the message."""

    rule: str
    when: Column
    message: Column
    located: bool = True  # False: the record could not be decoded, so txn_id and table stay null


def record_findings(events: DataFrame, rules: list[RecordRule]) -> DataFrame:
    """Every per-record rule in one pass over ``events``: the records breaking any rule, then
    one finding per rule broken (rather than one scan of the events per rule)."""
    broken = F.array(*[
        F.when(r.when, F.struct(F.lit(r.rule).alias("rule"), r.message.cast("string").alias("message"),
                                F.lit(r.located).alias("located")))
        for r in rules
    ])
    located = F.col("p.located")
    return (
        events.where(reduce(or_, [r.when for r in rules]))
        .select("topic", "partition", "offset", "key", "txn_id", "server", "table", F.explode(broken).alias("p"))
        .where(F.col("p").isNotNull())
        .select(*dynamic_finding(
            F.col("p.rule"), F.col("p.message"), topic=F.col("topic"), partition=F.col("partition"),
            offset=F.col("offset"), key=F.col("key"), txn_id=F.when(located, F.col("txn_id")),
            server=F.col("server"), table=F.when(located, F.col("table"))))
    )
