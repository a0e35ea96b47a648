"""The words every module shares, defined once: op values and which connector emits which,
the connectors the decoder knows, and how a transaction id is reconciled.

Spark-free, so the generator, reports and sinks import it without starting anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

SCAN_CHECKS = ("decode", "lag", "transactions", "schema", "ordering")  # what a record window shows
STREAM_CHECKS = ("source",)  # what a stream's reader saw the broker do (watch only)
HISTORY_CHECKS = ("anomaly",)  # a table against its own history (scan and gate with --history: docs/history.md)
CHECKS = (*SCAN_CHECKS, *STREAM_CHECKS, *HISTORY_CHECKS)


class Severity(StrEnum):
    """How bad a finding is; ``rank`` orders them (``--fail-on`` counts those at or above one)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[self]


SEVERITIES = tuple(s.value for s in Severity)
SEVERITY_RANK = {s.value: s.rank for s in Severity}
NEVER = "never"  # --fail-on never: no severity fails a run
FAIL_ON = (Severity.ERROR.value, Severity.WARNING.value, NEVER)
# what a rule judges: one record alone, a key's history in its partition, one transaction, a table/topic
SCOPES = ("record", "key", "transaction", "table")


class TxStatus(StrEnum):
    """A transaction's status: in a window, and (``OVERDUE``) in ``watch``, open past its grace period.
    ``final``: no later record can change it."""

    COMPLETE = "complete"
    OPEN = "open"
    OVERDUE = "overdue"
    UNVERIFIABLE = "unverifiable"
    MISSING_END = "missing_end"
    MISSING_BEGIN = "missing_begin"

    @property
    def final(self) -> bool:
        return self not in (TxStatus.OPEN, TxStatus.OVERDUE)


# the statuses a window reports, in report order (watch adds overdue)
TX_STATUSES = tuple(s.value for s in TxStatus if s is not TxStatus.OVERDUE)
FINAL_TX_STATUSES = tuple(s.value for s in TxStatus if s.final)


@dataclass(frozen=True)
class Rule:
    """One rule of the catalogue, declared beside the logic that judges it (checks/*.py)."""

    name: str
    check: str
    severity: str
    scope: str
    meaning: str

    def __post_init__(self) -> None:
        assert self.check in CHECKS and self.severity in SEVERITIES and self.scope in SCOPES, self
        object.__setattr__(self, "severity", Severity(self.severity).value)  # plain text wherever it goes

class KafkaReader(StrEnum):
    """What reads Kafka: the bundled Python data source, Spark's own connector (spark-sql-kafka),
    or, for a scan, the connector when it is on the classpath."""

    PYTHON = "python"
    SPARK = "spark"
    AUTO = "auto"  # (scan only)


KAFKA_READERS = tuple(r.value for r in KafkaReader)
STREAM_READERS = (KafkaReader.PYTHON.value, KafkaReader.SPARK.value)  # watch's: a checkpoint keeps one


class DecodeError(StrEnum):
    """What the decoder could not read in a record (its ``decode_error``): the decoder says what
    failed, the decode rules (checks/decode.py, checks/registry_schemas.py) say which rule that breaks."""

    JSON = "json"  # the value or key is not exactly one JSON document
    ENVELOPE = "envelope"  # valid JSON, but not a Kafka Connect / Debezium object
    AVRO = "avro"  # Avro in the wire format that does not decode
    SCHEMA_ID = "schema_id"  # a schema id the registry does not know


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
    "db2": ROW_OPS,
    "informix": ROW_OPS,
    "vitess": ROW_OPS,
    "spanner": ROW_OPS,
    "cassandra": ROW_OPS,
}
MESSAGE_OP_FLAVOURS = ("postgresql", "yugabyte")
# Row images of a delete, per connector (each connector's documented delete events): by default
# ``before`` holds the old row (or its key columns) and ``after`` is null. Cassandra keeps ``after``
# (the key columns, each with its deletion_ts); MongoDB has neither without pre-images.
DELETE_KEEPS_AFTER = ("cassandra",)
DELETE_WITHOUT_IMAGES = ("mongodb",)
# connectors whose snapshot rows are not op r with a string snapshot flag, so snapshot_op_mismatch does
# not judge them: dtle (its documented snapshot rows are op c with a boolean snapshot, false on the
# last row, as old Debezium MySQL wrote them) and Cassandra (its snapshot op is not documented)
SNAPSHOT_OPS_UNDOCUMENTED = ("dtle", "cassandra")

# Fields each connector always sends in its source block (its identity, time and position): a
# missing one is schema's missing_source_field (judged by the decoder, cdc_monitor/java/Verdicts.java).
REQUIRED_SOURCE: dict[str, tuple[str, ...]] = {
    "mysql": ("name", "ts_ms", "file", "pos"),
    "dtle": ("name", "ts_sec", "file", "pos"),
    "postgresql": ("name", "ts_ms", "lsn"),
    "sqlserver": ("name", "ts_ms", "commit_lsn"),
    "oracle": ("name", "ts_ms", "scn"),
    "yugabyte": ("name", "ts_ms", "lsn"),
    "mongodb": ("name", "ts_ms", "ord"),
    "db2": ("name", "ts_ms", "commit_lsn"),
    "informix": ("name", "ts_ms", "commit_lsn"),
    "vitess": ("name", "ts_ms", "keyspace", "vgtid"),
    "spanner": ("name", "ts_ms"),
    "cassandra": ("name", "cluster", "keyspace", "ts_micro"),
}
# A connector's position fields have one form each (Debezium's connector docs and source structs):
# MySQL/dtle pos and row, PostgreSQL lsn, Oracle scn/commit_scn and MongoDB ord are non-negative
# integers; SQL Server commit_lsn/change_lsn are XXXXXXXX:XXXXXXXX:XXXX (hex); YugabyteDB lsn is
# colon-separated integers (1:4::0:0). flavour -> (source field, the form it must have)
UNSIGNED = r"^\d+$"
SQLSERVER_LSN = r"^[0-9a-fA-F]{8}:[0-9a-fA-F]{8}:[0-9a-fA-F]{4}$"
YUGABYTE_LSN = r"^\d+(:\d*)*$"
POSITION_FORMS: dict[str, tuple[tuple[str, str], ...]] = {
    "mysql": (("pos", UNSIGNED), ("row", UNSIGNED)),
    "dtle": (("pos", UNSIGNED), ("row", UNSIGNED)),
    "postgresql": (("lsn", UNSIGNED),),
    "sqlserver": (("commit_lsn", SQLSERVER_LSN), ("change_lsn", SQLSERVER_LSN)),
    "oracle": (("scn", UNSIGNED), ("commit_scn", UNSIGNED)),
    "mongodb": (("ord", UNSIGNED),),
    "yugabyte": (("lsn", YUGABYTE_LSN),),
}

