"""source-block check: position fields that cannot be a position, and PostgreSQL sequences that
name two places in the WAL.

A connector's position fields have one form each (``vocabulary.POSITION_FORMS``). A present field of
another form is ``invalid_position``, judged by the decoder (checks/verdicts.py), and the record has
no position, so it is never also a ``position_regression`` (one cause, one finding). An absent field
is ``missing_source_field``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdc_monitor.checks.sql import SqlFindings, finding_sql, findings_frame
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps

SEQUENCE_CONFLICT = Rule("sequence_conflict", "ordering", Severity.ERROR, "table",
    "one PostgreSQL source.sequence on events with different LSNs (the sequence names one place in the WAL)")
INVALID_POSITION = Rule("invalid_position", "schema", Severity.ERROR, "record",
    "a source position field of the wrong form: a negative or non-integer MySQL pos/row, PostgreSQL lsn, Oracle scn, "
    "MongoDB ord; a SQL Server LSN not XXXXXXXX:XXXXXXXX:XXXX; a YugabyteDB lsn not n:n:...")
RULES = (SEQUENCE_CONFLICT, INVALID_POSITION)
# the events the sequence rule reads (the census counts them: checks/context.py)
SEQUENCED = "data_event AND flavour = 'postgresql' AND source.sequence IS NOT NULL AND source.lsn IS NOT NULL"

def sequence_sql() -> SqlFindings:
    """PostgreSQL's ``source.sequence`` (``["<last commit LSN>","<LSN>"]``) names one place in the WAL:
    an event whose sequence an earlier event (by record time) carried with another ``lsn`` is a
    ``sequence_conflict``, at the later event (an exact replay repeats both: it is a duplicate).
    As SQL (checks/sql.py) over ``{events}``."""
    message = ("concat('source.sequence ', source.sequence, ' with lsn ', source.lsn, "
               "': an earlier event had it with lsn ', first_lsn)")
    return SqlFindings(selects=(f"""
        SELECT {finding_sql(SEQUENCE_CONFLICT, message, topic="topic", partition="partition", offset="offset", key="key",
                            txn_id="txn_id", server="server", table="`table`", at="record_ts_ms")}
        FROM (SELECT *, first(source.lsn) OVER (PARTITION BY server, source.sequence
                                                ORDER BY record_ts_ms, topic, partition, offset) AS first_lsn
              FROM {{events}} WHERE {SEQUENCED})
        WHERE source.lsn != first_lsn""",))


def sequence_findings(events: DataFrame, session: SessionCaps) -> DataFrame:
    """The sequence rule alone over ``events`` (the suite runs ``sequence_sql`` with its scope)."""
    return findings_frame([sequence_sql()], {"events": events}, session)
