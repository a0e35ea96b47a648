"""The Kafka source against a real broker (Apache Kafka): planning, reading, windows, streaming, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from cdc_monitor.errors import InputError
from cdc_monitor.pipeline import RUN_FIELDS
from cdc_monitor.sources.base import KAFKA_SCHEMA
from cdc_monitor.sources.kafka.client import BrokerInspector
from cdc_monitor.sources.kafka.options import KafkaOptions
from cdc_monitor.sources.kafka.planner import OffsetRange, plan_ranges
from cdc_monitor.sources.kafka.reader import read_range
from cdc_monitor.sources.kafka.source import read_kafka

T0 = 1_780_000_000_000


def produce(bootstrap: str, topic: str, partitions: int, count: int, first: int = 0, flush_every: int = 7) -> None:
    """Records i = first..first+count-1 in partition i % partitions, timestamp T0 + i s, header n=i,
    sent in several small batches (so the broker holds several batches per partition)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + count):
        producer.produce(topic, key=f"k{i}".encode(), value=json.dumps({"i": i}).encode(), partition=i % partitions,
                         timestamp=T0 + i * 1000, headers=[("n", str(i).encode())])
        if i % flush_every == flush_every - 1:
            producer.flush(10)
    assert producer.flush(10) == 0


def opts(bootstrap: str, **extra: str) -> KafkaOptions:
    return KafkaOptions.from_options({"kafka.bootstrap.servers": bootstrap, **extra})


@pytest.fixture(scope="module")
def numbered(kafka_broker):
    produce(kafka_broker, "numbers.a", 3, 60)
    return kafka_broker


def test_planner_ends_each_partition_after_its_last_record(numbered):
    o = opts(numbered, subscribe="numbers.a")
    with BrokerInspector(o) as insp:
        marks = insp.watermarks([("numbers.a", p) for p in range(3)])
        ranges = plan_ranges(o, insp)
    ends = {r.partition: r.end for r in ranges}
    assert ends == {0: 20, 1: 20, 2: 20}  # 60 records over 3 partitions
    # Apache Kafka's high watermark is that end: the check made for brokers whose mark lags agrees
    assert {p: high for (_, p), (_, high) in marks.items()} == ends


def test_the_end_of_a_partition_being_written_is_found_while_records_keep_coming(kafka_broker):
    """A connector writing while watch plans a batch: the partition may never show its end (records
    keep arriving), so the newest record received is taken as the end, not a timeout (it failed
    the micro-batch). Everything before that end is readable."""
    import threading

    produce(kafka_broker, "busy.t", 1, 5)
    stop = threading.Event()
    produced = [5]  # records handed to the producer so far; each one is delivered by the flush below

    def write() -> None:
        producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
        while not stop.is_set():
            producer.produce("busy.t", key=b"k", value=b"{}", timestamp=T0 + produced[0])
            producer.poll(0)
            produced[0] += 1
            time.sleep(0.002)
        producer.flush(10)

    writer = threading.Thread(target=write)
    writer.start()
    o = opts(kafka_broker, subscribe="busy.t", timeoutSeconds="60")
    try:
        time.sleep(1)
        with BrokerInspector(o) as insp:
            marks = insp.watermarks([("busy.t", 0)])
            # waiting for the end that never shows would raise InputError ("could not find the end") at the timeout
            end = insp.true_ends(marks)[("busy.t", 0)]
            assert writer.is_alive()  # the end was found while records kept coming, not after they stopped
        # the writer goes on past that end before it stops (stopping it at once raced it: 507 > 507)
        deadline = time.monotonic() + 10
        while produced[0] <= end + 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        writer.join()
    assert end >= marks[("busy.t", 0)][1] > 5
    with BrokerInspector(o) as insp:  # the writer went on past that end: it was not the partition's last record
        assert insp.watermarks([("busy.t", 0)])[("busy.t", 0)][1] > end
    assert sum(b.num_rows for b in read_range(o, OffsetRange("busy.t", 0, 0, end))) == end


