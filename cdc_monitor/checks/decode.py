"""decode check: records that could not be decoded, kept visible as findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SNIPPET = 80


def decode_findings(events: DataFrame) -> DataFrame:
    bad = events.where(F.col("decode_error").isNotNull())
    snippet = F.when(F.col("decode_detail") == "key", F.col("key")).otherwise(F.col("value_text"))
    rows = []
    for rule in ("invalid_json", "invalid_envelope"):
        part = bad.where(F.col("decode_error") == rule)
        msg = F.concat(
            F.col("decode_detail"), F.lit(" is not "),
            F.lit("valid JSON" if rule == "invalid_json" else "a Connect/Debezium object"),
            F.lit(": "), F.substring(F.coalesce(snippet, F.lit("")), 1, SNIPPET),
        )
        rows.append(
            part.select(
                *finding(rule, msg, topic=F.col("topic"), partition=F.col("partition"), offset=F.col("offset"),
                         key=F.col("key"), server=F.col("server"))
            )
        )
    return rows[0].unionByName(rows[1])


def capture_line_findings(rejects: DataFrame) -> DataFrame:
    msg = F.concat(F.lit("not a kcat -J record in "), F.col("file"), F.lit(": "), F.substring("line", 1, SNIPPET))
    return rejects.select(*finding("invalid_capture_line", msg))
