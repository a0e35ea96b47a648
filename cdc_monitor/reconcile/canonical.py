"""Column functions: one value, from either side, as the canonical text two equal values share.

The source side arrives as the dialect's text (``Dialect.column_text``); the topic side as the
row image's JSON value text (``from_json(after, 'map<string,string>')``: a string's content, a
number's digits, an object's or array's raw JSON). Debezium's documented type mapping decides
how the topic side is read:

| kind | topic value | canonical |
| --- | --- | --- |
| decimal | base64 ``Decimal`` (scale: the schema's, else the source's); ``{"scale","value"}`` | plain digits, no trailing zeros |
| | (``VariableScaleDecimal``); a number (mode ``double``); a string (mode ``string``) | |
| timestamp | ``Timestamp``/``connect Timestamp`` ms, ``MicroTimestamp`` µs, ``NanoTimestamp`` ns, ISO text | µs of the wall clock |
| timestamptz | ``ZonedTimestamp`` ISO text with its offset | µs since the epoch |
| date | ``Date`` days, ISO text | days |
| time | ``MicroTime`` µs, ``Time`` ms, ``NanoTime`` ns | µs since midnight |
| json, array | JSON text | JSON with sorted keys, no whitespace |
| boolean | true/false | true/false |

Without an embedded schema a numeric timestamp's unit is read from its size (beyond 10^14 it is
µs, a date after 1973; below, ms). A value Debezium could not read from a toasted column
(``__debezium_unavailable_value``) is ``UNAVAILABLE``: that column is not compared for that row.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.reconcile.dialects import ColumnKind

UNAVAILABLE_TEXT = "__debezium_unavailable_value"
UNAVAILABLE = "\u0000unavailable"  # the canonical marker: never a value of either side
# the placeholder as binary.handling.mode=bytes sends it (base64 of the text)
_UNAVAILABLE_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_NUMBER = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"

MS = {"io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp", "io.debezium.time.Time",
      "org.apache.kafka.connect.data.Time"}
US = {"io.debezium.time.MicroTimestamp", "io.debezium.time.MicroTime"}
NS = {"io.debezium.time.NanoTimestamp", "io.debezium.time.NanoTime"}


def plain_decimal(text: Column) -> Column:
    """``123.4500`` -> ``123.45``, ``1.5E3`` -> ``1500``, ``-0.0`` -> ``0``: one spelling per number."""
    expanded = F.when(text.rlike("[eE]"), text.try_cast("decimal(38,18)").cast("string")).otherwise(F.trim(text))
    unsigned = F.regexp_replace(expanded, r"^\+", "")
    no_zeros = F.regexp_replace(F.regexp_replace(unsigned, r"(\.\d*?)0+$", "$1"), r"\.$", "")
    tidy = F.regexp_replace(F.regexp_replace(F.regexp_replace(no_zeros, r"^(-?)0+(\d)", "$1$2"), r"^\.", "0."),
                            r"^-\.", "-0.")
    return F.when(tidy == "-0", F.lit("0")).otherwise(tidy)


def base64_decimal(b64: Column, scale: Column) -> Column:
    """Kafka Connect's ``Decimal``: the unscaled value as big-endian two's-complement bytes, in
    base64; exact to 36 digits (decimal arithmetic over the bytes, then the point placed as text)."""
    hexed = F.hex(F.unbase64(b64))
    n = F.length(hexed) / 2
    idx = F.sequence(F.lit(0), (n - 1).cast("int"))
    unsigned = F.aggregate(idx, F.lit(0).cast("decimal(38,0)"),
                           lambda acc, i: acc * 256 + F.conv(F.substring(hexed, i * 2 + 1, 2), 16, 10).cast("decimal(38,0)"))
    span = F.aggregate(idx, F.lit(1).cast("decimal(38,0)"), lambda acc, _i: acc * 256)
    negative = F.conv(F.substring(hexed, 1, 2), 16, 10).cast("int") >= 128
    unscaled = F.when(negative, unsigned - span).otherwise(unsigned).cast("decimal(38,0)")
    digits = F.abs(unscaled).cast("string")
    s = F.coalesce(scale.cast("int"), F.lit(0))
    padded = F.lpad(digits, F.greatest(F.length(digits), s + 1), "0")
    left = F.substring(padded, F.lit(1), F.length(padded) - s)
    right = F.substring(padded, F.length(padded) - s + 1, s)
    text = F.when(s > 0, F.concat(left, F.lit("."), right)).otherwise(padded)
    return F.when(F.length(hexed) > 0, plain_decimal(F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), text)))


def _micros(number: Column, logical: str | None) -> Column:
    """A numeric temporal value in µs, by its logical type, else by its size."""
    n = number.try_cast("decimal(38,3)")
    if logical in MS:
        return (n * 1000).cast("decimal(38,0)").cast("string")
    if logical in US:
        return n.cast("decimal(38,0)").cast("string")
    if logical in NS:
        return F.floor(n / 1000).cast("string")
    return F.when(F.abs(n) >= 10**14, n.cast("decimal(38,0)")).otherwise((n * 1000).cast("decimal(38,0)")).cast("string")


def _iso_micros(text: Column, wall_clock: bool) -> Column:
    """ISO-8601 text as µs since the epoch; a wall clock without an offset is read as UTC."""
    zoned = text.rlike(r"([zZ]|[+-]\d\d:?\d\d)$")
    as_utc = F.when(zoned | F.lit(not wall_clock), text).otherwise(F.concat(text, F.lit("Z")))
    return F.unix_micros(as_utc.try_cast("timestamp")).cast("string")


def _canonical_json(text: Column) -> Column:
    return F.coalesce(F.to_json(F.try_parse_json(text)), text)


def source_value(text: Column, kind: ColumnKind) -> Column:
    """The dialect's text of a source column as canonical text."""
    if kind is ColumnKind.DECIMAL:
        return F.when(text.rlike(_NUMBER), plain_decimal(text)).otherwise(text)
    if kind is ColumnKind.FLOAT:
        return F.coalesce(text.try_cast("double").cast("string"), text)
    if kind in (ColumnKind.JSON, ColumnKind.ARRAY):
        return _canonical_json(text)
    if kind is ColumnKind.BOOLEAN:
        return F.lower(text)
    return text