def test_read_range_returns_every_record_with_its_metadata(numbered):
    o = opts(numbered, subscribe="numbers.a")
    with BrokerInspector(o) as insp:
        ranges = {r.partition: r for r in plan_ranges(o, insp)}
    import pyarrow as pa

    rows = pa.Table.from_batches(list(read_range(o, ranges[1], batch_rows=4))).to_pylist()
    assert [r["offset"] for r in rows] == list(range(20))
    first = rows[0]
    assert first["key"] == b"k1" and json.loads(first["value"]) == {"i": 1}
    assert first["partition"] == 1 and first["topic"] == "numbers.a" and first["timestampType"] == 0
    assert int(first["timestamp"].timestamp() * 1000) == T0 + 1000
    assert first["headers"] == [{"key": "n", "value": b"1"}]


def test_a_stream_range_tells_offsets_deleted_and_offsets_gone_back(kafka_broker):
    """watch's reads (report_gaps): offsets the log no longer holds are one records_lost gap row and
    reading goes on from the log start; a range ending before its start (the partition's offsets
    went back) is an offsets_reset gap row, then the records from the log start. A scan's planned
    window fails instead, saying why."""
    import pyarrow as pa
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from cdc_monitor.sources.kafka.gaps import Gap

    produce(kafka_broker, "gaps.t", 1, 20)
    deleted = TopicPartition("gaps.t", 0, 8)
    admin = AdminClient({"bootstrap.servers": kafka_broker})  # (kept: a collected client drops its request)
    admin.delete_records([deleted])[deleted].result(30)
    o = opts(kafka_broker)

    def rows(rng: OffsetRange) -> list[dict]:
        return pa.Table.from_batches(list(read_range(o, rng, report_gaps=True))).to_pylist()

    lost = rows(OffsetRange("gaps.t", 0, 3, 20))
    assert (lost[0]["offset"], json.loads(lost[0]["value"])) == (Gap.RECORDS_LOST, {"from": 3, "to": 8})
    assert [r["offset"] for r in lost[1:]] == list(range(8, 20))
    back = rows(OffsetRange("gaps.t", 0, 30, 15))
    assert (back[0]["offset"], json.loads(back[0]["value"])) == (Gap.OFFSETS_RESET, {"from": 30, "to": 15})
    assert [r["offset"] for r in back[1:]] == list(range(8, 15))
    with pytest.raises(InputError, match="retention deleted records"):
        list(read_range(o, OffsetRange("gaps.t", 0, 3, 20)))


def test_batch_frame_has_the_kafka_source_columns_and_all_records(spark, numbered):
    frame = read_kafka(spark, {"kafka.bootstrap.servers": numbered, "subscribe": "numbers.a"}).records
    assert frame.schema == KAFKA_SCHEMA
    got = sorted(json.loads(r["value"])["i"] for r in frame.select("value").collect())
    assert got == list(range(60))


@pytest.mark.parametrize("start_s,end_s", [(5.5, 12.5), (0, 3), (40, None), (59, 61), (100, 200)])
def test_time_window_returns_exactly_the_records_inside_it(spark, numbered, start_s, end_s):
    options = {"kafka.bootstrap.servers": numbered, "subscribe": "numbers.a",
               "startingTimestamp": str(int(T0 + start_s * 1000))}
    if end_s is not None:
        options["endingTimestamp"] = str(int(T0 + end_s * 1000))
    frame = read_kafka(spark, options).records
    got = sorted(json.loads(r["value"])["i"] for r in frame.select("value").collect())
    expected = [i for i in range(60) if i * 1000 >= start_s * 1000 and (end_s is None or i * 1000 < end_s * 1000)]
    assert got == expected


def test_last_n_per_partition(spark, numbered):
    frame = read_kafka(spark, {"kafka.bootstrap.servers": numbered, "subscribe": "numbers.a",
                               "lastPerPartition": "2"}).records
    got = sorted(json.loads(r["value"])["i"] for r in frame.select("value").collect())
    assert got == [54, 55, 56, 57, 58, 59]


def test_explicit_offsets(spark, numbered):
    frame = read_kafka(spark, {"kafka.bootstrap.servers": numbered,
                               "startingOffsets": '{"numbers.a": {"0": 18, "1": -1, "2": -2}}',
                               "endingOffsets": '{"numbers.a": {"2": 1}}'}).records
    got = sorted(json.loads(r["value"])["i"] for r in frame.select("value").collect())
    assert got == [2, 54, 57]  # p0 offsets 18, 19; p1 nothing; p2 offset 0


