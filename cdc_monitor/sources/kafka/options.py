"""Kafka source options: parsed and validated on the driver, without Spark or a broker.

The option names follow Spark's built-in Kafka source where one exists (``kafka.*`` client
settings, ``subscribe``, ``subscribePattern``, ``startingOffsets``, ``endingOffsets``,
``startingTimestamp``, ``endingTimestamp``, ``maxOffsetsPerTrigger``) so users can switch
between the two readers with the same option map. Ours: ``lastPerPartition`` (the last N
records of every partition), ``transactionTopic`` (default: ``<prefix>.transaction`` of every
selected topic's prefix, when it exists), ``timeoutSeconds`` (metadata and probes) and
``readTimeoutSeconds`` (a partition read making no progress).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_monitor.errors import UsageError
from cdc_monitor.vocabulary import HEARTBEAT_TOPIC_PREFIX

EARLIEST, LATEST = -2, -1
# Kafka Connect / Schema Registry internals and Kafka's own topics are never CDC data; Debezium's
# heartbeat topics (__debezium-heartbeat.<prefix>) are, though they start with an underscore.
DEFAULT_EXCLUDE = (rf"^(_(?!{re.escape(HEARTBEAT_TOPIC_PREFIX[1:])}\.).*"
                   r"|connect-(configs|offsets|status)|.*-(configs|offsets|status)-storage)$")
_SECRET_HINTS = ("password", "secret", "sasl.jaas.config", "token", "ssl.key.pem", "credentials")
# settings the reader owns: it assigns partitions itself and never commits
_RESERVED = {"group.id", "enable.auto.commit", "enable.partition.eof", "auto.offset.reset"}


def redact(conf: Mapping[str, str]) -> dict[str, str]:
    """The client settings safe to print: every secret-looking value replaced."""
    return {k: ("***" if any(h in k.lower() for h in _SECRET_HINTS) else v) for k, v in conf.items()}


def _int(options: Mapping[str, str], name: str, minimum: int = 0) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise UsageError(f"option {name}={raw!r} is not an integer") from None
    if value < minimum:
        raise UsageError(f"option {name}={raw!r} must be >= {minimum}")
    return value


def _offsets(raw: str | None, name: str, default: int) -> int | dict[str, dict[int, int]]:
    """'earliest' | 'latest' | Spark's JSON ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest, -1 latest)."""
    if raw is None or raw.strip() == "":
        return default
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return EARLIEST if text.lower() == "earliest" else LATEST
    try:
        data = json.loads(text)
        return {str(t): {int(p): int(o) for p, o in parts.items()} for t, parts in data.items()}
    except (ValueError, AttributeError, TypeError):
        raise UsageError(
            f"option {name}={raw!r} is neither earliest/latest nor JSON like "
            '{"topic":{"0":23,"1":-2}} (-2 = earliest, -1 = latest)'
        ) from None


@dataclass(frozen=True)
class KafkaOptions:
    bootstrap_servers: str
    client_conf: dict[str, str] = field(default_factory=dict)  # kafka.* without the prefix
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    transaction_topic: str | None = None
    starting: Any = EARLIEST  # EARLIEST | LATEST | {topic: {partition: offset}}
    ending: Any = LATEST
    start_ms: int | None = None
    end_ms: int | None = None
    last_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    timeout_s: float = 15.0
    read_timeout_s: float = 60.0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaOptions:
        opts = {str(k): str(v) for k, v in options.items() if v is not None}
        lower = {k.lower(): v for k, v in opts.items()}
        client = {k[len("kafka."):]: v for k, v in opts.items() if k.lower().startswith("kafka.")}
        servers = client.pop("bootstrap.servers", "").strip()
        if not servers:
            raise UsageError("no Kafka brokers given: set kafka.bootstrap.servers (--bootstrap-servers HOST:PORT)")
        reserved = sorted(set(client) & _RESERVED)
        if reserved:
            raise UsageError(f"kafka.{reserved[0]} is managed by cdc-monitor (it never joins a group or commits): remove it")
        topics = tuple(t.strip() for t in lower.get("subscribe", "").split(",") if t.strip())
        pattern = lower.get("subscribepattern") or None
        if topics and pattern:
            raise UsageError("give topics by name (subscribe) or by regex (subscribePattern), not both")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as err:
                raise UsageError(f"topic regex {pattern!r} is invalid ({err}): fix --topics") from None
        start_ms = _int(lower, "startingtimestamp")
        end_ms = _int(lower, "endingtimestamp")
        last = _int(lower, "lastperpartition", 1)
        starting = _offsets(lower.get("startingoffsets"), "startingOffsets", EARLIEST)
        ending = _offsets(lower.get("endingoffsets"), "endingOffsets", LATEST)
        if start_ms is not None and end_ms is not None and end_ms <= start_ms:
            raise UsageError(f"the time window is empty: endingTimestamp {end_ms} <= startingTimestamp {start_ms}")
        chosen = [n for n, v in (("a time window", start_ms if start_ms is not None else end_ms),
                                 ("lastPerPartition", last),
                                 ("startingOffsets", None if starting == EARLIEST else starting)) if v is not None]
        if len(chosen) > 1:
            raise UsageError(f"choose one way to sample: {' and '.join(chosen)} were both given")
        if ending == EARLIEST:
            raise UsageError("endingOffsets=earliest reads nothing: use latest or per-partition offsets")
        timeout = float(lower.get("timeoutseconds", 15))
        read_timeout = float(lower.get("readtimeoutseconds", 60))
        if timeout <= 0 or read_timeout <= 0:
            raise UsageError("timeoutSeconds and readTimeoutSeconds must be positive")
        return cls(
            bootstrap_servers=servers, client_conf=client, topics=topics, topic_pattern=pattern,
            transaction_topic=lower.get("transactiontopic") or None, starting=starting, ending=ending,
            start_ms=start_ms, end_ms=end_ms, last_per_partition=last,
            max_offsets_per_trigger=_int(lower, "maxoffsetspertrigger", 1),
            timeout_s=timeout, read_timeout_s=read_timeout,
        )

    def consumer_conf(self, **extra: Any) -> dict[str, Any]:
        """librdkafka settings for a consumer that assigns partitions itself and never commits."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": "cdc-monitor",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            "socket.connection.setup.timeout.ms": int(self.timeout_s * 1000),
        }
        conf.update(self.client_conf)
        conf.update(extra)
        return conf

    def describe(self) -> dict[str, Any]:
        """What a report may show: servers, selection, window; secrets redacted."""
        return {
            "kind": "kafka", "bootstrap_servers": self.bootstrap_servers, "client": redact(self.client_conf),
            "topics": list(self.topics) or None, "topic_pattern": self.topic_pattern,
            "start_ms": self.start_ms, "end_ms": self.end_ms, "last_per_partition": self.last_per_partition,
        }
