"""Driver-side broker questions: topics, watermarks, the real end of a partition, record lookups.

Brokers may answer watermark and offsets-for-times requests wrongly (the test broker reports the
last batch's base offset + 1 as high watermark and the log start for any time), so every answer
that decides what is read is checked against the records' own offsets and timestamps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from cdc_monitor.errors import InputError
from cdc_monitor.sources.kafka.options import KafkaOptions

TP = tuple[str, int]
SETTLE_S = 0.25  # how long true_ends waits for the end of a partition that keeps receiving records
_QUIET = logging.getLogger("cdc_monitor.kafka.librdkafka")  # librdkafka's own chatter (connection retries)
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def unreachable(opts: KafkaOptions, err: object, waited: bool = True) -> InputError:
    within = f" within {opts.timeout_s:g}s" if waited else ""
    return InputError(
        f"cannot reach Kafka at {opts.bootstrap_servers}{within} ({err}): check "
        "--bootstrap-servers, that the broker runs and is reachable from here, and the kafka.security.protocol/"
        "SASL/SSL settings"
    )


def refused_everywhere(bootstrap: str, timeout_s: float) -> str | None:
    """When every bootstrap address actively refuses a TCP connection (nothing listens there), why;
    else None (a connection, a timeout or a name that does not resolve is librdkafka's to judge)."""
    import socket

    reasons = []
    for server in (s.strip() for s in bootstrap.split(",") if s.strip()):
        host, _, port = server.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or server, int(port or 9092)), timeout=timeout_s):
                return None
        except ConnectionRefusedError:
            reasons.append(f"{server}: connection refused")
        except (OSError, ValueError):
            return None
    return "; ".join(reasons) or None


def new_consumer(opts: KafkaOptions, **extra: Any):
    from confluent_kafka import Consumer

    return Consumer(opts.consumer_conf(**extra), logger=_QUIET)


class BrokerInspector:
    """One consumer for metadata and probes; close() it (or use it as a context manager)."""

    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts
        self.consumer = new_consumer(opts, **{"fetch.wait.max.ms": 50})

    def __enter__(self) -> BrokerInspector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.consumer.close()

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        from confluent_kafka import KafkaException

        refused = refused_everywhere(self.opts.bootstrap_servers, min(self.opts.timeout_s, 3.0))
        if refused:  # nothing listens: say so now instead of after the metadata timeout
            raise unreachable(self.opts, refused, waited=False)
        try:
            meta = self.consumer.list_topics(timeout=self.opts.timeout_s)
        except KafkaException as err:
            raise unreachable(self.opts, err.args[0].str() if err.args else err) from None
        return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}

    def topic_ids(self, topics: Iterable[str]) -> dict[str, str]:
        """Each topic's id (Kafka gives a topic created again a new one); {} for topics the broker
        does not describe (no DESCRIBE permission, an old broker): those are judged by offsets alone."""
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import AdminClient

        names = sorted(set(topics))
        if not names:
            return {}
        admin = AdminClient({"bootstrap.servers": self.opts.bootstrap_servers, **self.opts.client_conf}, logger=_QUIET)
        out = {}
        for name, future in admin.describe_topics(TopicCollection(names), request_timeout=self.opts.timeout_s).items():
            try:
                out[name] = str(future.result(self.opts.timeout_s).topic_id)
            except Exception:  # an id is a refinement: without it, offsets decide
                continue
        return out

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """(log start, reported high watermark) per partition: the high mark may lag the real end."""
        from confluent_kafka import KafkaException, TopicPartition

        out = {}
        for topic, part in tps:
            try:
                out[(topic, part)] = self.consumer.get_watermark_offsets(
                    TopicPartition(topic, part), timeout=self.opts.timeout_s, cached=False)
            except KafkaException as err:
                raise unreachable(self.opts, err.args[0].str() if err.args else err) from None
        return out

    def true_ends(self, marks: dict[TP, tuple[int, int]]) -> dict[TP, int]:
        """One past the last record of each partition, read from the records themselves.

        Reads from the reported high watermark - 1 to the end of the log: a correct broker
        delivers at most one record (or only a control record, then the mark is the end); a broker
        whose mark is a batch's base offset + 1 delivers the rest of that batch. A partition being
        written may never show its end while records keep coming: after ``SETTLE_S`` the newest
        record received is its end (every record up to it is readable; the rest is read next time).
        """
        from confluent_kafka import KafkaError, TopicPartition

        ends = {tp: high for tp, (low, high) in marks.items()}
        pending = {tp for tp, (low, high) in marks.items() if high > low}
        if not pending:
            return ends
        self.consumer.assign([TopicPartition(t, p, max(marks[(t, p)][0], marks[(t, p)][1] - 1)) for t, p in pending])
        started = time.monotonic()
        deadline = started + self.opts.timeout_s
        received: set[TP] = set()
        while pending and time.monotonic() < deadline:
            for msg in self.consumer.consume(num_messages=10_000, timeout=0.05):
                tp = (msg.topic(), msg.partition())
                err = msg.error()
                if err is None:
                    ends[tp] = max(ends[tp], msg.offset() + 1)
                    received.add(tp)
                elif err.code() == KafkaError._PARTITION_EOF:
                    ends[tp] = max(ends[tp], msg.offset())
                    pending.discard(tp)
                else:
                    raise InputError(f"reading {tp[0]}[{tp[1]}] from {self.opts.bootstrap_servers} failed: {err.str()}")
            if time.monotonic() - started >= SETTLE_S:
                pending -= received
        self.consumer.unassign()
        if pending:
            names = ", ".join(f"{t}[{p}]" for t, p in sorted(pending)[:5])
            raise InputError(f"could not find the end of {names} within {self.opts.timeout_s:g}s: check the broker's "
                             "health, or raise timeoutSeconds")
        return ends

    def record_at(self, tp: TP, offset: int, end: int) -> tuple[int, int] | None:
        """(offset, timestamp ms) of the first record at or after ``offset`` and before ``end``."""
        from confluent_kafka import KafkaError, TopicPartition

        if offset >= end:
            return None
        self.consumer.assign([TopicPartition(tp[0], tp[1], offset)])
        deadline = time.monotonic() + self.opts.timeout_s
        try:
            while time.monotonic() < deadline:
                for msg in self.consumer.consume(num_messages=1, timeout=0.2):
                    err = msg.error()
                    if err is None:
                        return (msg.offset(), msg.timestamp()[1]) if msg.offset() < end else None
                    if err.code() == KafkaError._PARTITION_EOF and msg.offset() >= end:
                        return None
            raise InputError(f"no record at {tp[0]}[{tp[1]}] offset {offset} within {self.opts.timeout_s:g}s")
        finally:
            self.consumer.unassign()

    def offsets_for_time(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        """The broker's answer (-1 = after the last record): a claim, verified by the planner."""
        from confluent_kafka import KafkaException, TopicPartition

        query = [TopicPartition(t, p, ts_ms) for t, p in tps]
        if not query:
            return {}
        try:
            answer = self.consumer.offsets_for_times(query, timeout=self.opts.timeout_s)
        except KafkaException as err:
            raise unreachable(self.opts, err.args[0].str() if err.args else err) from None
        return {(a.topic, a.partition): a.offset for a in answer}