def test_missing_topic_names_the_topic(numbered):
    with pytest.raises(InputError, match=r"topic numbers\.zzz does not exist.*numbers\.a"), \
            BrokerInspector(opts(numbered, subscribe="numbers.zzz")) as insp:
        plan_ranges(insp.opts, insp)


def test_spark_reader_reads_exactly_what_the_python_reader_reads(spark, numbered):
    """The suite's session has Spark's Kafka connector (spark.jars): ``auto`` takes it, and every
    window kind gives the same records, metadata included, as the bundled reader."""
    base = {"kafka.bootstrap.servers": numbered, "subscribe": "numbers.a"}
    windows = [{}, {"startingTimestamp": str(T0 + 5_500), "endingTimestamp": str(T0 + 12_500)},
               {"lastPerPartition": "2"}, {"startingTimestamp": str(T0 + 100_000)}]
    for window in windows:
        python = read_kafka(spark, base | window, reader="python")
        auto = read_kafka(spark, base | window, reader="auto")
        assert (python.description["reader"], auto.description["reader"]) == ("python", "spark")
        assert auto.records.schema == KAFKA_SCHEMA
        rows = [sorted(map(tuple, r.records.collect())) for r in (python, auto)]
        assert rows[0] == rows[1] and (len(rows[0]) > 0) == (window != windows[-1]), window


def test_spark_reader_without_the_connector_exits_2_with_the_fix(numbered):
    proc = run_cli("scan", "--bootstrap-servers", numbered, "--topics", "numbers.a", "--kafka-reader", "spark")
    assert proc.returncode == 2, proc.stderr
    assert "spark-sql-kafka-0-10_2.13" in proc.stderr and "--kafka-reader python" in proc.stderr


def test_stream_restart_from_checkpoint_loses_and_repeats_nothing(spark, kafka_broker, tmp_path):
    from cdc_monitor.sources.kafka.source import register

    register(spark)
    produce(kafka_broker, "stream.a", 2, 30)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run_available_now() -> None:
        query = (spark.readStream.format("cdc_kafka")
                 .option("kafka.bootstrap.servers", kafka_broker).option("subscribe", "stream.a")
                 .option("maxOffsetsPerTrigger", "7").load()
                 .writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None
        return query

    first = run_available_now()
    batches = [p["numInputRows"] for p in first.recentProgress]
    assert max(batches) <= 7 and sum(batches) == 30  # the read limit was honoured
    produce(kafka_broker, "stream.a", 2, 25, first=30)
    run_available_now()  # restart: resumes from the checkpoint
    rows = spark.read.parquet(out).select("topic", "partition", "offset", "value").collect()
    values = sorted(json.loads(r["value"])["i"] for r in rows)
    assert values == list(range(55))  # nothing lost, nothing twice


def run_cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def test_unreachable_broker_exits_2_before_spark_with_a_hint():
    """It gives up (librdkafka alone would retry forever) before starting Spark: a deadline bounds the
    wait, and passing it fails with what hung."""
    from tests.support.broker import free_port

    try:
        proc = run_cli("scan", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "-X", "socket.timeout.ms=5000", timeout=90)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"scan against an unreachable broker was still running after {hung.timeout} s: "
                    f"{(hung.stderr or b'')[-2000:]!r}")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach Kafka at 127.0.0.1" in lines[0] and "--bootstrap-servers" in lines[0]
    assert "starting Spark" not in proc.stderr


def test_missing_topic_cli_exit_2(numbered):
    proc = run_cli("scan", "--bootstrap-servers", numbered, "--topics", "nothing\\..*")
    assert proc.returncode == 2 and "no topic" in proc.stderr and "--topics" in proc.stderr


def test_empty_window_cli_exit_2_before_spark(kafka_broker):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for fut in admin.create_topics([NewTopic("quiet1.db.idle", 2, 1)]).values():
        fut.result(30)
    proc = run_cli("scan", "--bootstrap-servers", kafka_broker, "--topics", r"quiet1\..*")
    assert proc.returncode == 2, proc.stderr
    assert "no records read from the Kafka window" in proc.stderr and "--allow-empty" in proc.stderr
    assert "starting Spark" not in proc.stderr


