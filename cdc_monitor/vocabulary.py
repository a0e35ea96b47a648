"""The words every module shares, defined once: op values and which connector emits which,
the connectors the decoder knows, and how a transaction id is reconciled.

Spark-free, so the generator, reports and sinks import it without starting anything.
"""

from __future__ import annotations

import re

# Debezium op values: create, update, delete, read (snapshot), truncate, message.
OPS = ("c", "u", "d", "r", "t", "m")
ROW_OPS = ("c", "u", "d", "r")
# The op values each connector emits on a table topic. ``m`` (a PostgreSQL logical-decoding
# message, pg_logical_emit_message) is never a row change: it is valid only on a record that
# carries a ``message`` block and no row image. Connectors the decoder does not know get the
# generic set.
GENERIC_OPS = ("c", "u", "d", "r", "t")
ALLOWED_OPS: dict[str, tuple[str, ...]] = {
    "mysql": GENERIC_OPS,
    "dtle": ROW_OPS,  # dtle's old format has no truncate
    "postgresql": GENERIC_OPS,
    "sqlserver": ROW_OPS,  # SQL Server refuses TRUNCATE on CDC-enabled tables
    "oracle": GENERIC_OPS,
    "yugabyte": GENERIC_OPS,
    "mongodb": ROW_OPS,
}
MESSAGE_OP_FLAVOURS = ("postgresql", "yugabyte")

# source.connector values -> the flavour whose rules apply (a value not listed is an unknown
# connector: generic rules only, and the report names it).
CONNECTORS: dict[str, str] = {
    "mysql": "mysql",
    "postgresql": "postgresql",
    "sqlserver": "sqlserver",
    "oracle": "oracle",
    "mongodb": "mongodb",
    "yugabytedb": "yugabyte",
    "yugabyte": "yugabyte",
    "bmdbdb": "yugabyte",
}
UNKNOWN_FLAVOUR = "unknown"

# Since Debezium 2.0 (DBZ-5329) the PostgreSQL transaction monitor writes "<txId>:<lastSeenLsn>"
# into BEGIN, END and every data event's transaction.id: the LSN part differs on every record, so
# such ids are reconciled by the txId before the colon (connectors built on that monitor alike).
PG_TXN_ID = r"^(\d+):\d+$"
_PG_TXN_ID = re.compile(PG_TXN_ID)


def txn_key(txn_id: str | None) -> str | None:
    """The part of a transaction id that is the same on BEGIN, END and the transaction's events."""
    if txn_id is None:
        return None
    m = _PG_TXN_ID.match(txn_id)
    return m.group(1) if m else txn_id
