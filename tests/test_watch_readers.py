"""watch through Spark's own Kafka connector (on the suite's session) on the real broker: the same
stateful query and engine as the bundled reader's (watch/stream.py, watch/carry.py,
watch/batch.py), every record, event and fault counted exactly once."""

from __future__ import annotations

from collections import Counter

from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from cdc_monitor.vocabulary import OPS
from cdc_monitor.watch.stream import open_stream, subscribe_pattern
from tests.support.watch_stream import run_stream, stream_settings


def test_subscribe_pattern_selects_what_the_bundled_reader_selects():
    import re

    names = ["s1.db.a", "s1.db.b", "s1.transaction", "s2.db.a", "__consumer_offsets", "connect-offsets",
             "__debezium-heartbeat.s1", "_schemas"]
    chosen = {"subscribePattern": r"s1\.db\..*"}
    pattern = subscribe_pattern(chosen, ["s1.db.a", "s1.db.b", "s1.transaction"])
    assert [n for n in names if re.fullmatch(pattern, n)] == ["s1.db.a", "s1.db.b", "s1.transaction"]
    every = subscribe_pattern({}, [])
    assert [n for n in names if re.fullmatch(every, n)] == ["s1.db.a", "s1.db.b", "s1.transaction", "s2.db.a",
                                                             "__debezium-heartbeat.s1"]


def test_watch_through_spark_kafka_connector_counts_exactly(spark, kafka_broker, tmp_path):
    traffic = generate("postgresql", events=250, seed=31, faults=True, fault_repeats=1, server="readers1")
    opts = KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker})
    produce_traffic(traffic, opts)
    options = {"kafka.bootstrap.servers": kafka_broker, "subscribePattern": r"readers1\..*",
               "startingOffsets": "earliest"}
    settings, topics = stream_settings(options)
    # Spark's connector: the bundled reader's exact counts on the same kind of traffic are
    # tests/test_broker_faults.py's (one reader per test: a run is ~30 s)
    _, state = run_stream(spark, None, tmp_path / "ckpt", settings, stream=open_stream(spark, options, "spark", topics))
    assert state.totals["records"][""] == len(traffic.records)
    found = Counter()
    for key, n in state.totals["findings"].items():
        found[key.split("|")[3]] += n
    assert +found == Counter(d["rule"] for d in label_dicts(traffic))
    events = Counter()  # change events by op (a faulty op is a finding above)
    for key, n in state.totals["events"].items():
        if key.split("|")[2] in OPS:
            events[key.split("|")[2]] += n
    sent = Counter(r.value["op"] for r in traffic.records
                   if isinstance(r.value, dict) and r.value.get("op") in OPS and not r.topic.endswith(".transaction"))
    assert events == sent