def test_scan_from_kafka_by_either_reader_equals_scan_of_the_same_records_from_a_capture(spark, scan, kafka_broker, tmp_path):
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import label_dicts, write_capture
    from cdc_monitor.generator.produce import produce_traffic
    from cdc_monitor.pipeline import run_scan

    traffic = generate("postgresql", events=300, seed=11, faults=True, fault_repeats=1)
    produce_traffic(traffic, opts(kafka_broker))
    write_capture(traffic, tmp_path / "pg.jsonl")  # offsets are now the broker's
    from_capture = scan([tmp_path / "pg.jsonl"]).to_json_dict()
    window = {"kafka.bootstrap.servers": kafka_broker, "subscribePattern": r"pgserver1\..*"}
    from_kafka, from_connector = (run_scan(read_kafka(spark, window, reader=reader), ScanConfig(max_findings=100_000))
                                  .to_json_dict() for reader in ("python", "spark"))
    for report in (from_capture, from_kafka, from_connector):
        for name in RUN_FIELDS:
            report.pop(name, None)  # (session: only over Spark Connect)
    assert from_kafka == from_capture
    assert from_connector == from_kafka  # Spark's own Kafka connector: the same report
    labelled = {(d["rule"], d["topic"], d["partition"], d["offset"]) for d in label_dicts(traffic)}
    found = {(f["rule"], f["topic"], f["partition"], f["offset"]) for f in from_kafka["findings"]}
    assert labelled and labelled <= found


def test_cli_generate_to_kafka_then_scan_a_time_window_on_a_cluster(kafka_broker, spark_cluster, spark, tmp_path):
    """Scanned on the session's Spark standalone cluster, whose executors' Python has no
    cdc-monitor: the Kafka reader runs there, so this works only with the package the driver
    ships; report and metrics equal local mode's over a capture of the same records (Kafka and
    capture scans are equal: test_scan_from_kafka_by_either_reader_equals_scan_of_the_same_records_from_a_capture)."""
    from prometheus_client.parser import text_string_to_metric_families

    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import label_dicts, write_capture
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sinks.prometheus import MetricsSnapshot, render
    from cdc_monitor.sources.capture import read_capture
    from tests.support.spark_cluster import interpreter_starts

    expected = set()
    for flavour, seed in (("oracle", 4),):  # no other test writes these topics
        labels = tmp_path / f"{flavour}.labels.jsonl"
        proc = run_cli("generate", "--flavour", flavour, "--events", "500", "--faults", "--seed", str(seed),
                       "--bootstrap-servers", kafka_broker, "--labels", str(labels))
        assert proc.returncode == 0, proc.stderr
        assert "produced" in proc.stderr
        expected |= {(d["rule"], d["topic"], d["partition"], d["offset"])
                     for d in map(json.loads, labels.read_text().splitlines())}
    topics, prom = r"oracle1\..*", tmp_path / "cdc.prom"
    starts = interpreter_starts(spark_cluster["python"])
    proc = run_cli("scan", "--bootstrap-servers", kafka_broker, "--topics", topics, "--start", "2000-01-01T00:00:00Z",
                   "--output", "json", "--quiet", "--textfile", str(prom), *spark_cluster["args"], timeout=400)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert interpreter_starts(spark_cluster["python"]) > starts  # the executors' Python read Kafka
    report = json.loads(proc.stdout)
    found = {(f["rule"], f["topic"], f["partition"], f["offset"]) for f in report["findings"]}
    assert expected and expected <= found
    assert report["summary"]["transaction_markers"] > 0  # oracle1.transaction was found by its prefix

    traffic = generate("oracle", events=500, seed=4, faults=True)  # what the CLI produced: the same labels
    assert {(d["rule"], d["topic"], d["partition"], d["offset"]) for d in label_dicts(traffic)} == expected
    write_capture(traffic, tmp_path / "oracle.jsonl")
    local = run_scan(read_capture(spark, [str(tmp_path / "oracle.jsonl")]), ScanConfig())

    def data_samples(text: str) -> dict:  # not the run's own (durations, last success time)
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text)
                for s in fam.samples if not s.name.startswith("cdc_monitor_")}

    assert {k: v for k, v in report.items() if k not in RUN_FIELDS} == {
        k: v for k, v in local.to_json_dict().items() if k not in RUN_FIELDS}
    local_metrics = data_samples(render(MetricsSnapshot.from_outcome(local, "cdc-monitor")).decode())
    assert data_samples(prom.read_text()) == local_metrics and len(local_metrics) > 50
