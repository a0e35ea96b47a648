"""A real Debezium pipeline for tests: Debian's PostgreSQL with ``wal_level=logical``, an Apache Kafka
broker, and Kafka Connect in standalone mode running Debezium's PostgreSQL connector, from the jars
scripts/jars.sh resolves from Maven Central (.cache/jars/debezium-connect, one flat classpath).
Each server is started by PID in its own session and stopped (or, for Connect, killed with
SIGKILL and started again on the same offsets file) by that PID.

The connector is configured as a user would run it for cdc-monitor: ``plugin.name=pgoutput``,
``provide.transaction.metadata=true``, heartbeats, JSON converters with schemas, an initial
snapshot, truncates not skipped. Offsets are flushed only on a graceful task stop (the flush
interval is longer than any test), so what a crash re-sends is decided by the test, not by a timer.
``scripts/debezium.sh`` runs the same pipeline by hand.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.broker import CACHE, free_port
from tests.support.postgres import DATABASE, PASSWORD, USER, Postgres
from tests.support.process import ServerProcess

JARS = CACHE / "debezium-connect"
DEBEZIUM_VERSION = "3.6.1.Final"
CONNECT_JVM = ["-Xms96m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common=warn",
               "-Dorg.slf4j.simpleLogger.log.org.eclipse.jetty=warn",
               "-Dorg.slf4j.simpleLogger.log.org.glassfish=warn"]
# what logical decoding needs; a few slots and senders for one connector (and a by-hand second)
PG_SETTINGS = {"wal_level": "logical", "max_replication_slots": "4", "max_wal_senders": "4"}
HEARTBEAT_MS = 5000
WORKER = """\
bootstrap.servers={bootstrap}
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename={offsets}
offset.flush.interval.ms=3600000
listeners=http://127.0.0.1:{rest}
plugin.discovery=only_scan
task.shutdown.graceful.timeout.ms=10000
"""


def connect_classpath() -> str:
    if not (JARS / ".resolved").exists():
        raise RuntimeError(f"Kafka Connect's and Debezium's jars are not in {JARS}: run bash scripts/test.sh "
                           "(or bash scripts/jars.sh)")
    return f"{JARS}/*"


def postgres_connector(name: str, prefix: str, pg: Postgres, slot: str, **extra: str) -> dict[str, str]:
    """Debezium's PostgreSQL connector as the suite (and scripts/debezium.sh) runs it."""
    return {
        "name": name, "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "tasks.max": "1",
        "database.hostname": "127.0.0.1", "database.port": str(pg.port), "database.user": USER,
        "database.password": PASSWORD, "database.dbname": DATABASE, "topic.prefix": prefix,
        "plugin.name": "pgoutput", "slot.name": slot, "publication.name": f"{slot}_pub",
        "publication.autocreate.mode": "all_tables", "snapshot.mode": "initial",
        "provide.transaction.metadata": "true", "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "skipped.operations": "none", "status.update.interval.ms": "1000", **extra,
    }


class KafkaConnect:
    """Kafka Connect standalone with one connector. ``kill()`` (SIGKILL) and ``start()`` again keep
    its offsets file; ``restart_task()`` stops the task gracefully (its offsets committed) and
    starts it again."""

    def __init__(self, root: Path, bootstrap: str, connector: dict[str, str], classpath: str | None = None,
                 plugins: Path | None = None) -> None:
        """``classpath``: the worker's (Connect and Debezium's 3.6.1 connectors by default); ``plugins``:
        its ``plugin.path`` (connectors in their own class loaders)."""
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.rest = free_port()
        self.name = connector["name"]
        self.classpath = classpath
        self.worker = root / "worker.properties"
        self.worker.write_text(WORKER.format(bootstrap=bootstrap, offsets=root / "offsets.dat", rest=self.rest)
                               + (f"plugin.path={plugins}\n" if plugins else ""))
        self.connector = root / "connector.properties"
        self.connector.write_text("".join(f"{k}={v}\n" for k, v in connector.items()))
        self.server: ServerProcess | None = None
        self.starts = 0
        self.start()

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.proc.pid

    def start(self) -> None:
        self.starts += 1
        argv = ["java", *CONNECT_JVM, "-cp", self.classpath or connect_classpath(),
                "org.apache.kafka.connect.cli.ConnectStandalone", str(self.worker), str(self.connector)]
        self.server = ServerProcess(argv, self.root / f"connect-{self.starts}.log", self._running, "Kafka Connect",
                                    timeout=120)

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.rest}{path}", timeout=5) as r:
            return json.loads(r.read())

    def status(self) -> dict[str, Any]:
        return self._get(f"/connectors/{self.name}/status")

    def _running(self) -> None:
        s = self.status()
        states = [s["connector"]["state"], *(t["state"] for t in s["tasks"])]
        if len(states) < 2 or any(x != "RUNNING" for x in states):
            raise RuntimeError(f"not running yet: {states}")

    def restart_task(self, timeout: float = 60) -> None:
        """The task stopped gracefully (a final offset commit) and started again."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest}/connectors/{self.name}/tasks/0/restart", method="POST")
        urllib.request.urlopen(req, timeout=30).close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._running()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL, as a crash: no offset commit, no clean shutdown."""
        if self.server is not None:
            self.server.kill()

    def stop(self) -> None:
        """SIGTERM: Connect stops its task gracefully, committing its offsets."""
        if self.server is not None:
            self.server.stop()

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.root.glob("connect-*.log")))


class DebeziumPostgres:
    """PostgreSQL (logical decoding) and Connect running Debezium's PostgreSQL connector against
    ``bootstrap``. ``prepare(pg)`` runs before the connector starts (the tables its snapshot reads)."""

    def __init__(self, root: Path, bootstrap: str, prefix: str, prepare: Any = None) -> None:
        self.prefix, self.bootstrap = prefix, bootstrap
        self.pg = Postgres(PG_SETTINGS)
        self.connect: KafkaConnect | None = None
        try:
            if prepare is not None:
                prepare(self.pg)
            self.connect = KafkaConnect(root / "connect", bootstrap,
                                        postgres_connector(f"{prefix}-connector", prefix, self.pg, slot=f"{prefix}_slot"))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.connect is not None:
            self.connect.stop()
        self.pg.stop()
