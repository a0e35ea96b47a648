"""Read one partition's offset range into Arrow batches with the Kafka source's columns.

Runs inside Spark tasks (the consumer is created here, never shipped) and is usable without
Spark. A range is finished when a record at or past ``end - 1`` arrived or the partition's end
was reached at or past ``end`` (control records and compacted gaps carry no data). A partition
that makes no progress for ``read_timeout_s`` fails the read, naming the partition and offset:
records are never silently dropped. With ``report_gaps`` (watch's stream), offsets the log no
longer holds and offsets that went back are told by a gap row (``gaps.py``) and reading goes on
from the log start; without it (a planned scan window) they fail the read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from cdc_monitor.errors import InputError
from cdc_monitor.sources.kafka.client import new_consumer
from cdc_monitor.sources.kafka.gaps import Gap, gap_row
from cdc_monitor.sources.kafka.options import KafkaOptions
from cdc_monitor.sources.kafka.planner import OffsetRange

BATCH_ROWS = 8192


def arrow_schema():
    import pyarrow as pa

    return pa.schema([
        ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
        ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    ])


def _gap_batch(topic: str, partition: int, gap: Gap, first: int, last: int):
    """One gap row (gaps.py) as an Arrow batch of the reader's schema."""
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([gap_row(topic, partition, gap, first, last)], schema=arrow_schema())


class _Columns:
    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {n: [] for n in arrow_schema().names}

    def __len__(self) -> int:
        return len(self.cols["offset"])

    def add(self, msg: Any) -> None:
        c = self.cols
        ts_type, ts = msg.timestamp()
        headers = msg.headers()
        c["key"].append(msg.key())
        c["value"].append(msg.value())
        c["topic"].append(msg.topic())
        c["partition"].append(msg.partition())
        c["offset"].append(msg.offset())
        c["timestamp"].append(ts * 1000 if ts_type else None)
        c["timestampType"].append(ts_type - 1)  # librdkafka 1 create / 2 append -> Kafka's 0 / 1
        c["headers"].append([{"key": k, "value": v} for k, v in headers] if headers else None)

    def batch(self):
        import pyarrow as pa

        schema = arrow_schema()
        return pa.RecordBatch.from_arrays([pa.array(self.cols[f.name], f.type) for f in schema], schema=schema)


def read_range(opts: KafkaOptions, rng: OffsetRange, batch_rows: int = BATCH_ROWS, report_gaps: bool = False
               ) -> Iterator[Any]:
    """Arrow record batches of the records in ``rng`` (time-filtered when the range has bounds).
    With ``report_gaps``, a range marked ``reset`` or whose end is before its start is a partition
    whose log is a new one (its topic created again): its gap row, then its records from the log
    start to that end."""
    from confluent_kafka import KafkaError, TopicPartition

    # with auto.offset.reset=error librdkafka reports an offset the log no longer holds as _AUTO_OFFSET_RESET
    out_of_range = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
    went_back = report_gaps and (rng.reset or rng.end < rng.start)
    if rng.end <= rng.start and not went_back:
        return
    consumer = new_consumer(opts, **{"fetch.wait.max.ms": 100})
    tp = TopicPartition(rng.topic, rng.partition)
    try:
        start, end = rng.start, rng.end
        if went_back:  # the partition's log is a new one: its records from its log start
            yield _gap_batch(rng.topic, rng.partition, Gap.OFFSETS_RESET, start, end)
            start = consumer.get_watermark_offsets(tp, timeout=opts.timeout_s, cached=False)[0]
            if end <= start:
                return
        consumer.assign([TopicPartition(rng.topic, rng.partition, start)])
        cols = _Columns()
        last_progress = time.monotonic()
        done = False
        next_offset = start
        while not done:
            # no more than the range still holds: consume() returns once it has that many, instead of
            # waiting out its timeout for records past the range (0.5 s per range and micro-batch)
            msgs = consumer.consume(num_messages=max(1, min(5000, end - next_offset)), timeout=0.5)
            if msgs:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > opts.read_timeout_s:
                raise InputError(f"reading {rng.topic}[{rng.partition}] stalled before offset {end} "
                                 f"(planned {start}..{end}) for {opts.read_timeout_s:g}s: check the broker, "
                                 "or whether retention deleted the records")
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done = done or msg.offset() >= end
                        continue
                    if err.code() in out_of_range and report_gaps:
                        # the log no longer holds the offset asked for (retention, DeleteRecords, before
                        # or while this range is read): tell, and go on from the log start
                        low = consumer.get_watermark_offsets(tp, timeout=opts.timeout_s, cached=False)[0]
                        yield _gap_batch(rng.topic, rng.partition, Gap.RECORDS_LOST, next_offset, min(low, end))
                        next_offset = low
                        done = low >= end
                        if not done:
                            consumer.assign([TopicPartition(rng.topic, rng.partition, low)])
                        break
                    raise InputError(f"reading {rng.topic}[{rng.partition}] failed: {err.str()}"
                                     + (" (retention deleted records of the window while it was read: scan a later "
                                        "--start, or again)" if err.code() in out_of_range else ""))
                off = msg.offset()
                next_offset = off + 1
                if off >= end:
                    done = True
                    break
                if off < start:
                    continue
                ts = msg.timestamp()[1]
                if (rng.min_ts is None or ts >= rng.min_ts) and (rng.max_ts is None or ts < rng.max_ts):
                    cols.add(msg)
                done = off >= end - 1
                if len(cols) >= batch_rows:
                    yield cols.batch()
                    cols = _Columns()
        if len(cols):
            yield cols.batch()
    finally:
        consumer.close()
