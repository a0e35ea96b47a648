"""Connector flavours: naming, the ``source`` block and its Connect schema, positions.

Each flavour turns a logical change (table, txn number, event sequence) into the ``source``
block its connector really sends (seeds 000-004), with positions that only move forward.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FLAVOUR_NAMES = ("mysql", "dtle", "postgresql", "sqlserver", "oracle", "yugabyte", "mongodb")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Connect type
    key: bool = False
    logical: str | None = None


@dataclass(frozen=True)
class TableDef:
    name: str
    columns: tuple[Column, ...]


TABLES = (
    TableDef("customers", (
        Column("id", "int32", key=True), Column("first_name", "string"), Column("last_name", "string"),
        Column("email", "string"),
    )),
    TableDef("orders", (
        Column("id", "int64", key=True), Column("customer_id", "int32"), Column("amount", "double"),
        Column("created", "int64", logical="io.debezium.time.Timestamp"), Column("paid", "boolean"),
    )),
    TableDef("products", (
        Column("id", "int32", key=True), Column("name", "string"), Column("weight", "float"),
        Column("quantity", "int16"), Column("price", "bytes", logical="org.apache.kafka.connect.data.Decimal"),
    )),
)


# Debezium 3.x's SnapshotRecord values (the source block's snapshot enum)
SNAPSHOT_ALLOWED_V3 = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
MONGO_LSID = "a8f0c1e2-6b1d-4c57-9a3e-2f4b8d7c9e10"  # a MongoDB logical session id (UUID)


def _f(field: str, type_: str, optional: bool, **extra: Any) -> dict[str, Any]:
    return {"type": type_, "optional": optional, "field": field, **extra}


@dataclass(frozen=True)
class Flavour:
    name: str
    server: str
    db: str | None
    schema: str | None
    connector: str | None
    version: str
    upper: bool = False
    wrap_values: bool = False  # yugabyte-like: every column as {"value": x}
    nullable_columns: bool = False  # non-key columns optional (postgres-style tables)
    before_on_update: bool = True  # False: REPLICA IDENTITY DEFAULT-like, before is null on update
    documents: bool = False  # MongoDB: rows are documents (_id) written as JSON text; the key is {"id": "<_id as JSON>"}

    @property
    def v3(self) -> bool:
        """Modelled on Debezium 3.x (checked against the real connector: tests/test_debezium_generator.py):
        the envelope's and the source block's ``ts_us``/``ts_ns``, the envelope at schema version 2 with
        ``transaction`` before ``op``, versioned marker and heartbeat schemas, the 3.x snapshot markers."""
        return int(self.version.split(".")[0]) >= 3

    def snapshot_marker(self, last_table: bool, first_table: bool, row: int, rows: int) -> str:
        """source.snapshot of a snapshot row: ``last`` on the last; Debezium 3.x also marks the first
        (``first``) and each table's first and last (``first_in_data_collection``,
        ``last_in_data_collection``)."""
        if row == rows - 1 and last_table:
            return "last"
        if not self.v3:
            return "true"
        if row == 0:
            return "first" if first_table else "first_in_data_collection"
        return "last_in_data_collection" if row == rows - 1 else "true"

    def ident(self, name: str) -> str:
        return name.upper() if self.upper else name

    def topic(self, table: str) -> str:
        parts = [self.server]
        if self.name == "sqlserver":
            parts += [self.db, self.schema]
        elif self.name in ("postgresql", "yugabyte", "oracle"):
            parts += [self.schema]
        else:
            parts += [self.db]
        return ".".join([*(p for p in parts if p), self.ident(table)])

    def data_collection(self, table: str) -> str:
        t = self.ident(table)
        if self.name in ("postgresql", "yugabyte"):
            return f"{self.schema}.{t}"
        if self.name in ("mysql", "dtle", "mongodb"):
            return f"{self.db}.{t}"
        return f"{self.db}.{self.schema}.{t}"

    def txn_id(self, txn_no: int, lsn: int = 0) -> str:
        """The id Debezium writes. PostgreSQL (since 2.0, DBZ-5329): ``<txId>:<lastSeenLsn>`` on the
        BEGIN, the END and every data event alike, so the part after the colon differs on each."""
        n = self.name
        if n == "mysql":
            return f"3e11fa47-71ca-11e1-9e33-c80aa9429562:{txn_no + 1}"
        if n == "postgresql":
            return f"{700 + txn_no}:{lsn}"
        if n == "sqlserver":
            return f"00000027:{0x700 + txn_no:08x}:0005"
        if n == "oracle":
            return f"06.{txn_no % 32}.{800 + txn_no}"
        if n == "mongodb":  # <lsid>:<txnNumber>
            return f"{MONGO_LSID}:{txn_no + 1}"
        return f"{txn_no:08x}-0000-4000-8000-000000000000"

    @property
    def transaction_topic(self) -> str:
        return f"{self.server}.transaction"

    @property
    def position_field(self) -> str:
        return {"mysql": "pos", "dtle": "pos", "postgresql": "lsn", "sqlserver": "commit_lsn",
                "oracle": "scn", "yugabyte": "lsn", "mongodb": "ord"}[self.name]

    @staticmethod
    def lsn(seq: int) -> int:
        """PostgreSQL: the LSN of the event with global number ``seq``."""
        return 33_554_432 + seq * 56

    # -- the source block -------------------------------------------------------------------
    def source(self, table: str, txn_no: int, seq: int, ev: int, ts_ms: int, snapshot: str,
               op: str, commit_seq: int, last_commit: int | None = None) -> dict[str, Any]:
        """``seq``: global event number; ``ev``: index inside the transaction; ``commit_seq``:
        the global number of the transaction's last event (for commit positions); ``last_commit``
        (PostgreSQL): the LSN of the last transaction committed before this event's."""
        n = self.name
        tbl = self.ident(table)
        if n in ("mysql", "dtle"):
            file_index, in_file = 3 + txn_no // 150, txn_no % 150
            src: dict[str, Any] = {"version": self.version}
            if n == "mysql":
                src |= {"connector": "mysql", "name": self.server, "ts_ms": ts_ms, "snapshot": snapshot,
                        "db": self.db, "table": tbl, "server_id": 223344,
                        "gtid": f"3e11fa47-71ca-11e1-9e33-c80aa9429562:{txn_no + 1}",
                        "file": f"mysql-bin.{file_index:06d}", "pos": 154 + in_file * 800 + ev * 40,
                        "row": 0, "thread": 7, "query": None}
            else:
                src |= {"name": self.server, "server_id": 1, "ts_sec": ts_ms // 1000, "gtid": None,
                        "file": f"mysql-bin.{file_index:06d}", "pos": 154 + in_file * 800 + ev * 40,
                        "row": 0, "snapshot": snapshot == "true", "thread": None, "db": self.db, "table": tbl}
            return src
        common = {"version": self.version, "connector": self.connector, "name": self.server, "ts_ms": ts_ms,
                  "snapshot": snapshot, "db": self.db}
        if n == "postgresql":
            # Debezium's SourceInfo.sequence(): [lastCommitLsn, lsn], the first null until the
            # connector has streamed a commit (snapshot rows, the first transaction after them)
            lsn = self.lsn(seq)
            last = None if last_commit is None or snapshot != "false" else str(last_commit)
            src = {**common, "sequence": json.dumps([last, str(lsn)], separators=(",", ":"))}
            if self.v3:
                src |= {"ts_us": ts_ms * 1000, "ts_ns": ts_ms * 1_000_000}
            src |= {"schema": self.schema, "table": tbl, "txId": 700 + txn_no, "lsn": lsn, "xmin": None}
            return src | ({"origin": None, "origin_lsn": None} if self.v3 else {})
        if n == "sqlserver":
            commit = f"00000027:{0x700 + txn_no:08x}:0005"
            change = f"00000027:{0x700 + txn_no:08x}:{ev + 2:04x}"
            return common | {"schema": self.schema, "table": tbl, "change_lsn": None if snapshot != "false" else change,
                             "commit_lsn": commit, "event_serial_no": None if snapshot != "false" else (2 if op == "u" else 1)}
        if n == "oracle":
            return common | {"schema": self.schema, "table": tbl, "txId": f"06.{txn_no % 32}.{800 + txn_no}",
                             "scn": str(2_122_185 + seq * 3), "commit_scn": str(2_122_185 + commit_seq * 3 + 1),
                             "rs_id": "001234.00012345.0124", "ssn": 1, "redo_thread": 1, "user_name": "DEBEZIUM"}
        if n == "mongodb":  # the oplog position: (time, ordinal); 2.x names the session and transaction number
            return common | {"sequence": None, "rs": "rs0", "collection": tbl, "ord": seq + 1,
                             "lsid": MONGO_LSID if op != "r" else None, "txnNumber": txn_no + 1 if op != "r" else None}
        if n == "yugabyte":
            lsn = f"1:{seq + 4}::0:0"
            return common | {"sequence": f'[null,"{lsn}"]', "schema": self.schema, "table": tbl,
                             "txId": f"{txn_no:08x}-0000-4000-8000-000000000000", "lsn": lsn, "xmin": None}
        raise ValueError(n)

    def source_schema(self) -> dict[str, Any]:
        n = self.name
        allowed = SNAPSHOT_ALLOWED_V3 if self.v3 else "true,last,false,incremental"
        snapshot = ({"type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
                     "parameters": {"allowed": allowed}, "default": "false",
                     "field": "snapshot"} if n != "dtle" else _f("snapshot", "boolean", True))
        if n == "mysql":
            fields = [_f("version", "string", False), _f("connector", "string", False), _f("name", "string", False),
                      _f("ts_ms", "int64", False), snapshot, _f("db", "string", False), _f("table", "string", True),
                      _f("server_id", "int64", False), _f("gtid", "string", True), _f("file", "string", False),
                      _f("pos", "int64", False), _f("row", "int32", False), _f("thread", "int64", True),
                      _f("query", "string", True)]
        elif n == "dtle":
            fields = [_f("version", "string", True), _f("name", "string", False), _f("server_id", "int64", False),
                      _f("ts_sec", "int64", False), _f("gtid", "string", True), _f("file", "string", False),
                      _f("pos", "int64", False), _f("row", "int32", False), snapshot, _f("thread", "int64", True),
                      _f("db", "string", True), _f("table", "string", True)]
        else:
            fields = [_f("version", "string", False), _f("connector", "string", False), _f("name", "string", False),
                      _f("ts_ms", "int64", False), snapshot, _f("db", "string", False)]
            if n == "postgresql":
                fields += [_f("sequence", "string", True)]
                if self.v3:
                    fields += [_f("ts_us", "int64", True), _f("ts_ns", "int64", True)]
                fields += [_f("schema", "string", False), _f("table", "string", False),
                           _f("txId", "int64", True), _f("lsn", "int64", True), _f("xmin", "int64", True)]
                if self.v3:
                    fields += [_f("origin", "string", True), _f("origin_lsn", "int64", True)]
            elif n == "mongodb":
                fields += [_f("sequence", "string", True), _f("rs", "string", False), _f("collection", "string", False),
                           _f("ord", "int32", False), _f("lsid", "string", True), _f("txnNumber", "int64", True)]
            elif n == "yugabyte":
                fields += [_f("sequence", "string", True), _f("schema", "string", False), _f("table", "string", False),
                           _f("txId", "string", True), _f("lsn", "string", True), _f("xmin", "int64", True)]
            elif n == "sqlserver":
                fields += [_f("schema", "string", False), _f("table", "string", False), _f("change_lsn", "string", True),
                           _f("commit_lsn", "string", True), _f("event_serial_no", "int64", True)]
            elif n == "oracle":
                fields += [_f("schema", "string", False), _f("table", "string", False), _f("txId", "string", True),
                           _f("scn", "string", True), _f("commit_scn", "string", True), _f("rs_id", "string", True),
                           _f("ssn", "int32", True), _f("redo_thread", "int32", True), _f("user_name", "string", True)]
        connector = "mysql" if n == "dtle" else ("postgresql" if n == "yugabyte" else n)
        return {"type": "struct", "fields": fields, "optional": False,
                "name": f"io.debezium.connector.{connector}.Source", **({"version": 1} if self.v3 else {}),
                "field": "source"}


FLAVOURS: dict[str, Flavour] = {
    "mysql": Flavour("mysql", "mysql_server_1", "inventory", None, "mysql", "2.7.3.Final"),
    "dtle": Flavour("dtle", "dbserver1", "inventory", None, None, "0.8.3.Final"),
    "postgresql": Flavour("postgresql", "pgserver1", "postgres", "public", "postgresql", "3.6.1.Final",
                          nullable_columns=True, before_on_update=False),
    "sqlserver": Flavour("sqlserver", "sqlserver1", "testDB", "dbo", "sqlserver", "2.3.4.Final"),
    "oracle": Flavour("oracle", "oracle1", "ORCLPDB1", "DEBEZIUM", "oracle", "2.1.4.Final", upper=True),
    "mongodb": Flavour("mongodb", "mongo1", "inventory", None, "mongodb", "2.7.3.Final", nullable_columns=True,
                       before_on_update=False, documents=True),
    "yugabyte": Flavour("yugabyte", "ybserver1", "yugabyte", "public", "yugabytedb", "1.9.5.y.21",
                        wrap_values=True, nullable_columns=True, before_on_update=False),
}
