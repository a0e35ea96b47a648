"""MongoDB ids as one text per value, whatever extended-JSON mode wrote them (a column function).

Debezium's MongoDB connector (``JsonSerialization``) writes the key's id in relaxed extended JSON
(``10001``, ``{"$date":"2026-01-01T00:00:00Z"}``) and the document in canonical extended JSON
(``{"$numberLong":"10001"}``, ``{"$date":{"$numberLong":"1767225600000"}}``), so the schema check's
``key_payload_mismatch`` compares the two through ``mongo_id``.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_NUMBER = r'\{"\$number(?:Long|Int|Double|Decimal)":"([^"]*)"\}'
_DATE_ISO = r'^\{"\$date":"([^"]+)"\}$'
_DATE_MS = r'^\{"\$date":(-?\d+)\}$'
_BINARY = r'^\{"\$binary":\{"base64":"([^"]*)","subType":"([0-9a-fA-F]{1,2})"\}\}$'
_BINARY_LEGACY = r'^\{"\$binary":"([^"]*)","\$type":"([0-9a-fA-F]{1,2})"\}$'
_UUID = r'^\{"\$uuid":"([0-9a-fA-F-]{32,36})"\}$'


def mongo_id(text: Column) -> Column:
    """The id text without whitespace, numbers without their type wrapper (also inside compound ids),
    dates as ``date:<ms>``, binary and UUID values as ``bin:<subtype>:<hex>``; ``$oid`` and strings
    are the same text in both modes."""
    t = F.regexp_replace(F.regexp_replace(text, r"\s", ""), _NUMBER, "$1")

    def binary(pattern: str, b64: int, sub: int) -> Column:
        data = F.try_to_binary(F.regexp_extract(t, pattern, b64), F.lit("base64"))
        return F.when(t.rlike(pattern) & data.isNotNull(), F.concat(
            F.lit("bin:"), F.lpad(F.lower(F.regexp_extract(t, pattern, sub)), 2, "0"), F.lit(":"), F.hex(data)))

    iso_ms = F.unix_millis(F.try_to_timestamp(F.regexp_extract(t, _DATE_ISO, 1)))
    return F.coalesce(
        F.when(t.rlike(_DATE_MS), F.concat(F.lit("date:"), F.regexp_extract(t, _DATE_MS, 1))),
        F.when(t.rlike(_DATE_ISO) & iso_ms.isNotNull(), F.concat(F.lit("date:"), iso_ms.cast("string"))),
        binary(_BINARY, 1, 2), binary(_BINARY_LEGACY, 1, 2),
        F.when(t.rlike(_UUID), F.concat(F.lit("bin:04:"), F.upper(F.regexp_replace(F.regexp_extract(t, _UUID, 1), "-", "")))),
        t,
    )