# source.connector values -> the flavour whose rules apply (a value not listed is an unknown
# connector: generic rules only, and the report names it). Debezium's MariaDB connector
# (debezium-connector-mariadb) writes the MySQL connector's source block: both are built by
# debezium-connector-binlog's BinlogSourceInfoStructMaker (file, pos, row, server_id, gtid, thread,
# query), only the name differs (io.debezium.connector.mariadb.Source); its GTIDs are MariaDB's
# domain-server-seq (0-1-42), which no rule judges, and its transaction ids are opaque as MySQL's.
CONNECTORS: dict[str, str] = {
    "mysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgresql",
    "sqlserver": "sqlserver",
    "oracle": "oracle",
    "mongodb": "mongodb",
    "yugabytedb": "yugabyte",
    "yugabyte": "yugabyte",
    "bmdbdb": "yugabyte",
    # transaction metadata as the others write it; their transaction ids are opaque strings
    "db2": "db2",
    "informix": "informix",
    "vitess": "vitess",
    "spanner": "spanner",
    "cassandra": "cassandra",
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

# Topic roles besides data topics: Debezium's transaction topic is <prefix>.transaction and its
# heartbeat topic __debezium-heartbeat.<prefix> (topic.heartbeat.prefix, configurable); schema
# changes go to the topic named <prefix> itself and are told apart by their content (``ddl``)
TRANSACTION_SUFFIX = ".transaction"
TRANSACTION_TOPIC_REGEX = ".*" + re.escape(TRANSACTION_SUFFIX) + "$"
# the server a transaction topic's markers belong to: the topic's prefix, else its first dotted part
TRANSACTION_SERVER_REGEX = "^(.+)" + re.escape(TRANSACTION_SUFFIX) + "$"
HEARTBEAT_TOPIC_PREFIX = "__debezium-heartbeat"


@dataclass(frozen=True)
class TopicRoles:
    """Which topics are transaction and heartbeat topics, and the server each belongs to: defined
    once, built from config (``ScanConfig.roles``, ``TopicRoles.named``). The decoder's column
    expressions use the same patterns (``decoding/events.py``)."""

    transaction_topic_regex: str = TRANSACTION_TOPIC_REGEX
    heartbeat_topic_prefix: str = HEARTBEAT_TOPIC_PREFIX

    @classmethod
    def named(cls, transaction_topic: str | None = None, heartbeat_topic_prefix: str = HEARTBEAT_TOPIC_PREFIX
              ) -> TopicRoles:
        """With a transaction topic's name (``--transaction-topic``) only that topic is one; else
        every ``<prefix>.transaction``."""
        regex = exact_topic_regex(transaction_topic) if transaction_topic else TRANSACTION_TOPIC_REGEX
        return cls(regex, heartbeat_topic_prefix)

    @property
    def heartbeat_server_regex(self) -> str:
        return "^" + re.escape(self.heartbeat_topic_prefix) + r"\.(.+)$"

    def is_transaction(self, topic: str) -> bool:
        return re.search(self.transaction_topic_regex, topic) is not None

    def is_heartbeat(self, topic: str) -> bool:
        return topic.startswith(self.heartbeat_topic_prefix)

    def server(self, topic: str) -> str:
        """The server a topic belongs to as its name tells (a data event's own ``source.name`` comes first)."""
        if self.is_transaction(topic) and (m := re.match(TRANSACTION_SERVER_REGEX, topic)):
            return m.group(1)
        if self.is_heartbeat(topic) and (m := re.match(self.heartbeat_server_regex, topic)):
            return m.group(1)
        return topic.split(".", 1)[0]

    def transaction_servers(self, topics: list[str]) -> tuple[str, ...]:
        """The servers whose transaction topic is among ``topics``."""
        return tuple(sorted({self.server(t) for t in topics if self.is_transaction(t)}))


def exact_topic_regex(topic: str) -> str:
    return "^" + re.escape(topic) + "$"


# the generator's fault labels beside a capture: ground truth, never read as records by a folder scan
LABELS_SUFFIX = ".labels.jsonl"


class ReconcileState(StrEnum):
    """What ``reconcile`` says of one key of a table (``cdc_reconcile_rows{state}``)."""

    MATCH = "match"
    MISSING = "missing"  # in the source, not in the topic's state (never sent, or removed by the topic)
    EXTRA = "extra"  # in the topic's state, not in the source (deleted there, the delete not in the topic)
    DIFFERS = "differs"  # on both sides, some column's value differs
    IN_FLIGHT = "in_flight"  # differs or missing, but changed in the source after the window's last transaction


MISMATCH_STATES = (ReconcileState.MISSING, ReconcileState.EXTRA, ReconcileState.DIFFERS)
