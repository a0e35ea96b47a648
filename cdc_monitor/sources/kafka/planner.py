"""Which records a bounded read covers: topics, and one offset range per partition.

Time windows are resolved per partition with offsets-for-times, accepted only when the records
around the answer confirm it (else the range starts at the log start / ends at the real end);
the reader then keeps exactly the records whose timestamp lies in the window.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import asdict, dataclass

from cdc_monitor.errors import InputError
from cdc_monitor.sources.kafka.client import TP, BrokerInspector
from cdc_monitor.sources.kafka.options import DEFAULT_EXCLUDE, EARLIEST, LATEST, KafkaOptions
from cdc_monitor.vocabulary import TRANSACTION_SUFFIX

log = logging.getLogger("cdc_monitor.kafka")


@dataclass(frozen=True)
class OffsetRange:
    """Records ``start <= offset < end`` of one partition, kept when ``min_ts <= timestamp < max_ts``."""

    topic: str
    partition: int
    start: int
    end: int
    min_ts: int | None = None
    max_ts: int | None = None
    log_start: int = 0
    reset: bool = False  # (stream) the topic was created again since ``start``: read from its log start

    def to_dict(self) -> dict:
        return asdict(self)


def transaction_topics(selected: list[str], existing: set[str]) -> list[str]:
    """``<prefix>.transaction`` for every dotted prefix of a selected topic, where it exists."""
    found = set()
    for topic in selected:
        parts = topic.split(".")
        for i in range(1, len(parts)):
            candidate = ".".join(parts[:i]) + TRANSACTION_SUFFIX
            if candidate in existing:
                found.add(candidate)
    return sorted(found - set(selected))


def select_topics(opts: KafkaOptions, existing: dict[str, int]) -> list[str]:
    names = set(existing)
    if opts.topics:
        missing = [t for t in opts.topics if t not in names]
        if missing:
            candidates = sorted(t for t in names if not re.match(DEFAULT_EXCLUDE, t))
            close = difflib.get_close_matches(missing[0], candidates, n=5, cutoff=0.6)  # the likely typo first
            near = ", ".join([*close, *(t for t in candidates if t not in close)][:10]) or "none"
            raise InputError(f"topic {missing[0]} does not exist on {opts.bootstrap_servers}: check --topics "
                             f"(topics there: {near})")
        chosen = list(opts.topics)
    elif isinstance(opts.starting, dict) and not opts.topic_pattern:
        chosen = sorted(opts.starting)
    else:
        pattern = re.compile(opts.topic_pattern) if opts.topic_pattern else None
        chosen = sorted(t for t in names if not re.match(DEFAULT_EXCLUDE, t)
                        and (pattern is None or pattern.fullmatch(t)))
        if not chosen:
            raise InputError(f"no topic on {opts.bootstrap_servers} matches {opts.topic_pattern or 'any name'}: "
                             "check --topics (a regex matched against whole topic names)")
    if opts.transaction_topic:
        if opts.transaction_topic not in names:
            raise InputError(f"transaction topic {opts.transaction_topic} does not exist on {opts.bootstrap_servers}: "
                             "check --transaction-topic (Debezium writes it only with provide.transaction.metadata=true)")
        extra = [opts.transaction_topic]
    else:
        extra = transaction_topics(chosen, names)
    return sorted(set(chosen) | set(extra))


def _verified_time_offset(insp: BrokerInspector, tp: TP, claim: int, ts_ms: int, low: int, end: int) -> int | None:
    """The broker's offsets-for-times answer if the records around it confirm it, else None."""
    if claim < 0 or claim >= end:
        last = insp.record_at(tp, end - 1, end) if end > low else None
        return end if last is None or last[1] < ts_ms else None
    at = insp.record_at(tp, claim, end)
    if at is None or at[1] < ts_ms:
        return None
    if claim > low:
        before = insp.record_at(tp, claim - 1, end)
        if before is None or (before[0] < claim and before[1] >= ts_ms):
            return None
    return claim


def _explicit(spec: dict[str, dict[int, int]], tp: TP, default: int, low: int, end: int) -> int:
    value = spec.get(tp[0], {}).get(tp[1], default)
    if value == EARLIEST:
        return low
    if value == LATEST:
        return end
    return min(max(value, low), end)


def plan_ranges(opts: KafkaOptions, insp: BrokerInspector) -> list[OffsetRange]:
    existing = insp.topics()
    topics = select_topics(opts, existing)
    tps = [(t, p) for t in topics for p in range(existing[t])]
    marks = insp.watermarks(tps)
    ends = insp.true_ends(marks)
    starts = {tp: marks[tp][0] for tp in tps}
    stops = dict(ends)
    if opts.last_per_partition is not None:
        starts = {tp: max(marks[tp][0], ends[tp] - opts.last_per_partition) for tp in tps}
    elif isinstance(opts.starting, dict):
        starts = {tp: _explicit(opts.starting, tp, EARLIEST, marks[tp][0], ends[tp]) for tp in tps}
    elif opts.starting == LATEST:
        starts = dict(ends)
    if isinstance(opts.ending, dict):
        stops = {tp: max(starts[tp], _explicit(opts.ending, tp, LATEST, marks[tp][0], ends[tp])) for tp in tps}
    unverified = 0
    for bound, ts in (("start", opts.start_ms), ("end", opts.end_ms)):
        if ts is None:
            continue
        claims = insp.offsets_for_time(tps, ts)
        for tp in tps:
            low, end = marks[tp][0], ends[tp]
            ok = _verified_time_offset(insp, tp, claims.get(tp, -1), ts, low, end)
            unverified += ok is None
            if bound == "start":
                starts[tp] = ok if ok is not None else low
            else:
                stops[tp] = max(starts[tp], ok if ok is not None else end)
    if unverified:
        log.warning("offsets-for-times answers for %d partition(s) did not match the records; those ranges are "
                    "read from the log start/to the end and filtered by record timestamp", unverified)
    return [OffsetRange(t, p, starts[(t, p)], stops[(t, p)], opts.start_ms, opts.end_ms, marks[(t, p)][0])
            for t, p in tps]
