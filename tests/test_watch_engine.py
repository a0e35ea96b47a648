"""watch's micro-batch engine without a broker: a faulty capture cut into batches (as a stream
would deliver it) must yield every labelled fault exactly once, across batch boundaries."""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import UTC, datetime

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from cdc_monitor.checks import suite
from cdc_monitor.config import ScanConfig
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts, write_capture
from cdc_monitor.generator.wire_faults import AVRO_WIRE_RULES
from cdc_monitor.sources.capture import read_capture
from cdc_monitor.watch.batch import WatchSettings, decoded_stream, overdue, process_batch
from cdc_monitor.watch.carry import FACT, FOUND_COLUMN, FOUND_TYPE, REST, carry_input
from cdc_monitor.watch.state import StateStore, WatchState
from tests.registry_server import RegistryServer
from tests.support.watch_stream import batches_prorated, run_stream, stage


def rule_totals(state: WatchState) -> Counter:
    totals: Counter = Counter()
    for key, n in state.totals["findings"].items():
        totals[key.split("|")[3]] += n
    return totals


def avro_records(spark, traffic, registry_url: str):
    """Kafka rows of Avro traffic in the Confluent wire format, its schemas registered at ``registry_url``."""
    from cdc_monitor.generator.produce import _encoder
    from cdc_monitor.sources.base import KAFKA_SCHEMA

    encode = _encoder(traffic, {"url": registry_url})
    rows = []
    for rec in traffic.records:
        key, value = encode(rec)
        headers = [(k, v.encode()) for k, v in rec.headers] if rec.headers else None
        rows.append((key, value, rec.topic, rec.partition or 0, rec.offset,
                     datetime.fromtimestamp(rec.ts / 1000, UTC), 0, headers))
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


@pytest.mark.parametrize("flavour,cuts", [("mysql", 2)])  # sqlserver in bursts: tests/test_broker_faults.py
def test_every_fault_is_counted_once_across_batches(spark, caps, tmp_path, flavour, cuts):
    """The real streaming query (stateful carry operators on RocksDB) over micro-batches cut as a
    per-trigger cap cuts them, the transaction topics read ahead (whole in the first batch: a transaction whose END comes
    before its events is judged once they are in, not before). Beside the JSON flavour, PostgreSQL
    traffic in Avro (Confluent wire format, schemas from a loopback registry, wire faults included):
    decoded in the stream before its keys and transactions are grouped."""
    traffic = generate(flavour, events=600, seed=13, faults=True, heartbeats=True)
    avro = generate("postgresql", events=200, seed=301, faults=True, fault_repeats=1, value_format="avro",
                    server="avro_pg")
    write_capture(traffic, tmp_path / "f.jsonl")
    labels = label_dicts(traffic) + label_dicts(avro)
    assert {d["rule"] for d in labels} >= set(AVRO_WIRE_RULES)
    expected = Counter(d["rule"] for d in labels)
    with RegistryServer() as registry:
        records = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.unionByName(
            avro_records(spark, avro, registry.url)).cache()
        # the checks spread over partitions, as in a large batch (more than one_partition_rows;
        # test_broker_faults.py: small batches, in one partition)
        settings = WatchSettings(scan=ScanConfig(schema_registry={"url": registry.url}, one_partition_rows=0))
        batches = batches_prorated(records, cuts, ahead=True)
        # each data partition's last record comes after a restart: until then the transactions whose
        # events may still be on their way stay held (a quiet partition has not passed their END)
        newest = F.row_number().over(Window.partitionBy("topic", "partition").orderBy(F.col("offset").desc())) == 1
        batches[-1] = batches[-1].withColumn("_last", newest & ~F.col("topic").endswith(".transaction")).cache()
        last = batches[-1].where("_last").drop("_last")
        batches[-1] = batches[-1].where(~F.col("_last")).drop("_last")
        stage(batches, tmp_path / "in")
        first, _ = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings)
        # a restart from the checkpoint (Spark's state store resumes), held transactions now past their wait
        settings = dataclasses.replace(settings, await_ms=0)
        stage([last], tmp_path / "in", first=cuts)
        second, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings)
    assert [o.batch_id for o in first + second] == list(range(cuts + 1))
    assert sum(o.records for o in first + second) == records.count()
    assert rule_totals(state) == expected  # heartbeats in the stream change nothing
    beats = [r.value["ts_ms"] for r in traffic.records if r.topic.startswith("__debezium-heartbeat.")]
    assert beats and state.heartbeats == {traffic.flavour.server: max(beats)}  # kept across batches
    # where each partition goes on from after a restart (watch/catchup.py: the backlog then)
    ends = records.groupBy("topic", "partition").agg(F.max("offset").alias("hi")).collect()
    assert {k: h.next_offset for k, h in state.partitions.items()} == {f"{r['topic']}|{r['partition']}": r["hi"] + 1
                                                                      for r in ends}
    # a batch Spark re-runs (it crashed before committing) is not applied twice
    store = StateStore(tmp_path / "ckpt")
    again, after = process_batch(caps, last, cuts, store.load(), store, settings)
    assert again.skipped and after.totals == state.totals
    # each server's newest transaction is open, and overdue once past the grace period
    assert len(state.open_txns) == 2
    assert overdue(state, grace_ms=0) == {traffic.flavour.server: 1, "avro_pg": 1}
    assert overdue(state, grace_ms=3_600_000) == {}


def _refuse(*args, **kwargs):
    raise AssertionError("a check was planned whose input the window lacks")


