"""One real Debezium world for the suite, built once: the pipeline of tests/support/debezium.py, its
initial snapshot, the clean workload, then a connector crash: the task restarted gracefully (its
offsets committed), more transactions streamed, Connect killed with SIGKILL, more transactions
committed while it is down, Connect started again. Debezium re-sends what it streamed after its
last committed offset. Each phase's end is a Kafka record time, so a scan can read the clean
traffic alone (``--end``) or all of it.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import debezium_workload as w
from tests.support.debezium import DebeziumPostgres

PREFIX = "dbzpg"
TRANSACTION_TOPIC = f"{PREFIX}.transaction"
HEARTBEAT_TOPIC = f"__debezium-heartbeat.{PREFIX}"
TOPICS = rf"{PREFIX}\..*|__debezium-heartbeat\.{PREFIX}"


def data_topic(table: str) -> str:
    return f"{PREFIX}.{table}"


@dataclass
class World:
    pipeline: DebeziumPostgres
    bootstrap: str
    clean_end_ms: int = 0  # every record of the snapshot and the clean workload is at or before it
    crash_end_ms: int = 0
    clean: list[w.Txn] = field(default_factory=list)
    resent: list[w.Txn] = field(default_factory=list)  # streamed before the kill, sent again after it
    down: list[w.Txn] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def stop(self) -> None:
        self.pipeline.stop()

    def expected_records(self, replayed: bool) -> Counter[str]:
        """Records per topic (data events and tombstones; markers on the transaction topic)."""
        txns = [*self.clean, *self.resent, *self.down] if replayed else self.clean
        out: Counter[str] = Counter()
        snapshot = Counter(w.SNAPSHOT)
        for table, n in (snapshot + w.events(txns) + w.tombstones(txns)).items():
            out[data_topic(table)] += n
        out[TRANSACTION_TOPIC] = 2 * w.transactions(txns)
        if replayed:
            for table, n in (w.events(self.resent) + w.tombstones(self.resent)).items():
                out[data_topic(table)] += n
            out[TRANSACTION_TOPIC] += 2 * w.transactions(self.resent)
        return out


def _high_watermarks(bootstrap: str, topics: list[str]) -> Counter[str]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "debezium-world", "enable.auto.commit": False})
    try:
        out: Counter[str] = Counter()
        listed = consumer.list_topics(timeout=10).topics
        for topic in topics:
            if topic in listed:
                for p in listed[topic].partitions:
                    out[topic] += consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        return out
    finally:
        consumer.close()


def wait_for(bootstrap: str, expected: Counter[str], pipeline: DebeziumPostgres, timeout: float = 90) -> None:
    """Until every topic holds exactly the expected records (more is a failure, not a wait)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = _high_watermarks(bootstrap, list(expected))
        if seen == expected:
            return
        if any(seen[t] > n for t, n in expected.items()) or time.monotonic() > deadline:
            connect = pipeline.connect.logs()[-3000:] if pipeline.connect else ""
            raise AssertionError(f"topics hold {dict(seen)}, expected {dict(expected)}\n{connect}")
        time.sleep(0.25)


def _run(pipeline: DebeziumPostgres, txns: list[w.Txn]) -> None:
    for t in txns:
        pipeline.pg.sql(t.sql)


def build(root: Path, bootstrap: str) -> World:
    started = time.monotonic()
    pipeline = DebeziumPostgres(root, bootstrap, PREFIX, prepare=lambda pg: pg.sql(w.SCHEMA_SQL))
    world = World(pipeline, bootstrap, clean=w.clean_workload(), resent=w.before_crash(), down=w.while_down())
    try:
        world.timings["start"] = time.monotonic() - started
        connect = pipeline.connect
        assert connect is not None
        _run(pipeline, world.clean)
        wait_for(bootstrap, world.expected_records(replayed=False), pipeline)
        time.sleep(0.05)
        world.clean_end_ms = int(time.time() * 1000)
        time.sleep(0.05)
        world.timings["clean"] = time.monotonic() - started
        # the crash: offsets committed (a graceful task restart), more streamed, then SIGKILL
        connect.restart_task()
        _run(pipeline, world.resent)
        before = world.expected_records(replayed=False)
        for table, n in (w.events(world.resent) + w.tombstones(world.resent)).items():
            before[data_topic(table)] += n
        before[TRANSACTION_TOPIC] += 2 * w.transactions(world.resent)
        wait_for(bootstrap, before, pipeline)
        connect.kill()
        _run(pipeline, world.down)
        connect.start()
        wait_for(bootstrap, world.expected_records(replayed=True), pipeline)
        time.sleep(0.05)
        world.crash_end_ms = int(time.time() * 1000)
        world.timings["crash"] = time.monotonic() - started
        return world
    except BaseException:
        world.stop()
        raise
