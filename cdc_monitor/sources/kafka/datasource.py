"""Spark 4 Python data source ``cdc_kafka``: Kafka topics as frames with the Kafka source's columns.

Batch: ``spark.read.format("cdc_kafka").option("kafka.bootstrap.servers", ...).load()`` reads
one planned offset range per topic-partition (see ``planner``). Streaming:
``spark.readStream.format("cdc_kafka")`` with ``maxOffsetsPerTrigger``, ``Trigger.AvailableNow``
and checkpoint restarts; offsets are ``{"topic": {"partition": next_offset}}``.
Options are validated on the driver; consumers are opened inside ``read()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from cdc_monitor.sources.base import KAFKA_SCHEMA
from cdc_monitor.sources.kafka.client import BrokerInspector
from cdc_monitor.sources.kafka.options import EARLIEST, LATEST, KafkaOptions
from cdc_monitor.sources.kafka.planner import OffsetRange, plan_ranges, select_topics
from cdc_monitor.sources.kafka.reader import read_range
from cdc_monitor.vocabulary import TopicRoles

FORMAT = "cdc_kafka"
PLANNED_RANGES = "plannedRanges"  # internal: a JSON list of ranges planned by the caller (skips planning)


class RangePartition(InputPartition):
    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng.to_dict())
        self.rng = rng


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.opts = KafkaOptions.from_options({k: v for k, v in options.items() if k.lower() != PLANNED_RANGES.lower()})
        planned = next((v for k, v in options.items() if k.lower() == PLANNED_RANGES.lower()), None)
        self.ranges = [OffsetRange(**r) for r in json.loads(planned)] if planned else None

    def schema(self):
        return KAFKA_SCHEMA

    def reader(self, schema) -> DataSourceReader:
        return KafkaBatchReader(self.opts, self.ranges)

    def streamReader(self, schema) -> DataSourceStreamReader:
        return KafkaStreamReader(self.opts)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, opts: KafkaOptions, ranges: list[OffsetRange] | None = None) -> None:
        self.opts = opts
        self.ranges = ranges

    def partitions(self) -> Sequence[InputPartition]:
        if self.ranges is None:
            with BrokerInspector(self.opts) as insp:
                self.ranges = plan_ranges(self.opts, insp)
        return [RangePartition(r) for r in self.ranges if r.end > r.start]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        # with no range to read, Spark still asks for one partition, a bare InputPartition
        if isinstance(partition, RangePartition):
            yield from read_range(self.opts, partition.rng)


Offsets = dict[str, dict[str, Any]]  # topic -> partition -> next offset; IDS -> topic -> topic id
IDS = "@ids"  # a topic created again has a new id: its partitions are read again from their log start


def _flat(offsets: Offsets) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in offsets.items() if t != IDS for p, o in parts.items()}


def _nested(flat: dict[tuple[str, int], int], ids: dict[str, str] | None = None) -> Offsets:
    out: Offsets = {}
    for (t, p), o in sorted(flat.items()):
        out.setdefault(t, {})[str(p)] = o
    if ids:
        out[IDS] = dict(sorted(ids.items()))
    return out


def renewed_topics(start: Offsets, now: dict[str, str]) -> set[str]:
    """Topics whose id differs from the one ``start`` recorded (deleted and created again)."""
    before = start.get(IDS, {})
    return {t for t, i in now.items() if before.get(t) not in (None, i)}


def cap_offsets(start: dict[tuple[str, int], int], latest: dict[tuple[str, int], int], max_rows: int
                ) -> dict[tuple[str, int], int]:
    """Advance each partition by its share of ``max_rows`` (proportional to its backlog, at least 1)."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = backlog[tp] * max_rows // total
        out[tp] = min(end, begin + max(share, 1 if backlog[tp] else 0))
    return out


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of offset ranges; new partitions and topics (by pattern) start at their log start."""

    def __init__(self, opts: KafkaOptions) -> None:
        self.opts = opts
        self.target: dict[tuple[str, int], int] | None = None

    def _current(self) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int], dict[str, str]]:
        """(log start, real end) of every selected partition now, and the selected topics' ids.

        Transaction topics are measured first: Debezium writes a transaction's data events before
        its END, so every END inside a planned range has its data events inside theirs too."""
        with BrokerInspector(self.opts) as insp:
            existing = insp.topics()
            tps = [(t, p) for t in select_topics(self.opts, existing) for p in range(existing[t])]
            marks = insp.watermarks(tps)
            roles = TopicRoles.named(self.opts.transaction_topic)
            txn = {tp: m for tp, m in marks.items() if roles.is_transaction(tp[0])}
            ends = insp.true_ends(txn)
            ends |= insp.true_ends({tp: m for tp, m in marks.items() if tp not in txn})
            return {tp: m[0] for tp, m in marks.items()}, ends, insp.topic_ids({t for t, _ in tps})

    def initialOffset(self) -> Offsets:
        lows, ends, ids = self._current()
        if self.opts.starting == LATEST:
            return _nested(ends, ids)
        if isinstance(self.opts.starting, dict):
            spec = self.opts.starting
            pick = {tp: spec.get(tp[0], {}).get(tp[1], EARLIEST) for tp in ends}
            return _nested({tp: lows[tp] if v == EARLIEST else ends[tp] if v == LATEST else v for tp, v in pick.items()},
                           ids)
        return _nested(lows, ids)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._current()[1]

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        begin = _flat(start)
        lows, ends, ids = self._current()
        if self.target is not None:
            ends = {tp: min(e, self.target.get(tp, lows[tp])) for tp, e in ends.items()}
        # a partition the broker does not list now (its topic deleted, maybe to be created again)
        # keeps its offset and its topic's id; a topic with a new id, or a partition whose end is
        # before its start, is a new log: its range reads a gap row and the records from its log
        # start (partitions(), reader.py)
        kept = {tp: o for tp, o in begin.items() if tp not in ends}
        kept_ids = {t: i for t, i in start.get(IDS, {}).items() if t not in ids}
        renewed = renewed_topics(start, ids)
        # new partitions, and those of a topic created again: from their log start
        begin = {tp: lows[tp] if tp[0] in renewed else begin.get(tp, lows[tp]) for tp in ends}
        if isinstance(limit, ReadMaxRows):
            ends = cap_offsets(begin, ends, limit.max_rows)
        return _nested(kept | ends, kept_ids | ids)

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        begin, stop = _flat(start), _flat(end)
        renewed = renewed_topics(start, end.get(IDS, {}))
        ranges = []
        for tp, hi in sorted(stop.items()):
            lo = begin.get(tp, 0)  # a partition that appeared in this batch: from offset 0
            reset = tp[0] in renewed and tp in begin  # a new log: read from its log start, after a gap row
            if hi != lo or reset:  # (hi < lo: its offsets went back, a new log too)
                ranges.append(RangePartition(OffsetRange(tp[0], tp[1], lo, hi, reset=reset)))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_range(self.opts, partition.rng, report_gaps=True)  # type: ignore[attr-defined]

    def commit(self, end: Offsets) -> None:
        """Nothing to do: progress lives in Spark's checkpoint, never in a consumer group."""
