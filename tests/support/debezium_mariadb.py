"""Debezium's MariaDB connector for real: Debian's MariaDB 10.11 (tests/support/mariadb.py) and a
Kafka Connect worker on the suite's broker running ``debezium-connector-mariadb`` 3.5.0.Final (its
newest release; none at the PostgreSQL connector's 3.6.1) as a plugin on ``plugin.path``, the
worker's classpath Kafka Connect alone (scripts/maven/debezium-mariadb.pom.xml says why it cannot
share the PostgreSQL connector's worker). Configured like the PostgreSQL one: transaction metadata,
heartbeats, JSON with schemas, an initial snapshot; schema-change events not written (the
``<prefix>`` topic), the schema history on a topic outside ``<prefix>.*``.

Debezium 3.6.1's MySQL connector does not run against MariaDB 10.11: it reads ``10.11`` as a MySQL
version with ``SHOW BINARY LOG STATUS`` (MySQL 8.4's), which MariaDB rejects (a syntax error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.broker import CACHE
from tests.support.debezium import HEARTBEAT_MS, JARS, KafkaConnect, connect_classpath
from tests.support.mariadb import PASSWORD, USER, MariaDB

PLUGIN = CACHE / "debezium-mariadb"
VERSION = "3.5.0.Final"


def connect_only_classpath() -> str:
    """Kafka Connect's jars without Debezium's 3.6.1 connectors and their drivers."""
    connect_classpath()  # resolved?
    if not (PLUGIN / ".resolved").exists():
        raise RuntimeError(f"Debezium's MariaDB connector is not in {PLUGIN}: run bash scripts/test.sh (or scripts/jars.sh)")
    skip = ("debezium-", "mysql-", "postgresql-", "antlr4-", "protobuf-")
    return ":".join(str(j) for j in sorted(JARS.glob("*.jar")) if not j.name.startswith(skip))


def mariadb_connector(name: str, prefix: str, db: MariaDB, bootstrap: str, database: str) -> dict[str, str]:
    return {
        "name": name, "connector.class": "io.debezium.connector.mariadb.MariaDbConnector", "tasks.max": "1",
        "database.hostname": "127.0.0.1", "database.port": str(db.port), "database.user": USER,
        "database.password": PASSWORD, "database.server.id": "5401", "topic.prefix": prefix,
        "database.include.list": database, "include.schema.changes": "false",
        "schema.history.internal.kafka.bootstrap.servers": bootstrap,
        "schema.history.internal.kafka.topic": f"schema-history.{prefix}", "snapshot.mode": "initial",
        "provide.transaction.metadata": "true", "heartbeat.interval.ms": str(HEARTBEAT_MS),
    }


class DebeziumMariaDB:
    """MariaDB and a Connect worker running Debezium's MariaDB connector against ``bootstrap``;
    ``prepare(db)`` runs before the connector starts (the tables its snapshot reads)."""

    def __init__(self, root: Path, bootstrap: str, prefix: str, database: str, prepare: Any = None) -> None:
        self.db = MariaDB()
        self.connect: KafkaConnect | None = None
        try:
            if prepare is not None:
                prepare(self.db)
            plugins = root / "plugins"
            plugins.mkdir(parents=True, exist_ok=True)
            (plugins / "mariadb").symlink_to(PLUGIN.resolve())
            self.connect = KafkaConnect(root / "connect", bootstrap,
                                        mariadb_connector(f"{prefix}-connector", prefix, self.db, bootstrap, database),
                                        classpath=connect_only_classpath(), plugins=plugins)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.connect is not None:
            self.connect.stop()
        self.db.stop()