def topic_value(text: Column, kind: ColumnKind, logical: str | None = None, scale: int | None = None) -> Column:
    """A row image's value text as canonical text, read as Debezium writes ``kind`` (``logical``:
    the field's logical type name from the embedded schema; ``scale``: the Decimal's scale)."""
    unavailable = (text == UNAVAILABLE_TEXT) | (text == _UNAVAILABLE_B64) | text.contains(f'"{UNAVAILABLE_TEXT}"')
    numeric = text.rlike(_NUMBER)
    if kind is ColumnKind.DECIMAL:
        variable = F.get_json_object(text, "$.value")
        value = (F.when(variable.isNotNull(), base64_decimal(variable, F.get_json_object(text, "$.scale")))
                 .when(numeric, plain_decimal(text))
                 .otherwise(base64_decimal(text, F.lit(scale))))
    elif kind in (ColumnKind.FLOAT, ColumnKind.JSON, ColumnKind.ARRAY, ColumnKind.BOOLEAN):
        value = source_value(text, kind)  # sent as the database writes them
    elif kind is ColumnKind.DATE:
        value = F.when(numeric, text.try_cast("bigint").cast("string")).otherwise(
            F.unix_date(F.to_date(F.substring(text, 1, 10))).cast("string"))
    elif kind is ColumnKind.TIME:
        clock = F.regexp_extract(text, r"^(\d\d):(\d\d):(\d\d(\.\d+)?)", 0)
        from_text = F.unix_micros(F.concat(F.lit("1970-01-01 "), clock, F.lit("Z")).try_cast("timestamp"))
        number = _micros(text, logical if logical in MS | US | NS else "io.debezium.time.MicroTime")
        value = F.when(numeric, number).otherwise(from_text.cast("string"))
    elif kind in (ColumnKind.TIMESTAMP, ColumnKind.TIMESTAMPTZ):
        value = F.when(numeric, _micros(text, logical)).otherwise(_iso_micros(text, kind is ColumnKind.TIMESTAMP))
    else:
        value = text
    return F.when(text.isNull(), F.lit(None)).when(unavailable, F.lit(UNAVAILABLE)).otherwise(value)
