"""One input for a run, prepared before Spark starts (so bad paths and unreachable brokers fail in
seconds) and read once a session exists: capture files, or a planned Kafka window."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import InputError, UsageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdc_monitor.sources.base import SourceResult
    from cdc_monitor.sources.kafka.planner import OffsetRange

# below these, a scan is dominated by start-up and planning, not by data (runtime/jvm.py's JIT choice)
SMALL_BYTES = 32 * 1024 * 1024
SMALL_RECORDS = 20_000


def parse_time_ms(text: str, what: str) -> int:
    """Epoch milliseconds, or ISO-8601 (no zone = UTC)."""
    raw = text.strip()
    if raw.isdigit():
        return int(raw)
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{what} {text!r} is not a time: use ISO-8601 (2026-11-22T07:00:00Z) or epoch ms") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass
class KafkaFlags:
    bootstrap_servers: str | None = None
    topics: str | None = None
    transaction_topic: str | None = None
    since: str | None = None
    start: str | None = None
    end: str | None = None
    last: int | None = None
    options: tuple[str, ...] = ()
    reader: str = "python"
    client_conf: dict[str, str] = field(default_factory=dict)

    def source_options(self, now_ms: int | None = None) -> dict[str, str]:
        """The data source's option map (Spark-Kafka-style names) for these flags."""
        from cdc_monitor.config import parse_duration_ms

        opts: dict[str, str] = {f"kafka.{k}": v for k, v in self.client_conf.items()}
        for item in self.options:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"-X {item!r} is not KEY=VALUE (e.g. -X security.protocol=SASL_SSL)")
            opts[f"kafka.{key.strip()}"] = value
        opts["kafka.bootstrap.servers"] = self.bootstrap_servers or ""
        if self.topics:
            opts["subscribePattern"] = self.topics
        if self.transaction_topic:
            opts["transactionTopic"] = self.transaction_topic
        if self.since and self.start:
            raise UsageError("give --since or --start, not both")
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if self.since:
            opts["startingTimestamp"] = str(now - parse_duration_ms(self.since, "--since"))
        if self.start:
            opts["startingTimestamp"] = str(parse_time_ms(self.start, "--start"))
        if self.end:
            opts["endingTimestamp"] = str(parse_time_ms(self.end, "--end"))
        if self.last is not None:
            opts["lastPerPartition"] = str(self.last)
        return opts


@dataclass
class PreparedInput:
    paths: tuple[str, ...] = ()
    kafka_options: dict[str, str] | None = None
    kafka_reader: str = "python"
    ranges: list[OffsetRange] | None = None
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def small(self) -> bool:
        """Known before Spark starts to be small enough that a quick-to-compile JVM wins."""
        if self.ranges is not None:
            return sum(max(0, r.end - r.start) for r in self.ranges) <= SMALL_RECORDS
        from cdc_monitor.sources.capture import expand_paths

        files = expand_paths(self.paths)
        if not files or any("://" in f for f in files):  # a URL's size is not known before Spark starts
            return False
        return sum(os.path.getsize(f) for f in files) <= SMALL_BYTES

    def read(self, spark: SparkSession) -> SourceResult:
        if self.kafka_options is not None:
            from cdc_monitor.sources.kafka.source import read_kafka

            return read_kafka(spark, self.kafka_options, self.kafka_reader, self.ranges)
        from cdc_monitor.sources.capture import read_capture

        return read_capture(spark, self.paths)


def no_records(what: str) -> InputError:
    """An input with nothing in it: a CI gate must not pass on no data."""
    return InputError(f"no records read from {what}: check the capture or the window (--since/--start/--end), "
                      "or pass --allow-empty to accept an empty input")


# What the capture reader skips: lines of spaces (Spark's trim) between \n, \r or \r\n separators
BLANK = b" \r\n"


def _holds_a_line(path: str) -> bool:
    """Whether the file holds anything the capture reader would not skip as a blank line (read
    until the first such byte: the first one, in any real capture)."""
    if "://" in path:
        return True  # only Spark can tell
    if path.endswith(".gz"):
        import gzip

        opener = gzip.open
    elif path.endswith((".bz2", ".deflate", ".lz4", ".snappy", ".zst")):
        return os.path.getsize(path) > 0  # compressed otherwise: Spark can tell
    else:
        opener = open
    with opener(path, "rb") as fh:
        while chunk := fh.read(1 << 16):
            if chunk.strip(BLANK):
                return True
    return False


def prepare_input(paths: tuple[str, ...], kafka: KafkaFlags, allow_empty: bool = False) -> PreparedInput:
    """Validate the input and, for Kafka, plan the window now: errors surface before Spark starts
    (an input with no records among them, unless ``allow_empty``)."""
    if kafka.bootstrap_servers and paths:
        raise UsageError("give capture paths or --bootstrap-servers, not both")
    if not kafka.bootstrap_servers:
        if any(v for v in (kafka.topics, kafka.since, kafka.start, kafka.end, kafka.last, kafka.options)):
            raise UsageError("--topics/--since/--start/--end/--last/-X need --bootstrap-servers")
        if not paths:
            raise UsageError("nothing to scan: pass capture files/folders (kcat -J output) or --bootstrap-servers")
        from cdc_monitor.sources.capture import expand_paths

        files = expand_paths(paths)
        if not allow_empty and not any(_holds_a_line(f) for f in files):
            raise no_records(", ".join(paths) + " (empty or blank files: kcat writes them when it captured nothing)")
        return PreparedInput(paths=paths)
    from cdc_monitor.sources.kafka.client import BrokerInspector
    from cdc_monitor.sources.kafka.options import KafkaOptions
    from cdc_monitor.sources.kafka.planner import plan_ranges
    from cdc_monitor.sources.kafka.source import READERS

    if kafka.reader not in READERS:
        raise UsageError(f"--kafka-reader {kafka.reader!r} is not one of {', '.join(READERS)}")
    options = kafka.source_options()
    opts = KafkaOptions.from_options(options)
    with BrokerInspector(opts) as insp:
        ranges = plan_ranges(opts, insp)
    if not allow_empty and not any(r.end > r.start for r in ranges):
        raise no_records(f"the Kafka window of {len(ranges)} partition(s) (no offsets in it)")
    return PreparedInput(kafka_options=options, kafka_reader=kafka.reader, ranges=ranges, description=opts.describe())
