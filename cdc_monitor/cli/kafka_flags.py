"""The Kafka input flags shared by scan, gate and watch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from cdc_monitor.sources.inputs import KafkaFlags
from cdc_monitor.vocabulary import KAFKA_READERS, KafkaReader

_FLAGS = [
    click.option("--bootstrap-servers", help="Read from Kafka at HOST:PORT[,...] instead of capture files."),
    click.option("--topics", help="Regex of topics to read (whole names; default: all but internal topics). "
                 "The '<prefix>.transaction' topic of each is added when it exists."),
    click.option("--since", help="Time window: records of the last DURATION (e.g. 15m), per record timestamp."),
    click.option("--start", "start_time", help="Time window start (ISO-8601 or epoch ms)."),
    click.option("--end", "end_time", help="Time window end, exclusive (ISO-8601 or epoch ms)."),
    click.option("--last", type=click.IntRange(1), help="The last N records of every partition."),
    click.option("-X", "--kafka-option", "kafka_option", multiple=True, metavar="KEY=VALUE",
                 help="librdkafka client setting (repeatable), e.g. -X security.protocol=SASL_SSL. Put secrets in "
                 "the config file's [kafka] table or CDC_MONITOR_KAFKA_SASL_PASSWORD, not here."),
    click.option("--kafka-reader", type=click.Choice(KAFKA_READERS), default=KafkaReader.PYTHON.value, show_default=True,
                 help="python: the bundled data source; spark: Spark's spark-sql-kafka connector; auto: spark if present."),
]
NAMES = ("bootstrap_servers", "topics", "since", "start_time", "end_time", "last", "kafka_option", "kafka_reader")


def kafka_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_FLAGS):
        func = option(func)
    return func


def pop_kafka_flags(kwargs: dict[str, Any], transaction_topic: str | None, client_conf: dict[str, str]) -> KafkaFlags:
    values = {name: kwargs.pop(name) for name in NAMES}
    return KafkaFlags(
        bootstrap_servers=values["bootstrap_servers"], topics=values["topics"], transaction_topic=transaction_topic,
        since=values["since"], start=values["start_time"], end=values["end_time"], last=values["last"],
        options=tuple(values["kafka_option"]), reader=values["kafka_reader"], client_conf=dict(client_conf),
    )


_FORMAT_FLAGS = [
    click.option("--schema-registry", "schema_registry_url", metavar="URL",
                 help="Schema Registry for Avro keys and values in the Confluent wire format (credentials: the config "
                 "file's [schema_registry] table or CDC_MONITOR_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO, not here)."),
    click.option("--avro-json/--no-avro-json", default=None,
                 help="Capture keys and values are Avro-JSON text (kcat -s avro, kafka-avro-console-consumer), or "
                 "are not. Default: each value is recognised as it is (one info note per topic read so)."),
]


def format_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_FORMAT_FLAGS):
        func = option(func)
    return func


def apply_format_flags(kwargs: dict[str, Any], cfg: Any) -> Any:
    """The config with --schema-registry/--avro-json applied; a registry is checked now, before Spark
    starts (unreachable, not a registry, credentials refused: exit 2 with the fix)."""
    from cdc_monitor.avro.registry import RegistryClient, RegistrySettings
    from cdc_monitor.errors import UsageError

    url, avro_json = kwargs.pop("schema_registry_url"), kwargs.pop("avro_json")
    registry = cfg.schema_registry | ({"url": url} if url else {})
    cfg = cfg.with_overrides(schema_registry=registry, avro_json=avro_json)
    settings = RegistrySettings.from_conf(cfg.schema_registry)
    if settings is not None:
        if cfg.avro_json:
            raise UsageError("give --schema-registry (wire-format Avro, from Kafka) or --avro-json (Avro-JSON text "
                             "captures), not both")
        RegistryClient(settings).check()
    return cfg
