"""decode check: records that could not be decoded, kept visible as findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import RecordRule, finding
from cdc_monitor.decoding.events import SNIPPET
from cdc_monitor.vocabulary import Rule

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


RULES = (
    Rule("invalid_json", "decode", "error", "record", "value or key is not exactly one valid JSON document"),
    Rule("invalid_envelope", "decode", "error", "record", "valid JSON, but not a Kafka Connect / Debezium object"),
    Rule("invalid_capture_line", "decode", "error", "record", "a capture-file line that is not a kcat -J record"),
)


def decode_rules() -> list[RecordRule]:
    return [
        RecordRule(rule, F.col("decode_error") == rule, F.concat(
            F.col("decode_detail"), F.lit(" is not "),
            F.lit("valid JSON" if rule == "invalid_json" else "a Connect/Debezium object"),
            F.lit(": "), F.col("decode_snippet"),
        ), located=False)
        for rule in ("invalid_json", "invalid_envelope")
    ]


def capture_line_findings(rejects: DataFrame) -> DataFrame:
    msg = F.concat(F.lit("not a kcat -J record in "), F.col("file"), F.lit(": "), F.substring("line", 1, SNIPPET))
    return rejects.select(*finding("invalid_capture_line", msg))
