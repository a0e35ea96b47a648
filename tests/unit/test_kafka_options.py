"""Kafka option parsing, planning helpers and flag mapping: pure, no broker, no Spark."""

from __future__ import annotations

import pytest

from cdc_monitor.errors import UsageError
from cdc_monitor.sources.inputs import KafkaFlags, parse_time_ms
from cdc_monitor.sources.kafka.datasource import cap_offsets
from cdc_monitor.sources.kafka.options import EARLIEST, KafkaOptions, redact
from cdc_monitor.sources.kafka.planner import OffsetRange, transaction_topics
from cdc_monitor.sources.kafka.source import spark_reader_options

BS = {"kafka.bootstrap.servers": "b:9092"}


def test_defaults_and_passthrough():
    o = KafkaOptions.from_options(BS | {"kafka.security.protocol": "SASL_SSL", "subscribe": "a, b"})
    assert o.bootstrap_servers == "b:9092" and o.topics == ("a", "b") and o.starting == EARLIEST
    assert o.consumer_conf()["security.protocol"] == "SASL_SSL"
    assert o.consumer_conf()["enable.auto.commit"] is False


@pytest.mark.parametrize("bad,message", [
    ({}, "no Kafka brokers"),
    ({"subscribe": "a", "subscribePattern": "a.*"}, "not both"),
    ({"subscribePattern": "("}, "invalid"),
    ({"startingOffsets": "{nope"}, "JSON like"),
    ({"kafka.group.id": "g"}, "managed by cdc-monitor"),
    ({"startingTimestamp": "10", "endingTimestamp": "5"}, "empty"),
    ({"startingTimestamp": "10", "lastPerPartition": "5"}, "choose one way"),
    ({"lastPerPartition": "0"}, ">= 1"),
    ({"maxOffsetsPerTrigger": "x"}, "not an integer"),
])
def test_bad_options_are_usage_errors_saying_what_to_fix(bad, message):
    options = bad if not bad else BS | bad
    with pytest.raises(UsageError, match=message):
        KafkaOptions.from_options(options)


def test_secrets_are_redacted_in_descriptions():
    o = KafkaOptions.from_options(BS | {"kafka.sasl.password": "hunter2", "kafka.sasl.username": "u",
                                        "kafka.ssl.key.password": "k", "kafka.sasl.oauthbearer.client.secret": "s"})
    text = repr(o.describe())
    assert "hunter2" not in text and "'k'" not in text and "'s'" not in text and "'u'" in text
    assert redact({"sasl.jaas.config": "x"}) == {"sasl.jaas.config": "***"}


def test_transaction_topic_found_by_any_dotted_prefix():
    existing = {"db1.inv.a", "db1.transaction", "a.b.transaction", "a.b.c.d", "x.y"}
    assert transaction_topics(["db1.inv.a", "a.b.c.d", "x.y"], existing) == ["a.b.transaction", "db1.transaction"]


def test_read_limit_is_shared_by_backlog_and_every_backlogged_partition_advances():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    latest = {("t", 0): 90, ("t", 1): 110, ("t", 2): 5, ("t", 3): 0}
    capped = cap_offsets(start, latest, 10)
    assert capped[("t", 0)] == 9 and capped[("t", 1)] == 101 and capped[("t", 2)] == 5
    assert sum(capped[tp] - start.get(tp, latest[tp]) for tp in latest) <= 11
    assert cap_offsets(start, latest, 1000) == latest


def test_flags_map_to_source_options():
    flags = KafkaFlags(bootstrap_servers="b:1", topics="db\\..*", since="15m", options=("security.protocol=SSL",),
                       client_conf={"sasl.password": "p"})
    o = flags.source_options(now_ms=1_000_000_000)
    assert o["startingTimestamp"] == str(1_000_000_000 - 900_000)
    assert o["subscribePattern"] == "db\\..*" and o["kafka.security.protocol"] == "SSL" and o["kafka.sasl.password"] == "p"
    with pytest.raises(UsageError, match="KEY=VALUE"):
        KafkaFlags(bootstrap_servers="b", options=("nope",)).source_options()


def test_times_parse_as_iso_or_epoch_ms():
    assert parse_time_ms("2026-01-01T00:00:00Z", "--start") == 1_767_225_600_000
    assert parse_time_ms("2026-01-01T00:00:00", "--start") == 1_767_225_600_000
    assert parse_time_ms("1767225600000", "--start") == 1_767_225_600_000
    with pytest.raises(UsageError, match="ISO-8601"):
        parse_time_ms("yesterday", "--start")


def test_spark_reader_options_cover_exactly_the_plan():
    o = KafkaOptions.from_options(BS | {"kafka.security.protocol": "SSL"})
    ranges = [OffsetRange("t", 0, 3, 9), OffsetRange("t", 1, 4, 4), OffsetRange("u", 0, 0, 2)]
    so = spark_reader_options(o, ranges)
    assert so["assign"] == '{"t": [0], "u": [0]}'
    assert so["startingOffsets"] == '{"t": {"0": 3}, "u": {"0": 0}}'
    assert so["endingOffsets"] == '{"t": {"0": 9}, "u": {"0": 2}}'
    assert so["kafka.security.protocol"] == "SSL" and so["includeHeaders"] == "true"


def test_internal_topics_are_excluded_but_debezium_heartbeats_are_read():
    import re

    from cdc_monitor.sources.kafka.options import DEFAULT_EXCLUDE

    excluded = {t for t in ("__consumer_offsets", "_schemas", "connect-offsets", "dbz-offsets-storage",
                            "__debezium-heartbeat.pg1", "__debezium-heartbeatX", "pg1.public.orders")
                if re.match(DEFAULT_EXCLUDE, t)}
    assert excluded == {"__consumer_offsets", "_schemas", "connect-offsets", "dbz-offsets-storage", "__debezium-heartbeatX"}
