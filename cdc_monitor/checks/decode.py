"""decode check: records that could not be decoded, kept visible as findings (invalid_json and
invalid_envelope are judged by the decoder: checks/verdicts.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.findings import finding, finding_row
from cdc_monitor.decoding.decoder import SNIPPET
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


INVALID_JSON = Rule("invalid_json", "decode", Severity.ERROR, "record", "value or key is not exactly one valid JSON document")
INVALID_ENVELOPE = Rule("invalid_envelope", "decode", Severity.ERROR, "record",
    "valid JSON, but not a Kafka Connect / Debezium object")
INVALID_CAPTURE_LINE = Rule("invalid_capture_line", "decode", Severity.ERROR, "record",
    "a capture-file line that is not a kcat -J record")
DUPLICATE_CAPTURE_RECORD = Rule("duplicate_capture_record", "decode", Severity.WARNING, "table",
    "records read more than once (same topic, partition and offset: overlapping captures), counted once")
RULES = (INVALID_JSON, INVALID_ENVELOPE, INVALID_CAPTURE_LINE, DUPLICATE_CAPTURE_RECORD)
# problems of the capture files, not of the stream: the generator never injects them
CAPTURE_RULES = frozenset({INVALID_CAPTURE_LINE.name, DUPLICATE_CAPTURE_RECORD.name})


def capture_line_findings(rejects: DataFrame) -> DataFrame:
    msg = F.concat(F.lit("not a kcat -J record in "), F.col("file"), F.lit(": "), F.substring("line", 1, SNIPPET))
    return rejects.select(*finding(INVALID_CAPTURE_LINE, msg))


def duplicate_record_findings(duplicates: dict[tuple[str, int], int]) -> list[dict[str, Any]]:
    """One finding per partition some of whose records the input held more than once."""
    return [finding_row(DUPLICATE_CAPTURE_RECORD, f"{n} record(s) read more than once (same topic, partition and "
                        "offset: overlapping captures?); each counted and checked once", topic=t, partition=p)
            for (t, p), n in sorted(duplicates.items())]
