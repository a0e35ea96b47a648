"""`cdc-monitor watch` end to end over Apache Kafka: a kill -9 mid-batch and a restart, then the broker
misbehaving; exact counts on /metrics after each. One watch process reads two servers' traffic, so the
suite starts one watch for all of it, on the session's broker (conftest's ``kafka``, one start for every
test of the worker) and topics no other test writes (``bfaults1``, ``bfsql1``); test 6 kills that broker
and starts it again, and the fixture leaves it running whatever happens.

- ``bfsql1``: faulty SQL Server traffic with transactions and heartbeats, in two bursts
  (transactions span them; the first burst's transaction markers arrive with the second). watch is
  killed -9 between saving its first batch and Spark committing it, the second burst is produced
  while it is down, and it restarts: every fault counted once, the re-run batch skipped, the
  newest transaction overdue past ``--grace``, the newest heartbeat, the state store's size.
- ``bfaults1``: clean MySQL traffic on three topics (no fault of its own): ``customers`` gains a
  partition, ``orders`` loses records to DeleteRecords (what retention does) while watch is paused,
  ``products`` is deleted and created again with fewer records (its offsets go back), then the
  broker is killed and restarted. Pausing watch (SIGSTOP to its process group, the JVM included)
  stands for a monitor that fell behind: what happens meanwhile is certain to happen before it reads.

Finally SIGTERM stops it cleanly. Batch boundaries inside one run: tests/test_watch_engine.py (the
same engine). With CDC_MONITOR_WATCH_ON_CLUSTER=1 the restart moves the watch from local mode to the
session's Spark standalone cluster (executors whose Python has no cdc-monitor but what the driver
ships) and resumes from the same checkpoint (~30 s more: off by default for the suite's time budget).
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
from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.support.broker import ApacheKafka, free_port
from tests.support.promtools import get

SERVER = "bfaults1"
CUSTOMERS, ORDERS, PRODUCTS = (f"{SERVER}.inventory.{t}" for t in ("customers", "orders", "products"))
SQLSERVER = "bfsql1"
JOB = "broker-faults"


def metrics(port: int) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics").decode()):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def total(samples: dict[str, list], name: str, **labels: str) -> float:
    return sum(s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items()))


class World:
    def __init__(self, root, broker: ApacheKafka) -> None:
        self.broker = broker
        self.admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        self.opts = KafkaOptions.from_options({"kafka.bootstrap.servers": self.broker.bootstrap})
        self.traffic = generate("mysql", events=300, seed=21, partitions=3, server=SERVER, transaction_metadata=False)
        recs = self.traffic.records
        self.head, self.tail1, self.tail2 = recs[:len(recs) * 7 // 10], recs[len(recs) * 7 // 10:len(recs) * 17 // 20], \
            recs[len(recs) * 17 // 20:]
        # each fault once; its records are all read before the broker's faults begin
        self.faulty = generate("sqlserver", events=250, seed=17, faults=True, fault_repeats=1, heartbeats=True,
                               server=SQLSERVER)
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

    def faulty_bursts(self) -> list[list]:
        """bfsql1's traffic in two bursts; the first burst's markers come with the second (the
        transaction topic exists from the start): the first batch holds transactions' events and
        no marker of their server yet."""
        recs = self.faulty.records
        first, second = recs[:len(recs) // 2], recs[len(recs) // 2:]
        marker = [r.topic == self.faulty.flavour.transaction_topic for r in first]
        return [[r for r, m in zip(first, marker, strict=True) if not m],
                [r for r, m in zip(first, marker, strict=True) if m] + second]

    def start_watch(self, *extra: str, env: dict | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", self.broker.bootstrap,
             "--topics", rf"{SERVER}\..*|{SQLSERVER}\..*|__debezium-heartbeat\.{SQLSERVER}",
             "--starting-offsets", "earliest", "--checkpoint", str(self.root / "ckpt"),
             "--listen", f"127.0.0.1:{self.port}", "--interval", "1s", "--grace", "3s", "--job", JOB,
             "-X", "socket.timeout.ms=5000", *extra],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True, env=env)

    def pause(self) -> None:
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def metrics(self) -> dict[str, list]:
        return metrics(self.port)

    @property
    def head_read_first(self) -> int:
        """bfaults1's records before test 3 adds customers' third partition."""
        return len(self.head) - _sent(self.head, topic=CUSTOMERS, partition=2)

    def records(self, samples: dict[str, list]) -> int:
        """bfaults1's records counted (bfsql1's are all read by the first test)."""
        return int(total(samples, "cdc_records_total")) - len(self.faulty.records)

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
                             f"findings {findings(last)}, {findings(last, SQLSERVER)}; see {self.log}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self.broker.ensure_running()  # (the session's: the tests after this module use it)


def findings(samples: dict[str, list], server: str = SERVER) -> Counter:
    out: Counter = Counter()
    for s in samples.get("cdc_findings_total", []):
        if s.labels["server"] == server:
            out[s.labels["rule"]] += int(s.value)
    return +out


@pytest.fixture(scope="module")
def world(request, tmp_path_factory, kafka):
    w = World(tmp_path_factory.mktemp("broker-faults"), kafka)
    try:
        # customers starts with two partitions: its third partition's records wait for it (test 3)
        for topic, n in ((CUSTOMERS, 2), (ORDERS, 3), (PRODUCTS, 3)):
            w.create(topic, n)
        w.produce(r for r in w.head if not (r.topic == CUSTOMERS and r.partition == 2))
        first, second = w.faulty_bursts()
        produce_traffic(w.faulty, w.opts, first)
        # kill -9 right after the driver saved its first batch, before Spark committed it: on restart
        # Spark runs that batch again (its state store from the version before) and the driver skips it
        w.start_watch(env=dict(os.environ, CDC_MONITOR_WATCH_CRASH_AFTER_SAVE="1"))
        assert w.proc.wait(400) == -signal.SIGKILL  # the first batch, cold: ~100 s alone, more on a loaded machine
        produce_traffic(w.faulty, w.opts, second)  # produced while the monitor is down
        on_cluster = os.environ.get("CDC_MONITOR_WATCH_ON_CLUSTER") == "1"
        w.start_watch(*(request.getfixturevalue("spark_cluster")["args"] if on_cluster else []))
        yield w
    finally:
        w.stop()


def _sent(records, **where) -> int:
    return sum(1 for r in records if all(getattr(r, k) == v for k, v in where.items()))


def test_1_a_kill_mid_batch_and_a_restart_count_every_record_and_fault_once(world):
    expected = world.head_read_first
    after = world.wait(lambda m: world.records(m) >= expected, f"{expected} records counted", timeout=300)
    # counters continued from the checkpoint: nothing lost, nothing counted twice
    assert world.records(after) == expected and findings(after) == Counter()
    assert findings(after, SQLSERVER) == Counter(d["rule"] for d in label_dicts(world.faulty))
    assert total(after, "cdc_monitor_up", job=JOB) == 1
    # the connector's newest heartbeat, for the stalled-server alert (idle is not stalled)
    beats = [r.value["ts_ms"] for r in world.faulty.records if r.topic.startswith("__debezium-heartbeat.")]
    assert total(after, "cdc_last_heartbeat_timestamp_seconds", server=SQLSERVER) == max(beats) / 1000


def test_2_the_batch_spark_runs_again_is_skipped_and_the_newest_transaction_is_overdue(world):
    # Debezium's newest transaction stays open; past the 3 s grace it shows as overdue. Spark ran the
    # batch it had not committed again, and the driver skipped it
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        samples = world.metrics()
        if (total(samples, "cdc_window_transactions", status="overdue", server=SQLSERVER) == 1
                and "was already applied; skipped" in world.log.read_text()
                and total(samples, "cdc_monitor_last_success_timestamp_seconds", job=JOB) > time.time() - 90
                and total(samples, "cdc_monitor_state_rows", job=JOB) > 0):  # reported after the batch
            break
        time.sleep(0.5)
    else:
        raise AssertionError("no overdue transaction, skipped re-run, completed window or state size reported")
    assert total(samples, "cdc_window_transactions", status="overdue") == 1  # bfaults1 has no transactions
    assert world.records(samples) == world.head_read_first  # none counted twice
    # the state lives in Spark's state store: its size is reported, the driver holds no per-key state
    assert total(samples, "cdc_monitor_state_driver_rss_bytes", job=JOB) > 0


def test_3_a_partition_added_is_picked_up(world):
    world.admin.create_partitions([NewPartitions(CUSTOMERS, 3)])[CUSTOMERS].result(30)
    world.produce(r for r in world.head if r.topic == CUSTOMERS and r.partition == 2)
    after = world.wait(lambda m: world.records(m) >= len(world.head), "the new partition's records counted")
    assert world.records(after) == len(world.head) and findings(after) == Counter()
    events = sum(int(s.value) for s in after["cdc_events_total"] if s.labels["table"] == "inventory.customers")
    assert events == sum(1 for r in world.head if r.topic == CUSTOMERS and r.value is not None)  # tombstones aside


def test_4_records_deleted_before_watch_reads_them_are_records_lost(world):
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
    after = world.wait(lambda m: findings(m).get("records_lost", 0) >= lost and world.records(m) >= expected,
                       "the deleted offsets reported")
    assert findings(after) == Counter({"records_lost": lost})  # one per offset skipped, nothing else
    assert world.records(after) == expected


def test_5_a_topic_created_again_is_an_offsets_reset_without_false_ordering_findings(world):
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
    expected = world.records(before) + len(again)
    after = world.wait(lambda m: world.records(m) >= expected and findings(m).get("offsets_reset", 0) >= 3,
                       "the reset reported and the topic read again")
    assert world.records(after) == expected
    assert findings(after) - findings(before) == Counter({"offsets_reset": 3})  # one per partition, no ordering


def test_6_the_broker_killed_and_restarted_mid_stream(world):
    before = world.metrics()
    failures = total(before, "cdc_monitor_window_failures_total", job=JOB)
    world.broker.kill()
    down = world.wait(lambda m: total(m, "cdc_monitor_window_failures_total", job=JOB) > failures,
                      "a failed window while the broker is down", timeout=120)
    assert total(down, "cdc_monitor_up", job=JOB) == 0  # still serving /metrics, marked unhealthy
    assert world.records(down) == world.records(before)
    world.broker.start()
    # customers' later records, and orders' (not partition 0's: test 4 deleted creates there, its
    # later updates would rightly be missing_create)
    sent = [r for r in world.tail1 if r.topic == CUSTOMERS]
    sent += [r for r in world.tail2 if r.topic == CUSTOMERS or (r.topic == ORDERS and r.partition != 0)]
    world.produce(sent)
    expected = world.records(before) + len(sent)
    after = world.wait(lambda m: world.records(m) >= expected and total(m, "cdc_monitor_up", job=JOB) == 1,
                       "resumed after the broker came back")
    assert world.records(after) == expected  # nothing lost, nothing counted twice
    assert findings(after) == findings(before)
    assert findings(after, SQLSERVER) == findings(before, SQLSERVER)


def test_7_sigterm_stops_it_cleanly(world):
    world.proc.send_signal(signal.SIGTERM)  # a graceful stop
    assert world.proc.wait(60) == 0


def _latest():
    from confluent_kafka.admin import OffsetSpec

    return OffsetSpec.latest()


def _end(world: World, topic: str, partition: int) -> int:
    tp = TopicPartition(topic, partition)
    return world.admin.list_offsets({tp: _latest()})[tp].result(30).offset
