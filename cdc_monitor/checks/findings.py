"""The finding contract: its columns, and select-lists that build a finding of a catalogued rule
(the rules themselves are declared in the check modules; checks/catalogue.py gathers them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F

if TYPE_CHECKING:

    from cdc_monitor.vocabulary import Rule

# what a finding says and where (each listed finding in a report: these columns)
REPORTED_COLUMNS = [
    "check", "rule", "severity", "topic", "partition", "offset", "offsets", "key", "txn_id", "message",
    "server", "table",
]
# a finding frame's columns: also the record time of the record it points at (null when it points
# at none), which the findings per interval read without a join back to the records
FINDING_COLUMNS = [*REPORTED_COLUMNS, "record_ts_ms"]
FINDING_SCHEMA = ("check string, rule string, severity string, topic string, partition int, offset bigint, "
                  "offsets array<bigint>, key string, txn_id string, message string, server string, table string, "
                  "record_ts_ms bigint")
MAX_OFFSETS = 20


def finding_row(rule: Rule, message: str, *, topic: str | None = None, partition: int | None = None,
                server: str | None = None, table: str | None = None) -> dict[str, Any]:
    """A finding the driver knows without reading records (the input's duplicates, a registry
    schema): its ``REPORTED_COLUMNS``; the window's evaluation makes them one frame (no record, so no
    record time)."""
    return {"check": rule.check, "rule": rule.name, "severity": rule.severity, "topic": topic, "partition": partition,
            "offset": None, "offsets": None, "key": None, "txn_id": None, "message": message, "server": server,
            "table": table}


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
    at: Column | None = None,
) -> list[Column]:
    """Select-list for one finding row; missing locations become typed nulls. ``at``: the record
    time of the record the finding points at (``offset``'s)."""

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
        key_payload(_or_null(key, "string")).alias("key"),
        _or_null(txn_id, "string").alias("txn_id"),
        message.cast("string").alias("message"),
        _or_null(server, "string").alias("server"),
        _or_null(table, "string").alias("table"),
        _or_null(at, "bigint").alias("record_ts_ms"),
    ]


def key_payload(key: Column) -> Column:
    """The key a finding names: the payload of a key with an embedded schema (``{"id": 1004}``,
    not the schema's kilobyte), otherwise the key text as read."""
    payload = F.get_json_object(key, "$.payload")
    return F.when(F.get_json_object(key, "$.schema").isNotNull() & payload.isNotNull(), payload).otherwise(key)


def finding(rule: Rule, message: Column, **loc: Column | None) -> list[Column]:
    """Select-list for a finding of ``rule`` (its check and severity as it declares them)."""
    return _finding_columns(F.lit(rule.check), F.lit(rule.name), F.lit(rule.severity), message, **loc)


def dynamic_finding(rule: Column, rules: Sequence[Rule], message: Column, **loc: Column | None) -> list[Column]:
    """Like ``finding`` for a rule computed per row, one of ``rules``: their check and severity as
    literals where they agree (a map over these rules only where not: a map of the whole catalogue
    was ~500 JVM calls to build and a 120-entry expression to analyse in every frame using it)."""
    columns = []
    for attr in ("check", "severity"):
        values = {getattr(r, attr) for r in rules}
        columns.append(F.lit(values.pop()) if len(values) == 1 else F.element_at(
            F.create_map(*[x for r in rules for x in (F.lit(r.name), F.lit(getattr(r, attr)))]), rule))
    return _finding_columns(columns[0], rule, columns[1], message, **loc)
