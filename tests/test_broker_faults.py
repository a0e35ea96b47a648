"""`cdc-monitor watch` while Apache Kafka misbehaves: one watch process over one broker of its own,
faults in turn, exact counts on /metrics after each.

Clean MySQL traffic on three topics (no fault of its own): ``customers`` gains a partition,
``orders`` loses records to DeleteRecords (what retention does) while watch is paused,
``products`` is deleted and created again with fewer records (its offsets go back), then the
broker is killed and restarted. Pausing watch (SIGSTOP to its process group, the JVM included)
stands for a monitor that fell behind: what happens meanwhile is certain to happen before it reads.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from cdc_monitor.generator import generate
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.support.broker import ApacheKafka, free_port
from tests.test_watch import metrics, total

SERVER = "faults1"
CUSTOMERS, ORDERS, PRODUCTS = (f"{SERVER}.inventory.{t}" for t in ("customers", "orders", "products"))


class World:
    def __init__(self, root) -> None:
        self.broker = ApacheKafka(root / "kafka")
        self.admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        self.opts = KafkaOptions.from_options({"kafka.bootstrap.servers": self.broker.bootstrap})
        self.traffic = generate("mysql", events=300, seed=21, partitions=3, server=SERVER, transaction_metadata=False)
        recs = self.traffic.records
        self.head, self.tail1, self.tail2 = recs[:len(recs) * 7 // 10], recs[len(recs) * 7 // 10:len(recs) * 17 // 20], \
            recs[len(recs) * 17 // 20:]
        self.port = free_port()
        self.log = root / "watch.log"
        self.proc: subprocess.Popen | None = None
        self.root = root

    def create(self, topic: str, partitions: int) -> None:
        deadline = time.monotonic() + 60
        while True:  # a topic just deleted is still being removed for a moment
            try:
                self.admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def produce(self, records) -> None:
        """``records`` in generation order, to topics as they are (the slice's own partitions only)."""
        part = dataclasses.replace(self.traffic, records=list(records), partitions=1)
        produce_traffic(part, self.opts)

    def start_watch(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", self.broker.bootstrap,
             "--topics", rf"{SERVER}\..*", "--starting-offsets", "earliest", "--checkpoint", str(self.root / "ckpt"),
             "--listen", f"127.0.0.1:{self.port}", "--interval", "1s", "--grace", "1h", "--job", "faults",
             "-X", "socket.timeout.ms=5000"],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)

    def pause(self) -> None:
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def metrics(self) -> dict[str, list]:
        return metrics(self.port)

    def wait(self, done: Callable[[dict[str, list]], bool], what: str, timeout: float = 240) -> dict[str, list]:
        deadline = time.monotonic() + timeout
        last: dict[str, list] = {}
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"watch exited; see {self.log}"
            try:
                last = self.metrics()
            except OSError:
                time.sleep(0.5)
                continue
            if done(last):
                return last
            time.sleep(0.5)
        raise AssertionError(f"{what} within {timeout}s: records {total(last, 'cdc_records_total')}, "
                             f"findings {findings(last)}; see {self.log}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self.broker.stop()


def findings(samples: dict[str, list]) -> Counter:
    out: Counter = Counter()
    for s in samples.get("cdc_findings_total", []):
        out[s.labels["rule"]] += int(s.value)
    return +out


def records(samples: dict[str, list]) -> int:
    return int(total(samples, "cdc_records_total"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("broker-faults"))
    # customers starts with two partitions: its third partition's records wait for it (test 2)
    for topic, n in ((CUSTOMERS, 2), (ORDERS, 3), (PRODUCTS, 3)):
        w.create(topic, n)
    w.produce(r for r in w.head if not (r.topic == CUSTOMERS and r.partition == 2))
    w.start_watch()
    yield w
    w.stop()


def _sent(records, **where) -> int:
    return sum(1 for r in records if all(getattr(r, k) == v for k, v in where.items()))


def test_1_steady_traffic_is_counted_exactly(world):
    expected = len(world.head) - _sent(world.head, topic=CUSTOMERS, partition=2)
    after = world.wait(lambda m: records(m) >= expected, f"{expected} records counted", timeout=300)
    assert records(after) == expected and findings(after) == Counter()
    assert total(after, "cdc_monitor_up", job="faults") == 1


def test_2_a_partition_added_is_picked_up(world):
    world.admin.create_partitions([NewPartitions(CUSTOMERS, 3)])[CUSTOMERS].result(30)
    world.produce(r for r in world.head if r.topic == CUSTOMERS and r.partition == 2)
    after = world.wait(lambda m: records(m) >= len(world.head), "the new partition's records counted")
    assert records(after) == len(world.head) and findings(after) == Counter()
    events = sum(int(s.value) for s in after["cdc_events_total"] if s.labels["table"] == "inventory.customers")
    assert events == sum(1 for r in world.head if r.topic == CUSTOMERS and r.value is not None)  # tombstones aside


def test_3_records_deleted_before_watch_reads_them_are_records_lost(world):
    sent = [r for r in world.tail1 if r.topic == ORDERS]
    lost = _sent(sent, partition=0)
    assert lost and lost < len(sent)
    world.pause()
    try:
        world.produce(sent)
        end = _end(world, ORDERS, 0)
        world.admin.delete_records([TopicPartition(ORDERS, 0, end)])[TopicPartition(ORDERS, 0, end)].result(30)
    finally:
        world.resume()
    expected = len(world.head) + len(sent) - lost
    after = world.wait(lambda m: findings(m).get("records_lost", 0) >= lost and records(m) >= expected,
                       "the deleted offsets reported")
    assert findings(after) == Counter({"records_lost": lost})  # one per offset skipped, nothing else
    assert records(after) == expected


def test_4_a_topic_created_again_is_an_offsets_reset_without_false_ordering_findings(world):
    again = [r for r in world.head if r.topic == PRODUCTS]
    before = world.metrics()
    world.pause()
    try:
        world.admin.delete_topics([PRODUCTS])[PRODUCTS].result(30)
        world.create(PRODUCTS, 3)
        # the same events again: every partition ends where watch's offset is (offsets alone would
        # show nothing new: the topic's new id tells), and every key's events repeat positions its
        # carried history has already passed
        world.produce(again)
    finally:
        world.resume()
    expected = records(before) + len(again)
    after = world.wait(lambda m: records(m) >= expected and findings(m).get("offsets_reset", 0) >= 3,
                       "the reset reported and the topic read again")
    assert records(after) == expected
    assert findings(after) - findings(before) == Counter({"offsets_reset": 3})  # one per partition, no ordering


def test_5_the_broker_killed_and_restarted_mid_stream(world):
    before = world.metrics()
    failures = total(before, "cdc_monitor_window_failures_total", job="faults")
    world.broker.kill()
    down = world.wait(lambda m: total(m, "cdc_monitor_window_failures_total", job="faults") > failures,
                      "a failed window while the broker is down", timeout=120)
    assert total(down, "cdc_monitor_up", job="faults") == 0  # still serving /metrics, marked unhealthy
    assert records(down) == records(before)
    world.broker.start()
    # customers' later records, and orders' (not partition 0's: test 3 deleted creates there, its
    # later updates would rightly be missing_create)
    sent = [r for r in world.tail1 if r.topic == CUSTOMERS]
    sent += [r for r in world.tail2 if r.topic == CUSTOMERS or (r.topic == ORDERS and r.partition != 0)]
    world.produce(sent)
    expected = records(before) + len(sent)
    after = world.wait(lambda m: records(m) >= expected and total(m, "cdc_monitor_up", job="faults") == 1,
                       "resumed after the broker came back")
    assert records(after) == expected  # nothing lost, nothing counted twice
    assert findings(after) == findings(before)


def _latest():
    from confluent_kafka.admin import OffsetSpec

    return OffsetSpec.latest()


def _end(world: World, topic: str, partition: int) -> int:
    tp = TopicPartition(topic, partition)
    return world.admin.list_offsets({tp: _latest()})[tp].result(30).offset
