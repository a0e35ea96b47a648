"""Produce generated traffic to Kafka: same keys, partitions, headers and timestamps as the capture.

Topics are created when missing (transaction and heartbeat topics: one partition, as Debezium's). Offsets come
from the broker's delivery reports, so fault labels stay right even on topics that already
hold records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import InputError
from cdc_monitor.generator.records import Rec, Traffic, serialize
from cdc_monitor.sources.kafka.client import unreachable
from cdc_monitor.sources.kafka.options import KafkaOptions
from cdc_monitor.vocabulary import TopicRoles

if TYPE_CHECKING:
    from cdc_monitor.runtime.progress import Counter


def topic_partitions(traffic: Traffic) -> dict[str, int]:
    out: dict[str, int] = {}
    roles = TopicRoles.named(traffic.flavour.transaction_topic)
    for rec in traffic.records:
        single = roles.is_transaction(rec.topic) or roles.is_heartbeat(rec.topic)
        floor = 1 if single else traffic.partitions  # as Debezium creates them
        out[rec.topic] = max(out.get(rec.topic, floor), (rec.partition or 0) + 1)
    return out


def ensure_topics(opts: KafkaOptions, wanted: Mapping[str, int]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": opts.bootstrap_servers, **opts.client_conf})
    try:
        existing = admin.list_topics(timeout=opts.timeout_s).topics
    except KafkaException as err:
        raise unreachable(opts, err.args[0].str() if err.args else err) from None
    for topic, n in wanted.items():
        if topic in existing and len(existing[topic].partitions) < n:
            raise InputError(f"topic {topic} has {len(existing[topic].partitions)} partitions, the traffic needs {n}: "
                             "use --partitions to match, or another topic prefix")
    new = [NewTopic(t, n, 1) for t, n in wanted.items() if t not in existing]
    for topic, fut in (admin.create_topics(new) if new else {}).items():
        try:
            fut.result(opts.timeout_s)
        except KafkaException as err:
            if "TOPIC_ALREADY_EXISTS" not in str(err):
                raise InputError(f"could not create topic {topic}: {err}") from None


def _encoder(traffic: Traffic, registry: dict[str, str] | None) -> Callable[[Rec], tuple[bytes | None, bytes | None]]:
    if traffic.value_format == "avro":
        if not registry or not registry.get("url"):
            raise InputError("Avro traffic to Kafka needs --schema-registry URL (its schemas are registered there)")
        from cdc_monitor.generator.avro_traffic import AvroWireEncoder

        return AvroWireEncoder(registry["url"], registry).encode

    def text(rec: Rec) -> tuple[bytes | None, bytes | None]:
        key, value = serialize(rec, traffic.schemas)
        return (key.encode() if key is not None else None), (value.encode() if value is not None else None)

    return text


def produce_traffic(traffic: Traffic, opts: KafkaOptions, records: list[Rec] | None = None,
                    registry: dict[str, str] | None = None, counter: Counter | None = None) -> dict[str, Any]:
    """Send every record (or ``records``, a slice of them) in generation order; returns counts.
    Record offsets become the broker's. Avro traffic needs ``registry`` (url, basic_auth_user_info).
    ``counter``: counts the records sent (a terminal's live line: runtime/progress.py)."""
    from confluent_kafka import Producer

    encode = _encoder(traffic, registry)

    ensure_topics(opts, topic_partitions(traffic))
    conf = {"bootstrap.servers": opts.bootstrap_servers, "enable.idempotence": True, "linger.ms": 20,
            "message.timeout.ms": int(opts.timeout_s * 1000) * 2, **opts.client_conf}
    producer = Producer(conf)
    failures: list[str] = []

    def delivered(rec):
        def cb(err, msg):
            if err is not None:
                failures.append(f"{rec.topic}[{rec.partition}]: {err.str()}")
            else:
                rec.offset = msg.offset()
        return cb

    chosen = traffic.records if records is None else records
    for rec in chosen if counter is None else counter.counting(chosen):
        key, value = encode(rec)
        headers = [(k, v.encode()) for k, v in rec.headers] if rec.headers else None
        while True:
            try:
                producer.produce(rec.topic, value=value, key=key, partition=rec.partition or 0,
                                 timestamp=rec.ts, headers=headers, on_delivery=delivered(rec))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(opts.timeout_s * 2)
    if remaining or failures:
        first = failures[0] if failures else f"{remaining} record(s) undelivered"
        raise InputError(f"producing to {opts.bootstrap_servers} failed ({first}): check the broker and topic settings")
    return {"records": len(chosen), "topics": sorted(topic_partitions(traffic))}
