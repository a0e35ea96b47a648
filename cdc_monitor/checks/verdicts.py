"""The rules one record alone shows, judged by the decoder while it reads the record
(cdc_monitor/java/Verdicts.java): each declared in the check module beside its kin, gathered here,
and turned from the decoder's ``verdicts`` column into findings. There is no other implementation
of these rules; tests/unit/test_decoder_rules.py holds the Java codes and these constants equal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks import decode, lag, registry_schemas, schema, snapshots, source_block, transactions
from cdc_monitor.checks.findings import dynamic_finding

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.vocabulary import Rule

JUDGED_BY_DECODER: tuple[Rule, ...] = (
    decode.INVALID_JSON, decode.INVALID_ENVELOPE, registry_schemas.UNDECODABLE_AVRO, registry_schemas.UNKNOWN_SCHEMA_ID,
    lag.INVALID_SOURCE_TS, lag.NEGATIVE_LAG, lag.INVALID_EVENT_TS,
    schema.OP_MISSING, schema.INVALID_OP, schema.BEFORE_AFTER_MISMATCH, schema.MISSING_SOURCE_FIELD,
    schema.KEY_PAYLOAD_MISMATCH, snapshots.SNAPSHOT_OP_MISMATCH, transactions.INVALID_MARKER_ID,
    source_block.INVALID_POSITION, *schema.SCHEMA_RULES,
)
# a record that could not be decoded has no transaction or table to name
_UNLOCATED = tuple(r.name for r in JUDGED_BY_DECODER if r.check == decode.INVALID_JSON.check)


def verdict_findings(events: DataFrame, rules: tuple[Rule, ...] = JUDGED_BY_DECODER) -> DataFrame:
    """One finding per record and rule it breaks, of ``rules`` (default: every rule the decoder judges)."""
    v = F.col("v")
    found = events.where(F.col("verdicts").isNotNull()).select(
        "topic", "partition", "offset", "record_ts_ms", "key", "txn_id", "server", "table", F.explode("verdicts").alias("v"))
    if rules != JUDGED_BY_DECODER:
        found = found.where(v["rule"].isin(*[r.name for r in rules]))
    located = ~v["rule"].isin(*_UNLOCATED)
    return found.select(*dynamic_finding(
        v["rule"], rules, v["message"], topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
        key=F.col("key"), txn_id=F.when(located, F.col("txn_id")), server=F.col("server"),
        table=F.when(located, F.col("table")), at=F.col("record_ts_ms")))