def test_a_stream_without_transactions_or_schemas_counts_every_fault_once(spark, tmp_path, monkeypatch):
    """No transaction metadata (Debezium's default) and JSON without schemas: the batches plan no
    transaction check (their census shows nothing to judge), and every fault is
    still counted once across a batch boundary (cut at the median record time)."""
    traffic = generate("mysql", events=120, seed=21, faults=True, schemas=False, transaction_metadata=False)
    write_capture(traffic, tmp_path / "f.jsonl")
    records = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.cache()
    ts = F.unix_millis("timestamp")
    cut = records.select(F.percentile_approx(ts, 0.5)).first()[0]
    stage([records.where(ts < cut), records.where(ts >= cut)], tmp_path / "in")
    for check in ("transaction_check",):  # planning one fails the batch
        monkeypatch.setattr(suite, check, _refuse)
    outcomes, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", WatchSettings())
    assert len(outcomes) == 2 and sum(o.records for o in outcomes) == records.count()
    assert not any(o.finalized for o in outcomes) and not state.open_txns
    assert rule_totals(state) == Counter(d["rule"] for d in label_dicts(traffic))



def test_a_batch_without_a_servers_markers_leaves_its_open_transactions_open(spark, caps, tmp_path):
    """A quiet database: the connector's newest transaction stays open (its END comes with the next
    BEGIN) while only heartbeats arrive, and the operator's server group is not called (no new
    marker, no timeout yet). A batch of one heartbeat must not close the transaction the driver
    ages for the overdue alert."""
    traffic = generate("mysql", events=200, seed=23, heartbeats=True)
    write_capture(traffic, tmp_path / "f.jsonl")
    beat = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.where(
        F.col("topic").startswith("__debezium-heartbeat.")).limit(1)
    # what the operator emits for it: the record, new (its partition group's row)
    fed = carry_input(beat, WatchSettings().scan, caps)
    out = fed.where(F.col(REST).isNotNull()).select(*FACT, REST, F.lit(None).cast(FOUND_TYPE).alias(FOUND_COLUMN),
                                                     F.lit("new").alias("role"))
    server = traffic.flavour.server
    state = WatchState(batch_id=4, open_txns={f"{server}|txn-7": 1_000.0})
    outcome, after = process_batch(caps, decoded_stream(out, WatchSettings().scan), 5, state, StateStore(tmp_path / "ckpt"),
                                   WatchSettings(), now=2_000.0)
    assert outcome.records == 1 and not outcome.skipped
    assert after.open_txns == {f"{server}|txn-7": 1_000.0}
    assert overdue(after, grace_ms=600_000, now=2_000.0) == {server: 1}



def test_events_read_before_their_servers_first_marker_wait_for_their_transaction(spark, tmp_path):
    """watch starts while the connector writes its first transactions: the transaction topic is
    measured before the data topics, so a batch can hold a transaction's data events and none of
    the server's markers yet. Those events are held (the server's transaction topic is in the
    stream) and the transactions are complete once their markers arrive; clean traffic, no finding."""
    traffic = generate("mysql", events=150, seed=31, schemas=False)
    write_capture(traffic, tmp_path / "f.jsonl")
    records = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.cache()
    ts = F.unix_millis("timestamp")
    cut = records.select(F.percentile_approx(ts, 0.5)).first()[0]
    markers = F.col("topic").endswith(".transaction")
    first = records.where(~markers & (ts < cut))  # half of every data partition, no marker at all
    stage([first, records.subtract(first)], tmp_path / "in")
    server = traffic.flavour.server
    outcomes, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", WatchSettings(transaction_servers=(server,)))
    assert not outcomes[0].finalized  # (the first batch judged no transaction)
    assert rule_totals(state) == Counter()
    txns = {r.txn_id for r in traffic.records if r.txn_id}
    assert state.totals["transactions"] == {f"{server}|complete": len(txns) - 1}  # the newest one stays open
    assert len(state.open_txns) == 1


def test_an_end_read_ahead_waits_for_partitions_that_have_shown_no_transaction_yet(spark, tmp_path):
    """A per-trigger cap reads the transaction topic ahead and each data partition by a share: the
    first batch holds every marker, the data up to the median record time, but of one partition
    only its snapshot records (no event of a transaction). An END whose events lie there is held
    until they arrive, since the topics' partition counts are known (the CLI passes them); clean
    traffic, no finding."""
    from cdc_monitor.generator.produce import topic_partitions

    traffic = generate("postgresql", events=150, seed=41, schemas=False)
    write_capture(traffic, tmp_path / "f.jsonl")
    records = read_capture(spark, [str(tmp_path / "f.jsonl")]).records.cache()
    ts = F.unix_millis("timestamp")
    cut = records.select(F.percentile_approx(ts, 0.5)).first()[0]
    topic = sorted(t for t in topic_partitions(traffic) if ".public." in t)[0]
    lagging = (F.col("topic") == topic) & (F.col("partition") == 0)
    first = records.where(F.col("topic").endswith(".transaction") | ((ts < cut) & ~lagging)
                          | (lagging & (F.get_json_object(F.col("value").cast("string"), "$.op") == "r")))
    stage([first, records.subtract(first)], tmp_path / "in")
    settings = WatchSettings(transaction_servers=(traffic.flavour.server,),
                             topic_partitions=tuple(topic_partitions(traffic).items()))
    _, state = run_stream(spark, tmp_path / "in", tmp_path / "ckpt", settings)
    assert rule_totals(state) == Counter()
    assert len(state.open_txns) == 1
