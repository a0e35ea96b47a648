"""A real Apache Kafka broker for tests: one KRaft node (broker and controller) on loopback ports,
started from the jars scripts/jars.sh resolves from Maven Central (.cache/jars/kafka-broker), its
log directory in a temp folder; stopped (or killed, and restarted on the same ports and data) by
its PID."""

from __future__ import annotations

import base64
import socket
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.support.process import ServerProcess

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "jars"
JARS = CACHE / "kafka-broker"
# a small broker: the tests' topics are tiny; records are kept whatever their (generated, past) timestamps;
# retention is checked often (the broker-fault tests set it per topic)
PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={logs}
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=2
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=2
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
log.retention.check.interval.ms=1000
num.network.threads=2
num.io.threads=2
background.threads=2
"""
JVM = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Kafka's reserved ids (org.apache.kafka.common.Uuid: ZERO_UUID, METADATA_TOPIC_ID), never drawn
RESERVED_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})


def kafka_uuid_text(u: uuid.UUID) -> str:
    """``u`` as Kafka writes a Uuid: URL-safe base64 of its 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def random_cluster_id(draw: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id as Kafka's ``Uuid.randomUuid()`` draws one (``kafka-storage random-uuid``): a
    random UUID, drawn again while it is reserved or its text starts with ``-``. One text in 64 starts
    with ``-`` (62 and 63 of 64 are ``-`` and ``_``), and StorageTool reads ``format -t -4g6q...`` as an
    option."""
    while True:
        u = draw()
        text = kafka_uuid_text(u)
        if u not in RESERVED_IDS and not text.startswith("-"):
            return text


def broker_classpath() -> str:
    if not (JARS / ".resolved").exists():
        raise RuntimeError(f"Apache Kafka's jars are not in {JARS}: run bash scripts/test.sh (or bash scripts/jars.sh)")
    return f"{JARS}/*"


def spark_kafka_jars() -> list[str]:
    """Spark's Kafka connector and what it needs beyond Spark (scripts/jars.sh), for spark.jars."""
    folder = CACHE / "spark-kafka"
    if not (folder / ".resolved").exists():
        raise RuntimeError(f"Spark's Kafka connector is not in {folder}: run bash scripts/test.sh (or bash scripts/jars.sh)")
    return sorted(str(j) for j in folder.glob("*.jar"))


class ApacheKafka:
    """``bootstrap``: its address. ``kill()`` (SIGKILL) and ``start()`` again keep the ports and data."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port, self.controller = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        root.mkdir(parents=True, exist_ok=True)
        self.config = root / "server.properties"
        self.config.write_text(PROPERTIES.format(port=self.port, controller=self.controller, logs=root / "data"))
        subprocess.run(["java", *JVM, "-cp", broker_classpath(), "kafka.tools.StorageTool", "format", "-t", random_cluster_id(),
                        "-c", str(self.config)], check=True, capture_output=True, timeout=120)
        self.server: ServerProcess | None = None
        self.starts = 0
        self.start()

    def start(self) -> None:
        self.starts += 1
        self.server = ServerProcess(["java", *JVM, "-cp", broker_classpath(), "kafka.Kafka", str(self.config)],
                                    self.root / f"broker-{self.starts}.log", self._ready, "Apache Kafka", timeout=90)

    def _ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            pass
        if not AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=5).brokers:
            raise RuntimeError("no broker in the metadata yet")

    def kill(self) -> None:
        """SIGKILL, as a crash: no clean shutdown."""
        if self.server is not None:
            self.server.kill()

    def ensure_running(self) -> None:
        """Started again if it was killed (a test that kills the session's broker leaves it running)."""
        if self.server is None or self.server.proc.poll() is not None:
            self.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
