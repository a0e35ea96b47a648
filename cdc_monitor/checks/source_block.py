"""source-block check: position fields that cannot be a position.

A connector's position fields have one form each (Debezium's connector docs and source structs):
MySQL/dtle ``pos`` and ``row``, PostgreSQL ``lsn``, Oracle ``scn``/``commit_scn`` and MongoDB ``ord``
are non-negative integers; SQL Server ``commit_lsn``/``change_lsn`` are ``XXXXXXXX:XXXXXXXX:XXXX``
(hex); YugabyteDB ``lsn`` is colon-separated integers (``1:4::0:0``). A present field of another
form is ``invalid_position``, and the record has no position (decoding/positions.py), so it is never
also a ``position_regression`` (one cause, one finding). An absent field is ``missing_source_field``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.checks.findings import RecordRule
from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SEQUENCE_CONFLICT = Rule("sequence_conflict", "ordering", Severity.ERROR, "table",
    "one PostgreSQL source.sequence on events with different LSNs (the sequence names one place in the WAL)")
INVALID_POSITION = Rule("invalid_position", "schema", Severity.ERROR, "record",
    "a source position field of the wrong form: a negative or non-integer MySQL pos/row, PostgreSQL lsn, Oracle scn, "
    "MongoDB ord; a SQL Server LSN not XXXXXXXX:XXXXXXXX:XXXX; a YugabyteDB lsn not n:n:...")
RULES = (SEQUENCE_CONFLICT, INVALID_POSITION)

UNSIGNED = r"^\d+$"
SQLSERVER_LSN = r"^[0-9a-fA-F]{8}:[0-9a-fA-F]{8}:[0-9a-fA-F]{4}$"
YUGABYTE_LSN = r"^\d+(:\d*)*$"
# flavour -> (source field, the form it must have)
POSITION_FORMS: dict[str, tuple[tuple[str, str], ...]] = {
    "mysql": (("pos", UNSIGNED), ("row", UNSIGNED)),
    "dtle": (("pos", UNSIGNED), ("row", UNSIGNED)),
    "postgresql": (("lsn", UNSIGNED),),
    "sqlserver": (("commit_lsn", SQLSERVER_LSN), ("change_lsn", SQLSERVER_LSN)),
    "oracle": (("scn", UNSIGNED), ("commit_scn", UNSIGNED)),
    "mongodb": (("ord", UNSIGNED),),
    "yugabyte": (("lsn", YUGABYTE_LSN),),
}


def _bad_fields() -> Column:
    """The record's position fields of the wrong form, as ``lsn=-5`` ('' when none)."""
    src = F.col("source")
    out = F.lit("")
    for flavour, forms in POSITION_FORMS.items():
        bad = F.concat_ws(", ", *[F.when(src[f].isNotNull() & ~src[f].rlike(form), F.concat(F.lit(f + "="), src[f]))
                                  for f, form in forms])
        out = F.when(F.col("flavour") == flavour, bad).otherwise(out)
    return out


def source_block_rules() -> list[RecordRule]:
    bad = _bad_fields()
    return [RecordRule(INVALID_POSITION, F.col("envelope") & F.col("source").isNotNull() & (bad != ""), F.concat(
        F.lit("source position field(s) of the wrong form: "), bad, F.lit(" ("), F.col("flavour"), F.lit(")")))]


def sequence_sql() -> SqlFindings:
    """PostgreSQL's ``source.sequence`` (``["<last commit LSN>","<LSN>"]``) names one place in the WAL:
    an event whose sequence an earlier event (by record time) carried with another ``lsn`` is a
    ``sequence_conflict``, at the later event (an exact replay repeats both: it is a duplicate).
    As SQL (checks/sql.py) over ``{events}``."""
    message = ("concat('source.sequence ', source.sequence, ' with lsn ', source.lsn, "
               "': an earlier event had it with lsn ', first_lsn)")
    return SqlFindings(selects=(f"""
        SELECT {finding_sql(SEQUENCE_CONFLICT, message, topic="topic", partition="partition", offset="offset", key="key",
                            txn_id="txn_id", server="server", table="`table`")}
        FROM (SELECT *, first(source.lsn) OVER (PARTITION BY server, source.sequence
                                                ORDER BY record_ts_ms, topic, partition, offset) AS first_lsn
              FROM {{events}} WHERE data_event AND flavour = 'postgresql' AND source.sequence IS NOT NULL
                AND source.lsn IS NOT NULL)
        WHERE source.lsn != first_lsn""",))


def sequence_findings(events: DataFrame) -> DataFrame:
    """The sequence rule alone over ``events`` (the suite runs ``sequence_sql`` with its scope)."""
    return findings_frame([sequence_sql()], {"events": events})
