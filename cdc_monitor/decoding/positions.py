"""Connector-specific source positions as comparable ``array<bigint>`` columns.

Arrays compare element by element, so "did the position go backwards" is one ``<`` in Spark.

| flavour | position |
| --- | --- |
| mysql, dtle | [binlog file index, pos, row] (rotation to a higher file index is a forward move) |
| postgresql | [lsn] |
| sqlserver | [commit_lsn (3 hex parts), change_lsn (3 hex parts), event_serial_no] |
| oracle | [commit_scn (or scn), scn] |
| yugabyte | the parts of ``lsn`` such as ``1:4::0:0`` (empty part = 0) |
| mongodb | [ts_ms (or ts_sec * 1000), ord], only while the time is valid (2000..2100): the oplog time leads |
| db2 | [commit_lsn (3 hex parts), change_lsn (3 hex parts)] (a part beyond 2^63 leaves no position) |
| informix | [commit_lsn, change_lsn] (numbers) |
| vitess, spanner | none: a VGTID or a Spanner commit is not an ordered number (ordering's position rule skips them) |
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

FLAVOURS = ("mysql", "dtle", "postgresql", "sqlserver", "oracle", "yugabyte", "mongodb", "db2", "informix", "vitess",
            "spanner")


def _long(col: Column) -> Column:
    """A non-negative integer position part; any other text leaves no part (checks/source_block.py
    judges it: invalid_position, never also a position_regression)."""
    return F.when(col.rlike(r"^\d+$"), col.try_cast("bigint"))


def _all_or_null(parts: list[Column]) -> Column:
    """The array of parts, or null when any part is missing (a position must be whole)."""
    arr = F.array(*parts)
    return F.when(F.forall(arr, lambda x: x.isNotNull()), arr)


def _hex_parts(lsn: Column) -> list[Column]:
    # SQL Server LSN "00000027:00000758:0005" -> three numbers.
    # at most 16 hex digits (what conv can hold; above 2^63 the cast leaves null), so no part overflows
    parts = [F.split_part(lsn, F.lit(":"), F.lit(i)) for i in (1, 2, 3)]
    return [_long(F.when(p.rlike("^[0-9a-fA-F]{1,16}$"), F.conv(p, 16, 10))) for p in parts]


def position_expr(flavour: Column, src: Column) -> Column:
    """``src`` is the parsed ``source`` struct (all strings)."""
    binlog = _all_or_null(
        [_long(F.regexp_extract(src["file"], r"(\d+)$", 1)), _long(src["pos"]), _long(F.coalesce(src["row"], F.lit("0")))]
    )
    sqlserver = F.when(
        src["commit_lsn"].isNotNull() & src["change_lsn"].isNotNull(),
        _all_or_null(
            [*_hex_parts(src["commit_lsn"]), *_hex_parts(src["change_lsn"]), _long(F.coalesce(src["event_serial_no"], F.lit("0")))]
        ),
    ).otherwise(
        # snapshot events carry only commit_lsn
        F.when(src["commit_lsn"].isNotNull(), _all_or_null([*_hex_parts(src["commit_lsn"]), F.lit(0), F.lit(0), F.lit(0), F.lit(0)]))
    )
    oracle = _all_or_null([_long(F.coalesce(src["commit_scn"], src["scn"])), _long(src["scn"])])
    yb_parts = F.transform(
        F.split(src["lsn"], ":"), lambda p: F.when(p == "", F.lit(0).cast("bigint")).otherwise(_long(p))
    )
    yugabyte = F.when(F.forall(yb_parts, lambda x: x.isNotNull()), yb_parts)
    mongo_ts = F.coalesce(_long(src["ts_ms"]), F.try_multiply(_long(src["ts_sec"]), F.lit(1000)))
    return (
        F.when(flavour.isin("mysql", "dtle"), binlog)
        .when(flavour == "postgresql", _all_or_null([_long(src["lsn"])]))
        .when(flavour == "sqlserver", sqlserver)
        .when(flavour == "oracle", oracle)
        .when(flavour == "yugabyte", yugabyte)
        .when(flavour == "mongodb", F.when(mongo_ts.between(946_684_800_000, 4_102_444_799_999),
                                           _all_or_null([mongo_ts, _long(src["ord"])])))
        .when(flavour == "db2", _all_or_null([*_hex_parts(src["commit_lsn"]), *_hex_parts(src["change_lsn"])]))
        .when(flavour == "informix", _all_or_null([_long(src["commit_lsn"]), _long(src["change_lsn"])]))
    )
