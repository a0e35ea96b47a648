"""One micro-batch of ``watch``: the batch checks over (new records + the context Spark's state store carries).

The streaming query's stateful operator (``watch/carry.py``) hands each batch its new records and
the context their groups hold: the last ``key_history`` records of every key the batch touches, the
open transactions with their data events, orphan candidates and the newest change event per
table. This engine runs the same checks as ``scan`` over them and counts a finding once:
- per-record rules (decode, lag, schema) only on new records;
- per-key and per-table findings where they land on a new record (a lag spike continuing from
  the carried newest event of its table is not new);
- transaction rules when the transaction becomes final in this batch (complete, missing_end,
  missing_begin, unverifiable; an ended transaction the operator still holds ``pending``, its
  events on their way, is judged in a later batch); orphan events when new or carried as candidates, never for a
  transaction finalized in an earlier batch.
The driver keeps only counters, heartbeats, per-partition facts and the open transactions'
first-seen times (``watch/state.py``): a few kilobytes whatever the number of keys.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.context import CheckContext
from cdc_monitor.checks.lag import lag_row_ms
from cdc_monitor.checks.source_gaps import GapRow, gap_findings
from cdc_monitor.checks.sql import sql_over
from cdc_monitor.config import ScanConfig
from cdc_monitor.engine.cache import FrameCache
from cdc_monitor.engine.census import heartbeats
from cdc_monitor.engine.facts import census_frame, facts_from_rows
from cdc_monitor.engine.window import NewRecords, WindowFrames, evaluate
from cdc_monitor.history.measure import FINDINGS_PART, PARTIAL_PART
from cdc_monitor.sources.kafka.gaps import Gap
from cdc_monitor.vocabulary import TxStatus
from cdc_monitor.watch.carry import (
    CANDIDATE,
    CONTEXT_ROLES,
    FOUND,
    FOUND_COLUMN,
    GAP_VALUE,
    LEFT_ROLES,
    MAX_KEYS,
    NEW,
    PENDING,
    TAIL,
    CarrySettings,
    decoded_rows,
)
from cdc_monitor.watch.carry import (
    FINAL as FINAL_ROLE,
)
from cdc_monitor.watch.history import Written, absorb, record
from cdc_monitor.watch.state import PartitionHistory, StateStore, WatchState, add

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

    from cdc_monitor.runtime.session import SessionCaps
    from cdc_monitor.vocabulary import TopicRoles

COORD = ["topic", "partition", "offset"]
# a finding the operator judged: where it points and what it says (checks/ordering.py's ordering_sql reads it)
KEY_FOUND = [*COORD, "record_ts_ms", "key", "txn_id", "server", "table", FOUND_COLUMN]
# A batch of up to this many operator rows is checked in one partition (engine/cache.py), unless the
# scan setting ``one_partition_rows`` says fewer. Lower than a scan's 25,000: one task leaves a core
# idle (benchmarks.watch_batch, warm, 2 cores, measured when batches reused their plans: ~1k records
# 2.0 s in one partition vs 2.9 s spread, ~3k 3.3-3.6 vs 3.7-4.9 s, ~6k even, ~11k 8.8-11.5 vs 6.8-7.3 s).
ONE_PARTITION_ROWS = 6_000


@dataclass
class WatchSettings:
    scan: ScanConfig = field(default_factory=ScanConfig)
    key_history: int = 3
    key_ttl_ms: int = 24 * 3_600_000
    await_ms: int = 600_000
    grace_ms: int = 600_000  # open longer than this (wall time): reported as overdue
    final_memory: int = 200_000  # ids of finalized transactions remembered (a replayed event of one is no orphan)
    one_partition_rows: int = ONE_PARTITION_ROWS  # (and at most scan.one_partition_rows)
    transaction_servers: tuple[str, ...] = ()  # servers whose transaction topic the stream reads
    topic_partitions: tuple[tuple[str, int], ...] = ()  # (topic, partitions) of the topics it reads
    max_keys: int = MAX_KEYS  # key histories held at most ([watch] max_keys; 0: only the TTL bounds them)
    review_ms: int = 60_000  # a key seen is looked at again for the budget this much later

    def carry(self) -> CarrySettings:
        return CarrySettings(self.key_history, self.key_ttl_ms, self.await_ms, self.final_memory,
                             self.transaction_servers, self.topic_partitions, self.max_keys, self.review_ms)


@dataclass
class BatchOutcome:
    batch_id: int
    records: int
    invalid_records: int = 0
    lag: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    finalized: dict[str, dict[str, int]] = field(default_factory=dict)  # server -> status -> n
    findings: list[dict[str, Any]] = field(default_factory=list)  # grouped counts
    skipped: bool = False
    history: Written | None = None  # watch --history: what this batch wrote (watch/history.py)
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # seconds per stage


def _key(*parts: Any) -> str:
    return "|".join(str(p) for p in parts)


def _partitions(state: WatchState, roles: TopicRoles, batch_id: int) -> list[dict[str, Any]]:
    """from_start per partition as the stream saw it: data partitions read from offset 0 whose key
    history was never evicted; transaction-topic partitions also once read in an earlier batch
    (every BEGIN since then has been seen, so an END without one is missing_begin)."""
    rows = []
    for k, h in state.partitions.items():
        topic, part = k.rsplit("|", 1)
        from_start = h.first_offset == 0 and not h.evicted
        if roles.is_transaction(topic):
            from_start = h.first_offset == 0 or h.first_batch < batch_id
        rows.append({"topic": topic, "partition": int(part), "from_start": from_start, "min_ts_ms": h.first_ts})
    return rows


def process_batch(session: SessionCaps, frame: DataFrame, batch_id: int, state: WatchState,
                  store: StateStore, settings: WatchSettings, now: float | None = None
                  ) -> tuple[BatchOutcome, WatchState]:
    """Apply one micro-batch (the carry operator's rows, decoded: ``decoded_stream``) to a copy of ``state``; the new state is
    saved in ``store`` and returned. A batch id already applied is skipped (state unchanged). ``session``: the
    watch's capabilities (runtime/session.py)."""
    started = time.time()
    clock = _Clock()
    now = time.time() if now is None else now
    if batch_id <= state.batch_id:  # the stateful operator still runs: its state advances as before
        FrameCache().materialize(frame).unpersist()  # (through the batch's own plan: Spark reports its state size)
        return BatchOutcome(batch_id, 0, skipped=True), state
    state = copy.deepcopy(state)
    cfg = settings.scan
    state.history = state.history.kept_for(cfg.history_interval_ms if cfg.history else None)
    cache = FrameCache()
    try:
        out = cache.materialize(frame)  # the stateful operator runs once per batch, here
        clock("operator")
        # the reader's gap rows (negative offsets: sources/kafka/gaps.py) come back whole, with the
        # per-partition facts and the census, in the one job; the checks never see them (nor the rows
        # of keys whose history left the store: offset -1 too)
        gap = (F.col("offset") < 0) & ~F.col("role").isin(*LEFT_ROLES)
        census = census_frame(out.where(F.col("role") != FOUND), by=(F.col("role"), gap.alias("gap")), more=(F.collect_list(
            F.when(gap, F.struct("offset", F.col(GAP_VALUE).alias("value")))).alias("gaps"),)).collect()
        gaps = [GapRow.parse(r["topic"], r["partition"], g["offset"], g["value"]) for r in census for g in r["gaps"]]
        parts = _per_partition([r for r in census if not r["gap"]])
        if gaps:
            out = out.where(~gap)
            _forget_reset(state, gaps)
        for r in parts:
            if r["role"] in LEFT_ROLES:
                add(state.totals.setdefault("keys_evicted", {}), (LEFT_ROLES[r["role"]],), r["n"])
                if h := state.partitions.get(_key(r["topic"], r["partition"])):
                    h.evicted = True
        starts = [r for r in parts if r["role"] == NEW]
        for r in starts:
            h = state.partitions.setdefault(_key(r["topic"], r["partition"]),
                                            PartitionHistory(int(r["ts"] or 0), int(r["lo"]), batch_id))
            h.next_offset = max(h.next_offset or 0, int(r["hi"]) + 1)  # (watch/catchup.py: the backlog at a restart)
        outcome = BatchOutcome(batch_id, 0)
        if starts:  # nothing new: nothing to judge
            rows = sum(r["n"] for r in parts)
            # a small batch: checks without shuffles
            cache.one_partition = rows <= min(cfg.one_partition_rows, settings.one_partition_rows)
            events = cache.materialize(_events(out, session))
            clock("decode")
            # the census of the events (new records and their context, each record once in a role:
            # counts per grain may repeat a record carried by several groups; the checks read which
            # kinds, times and tables the window holds, never those counts)
            judged = [r for r in census if not r["gap"] and r["role"] in (NEW, *CONTEXT_ROLES)]
            outcome, open_txns, marked = _check(out, events, judged, state, settings, batch_id, cache, clock, session)
            # a server's open transactions are known where the batch holds its markers (the operator
            # hands every held marker of a server with the server's new ones); elsewhere they stay
            # as they were: a batch of heartbeats does not close a transaction
            kept = {k: since for k, since in state.open_txns.items() if k.split("|", 1)[0] not in marked}
            state.open_txns = kept | {_key(s, t): state.open_txns.get(_key(s, t), now) for s, t in open_txns}
        if cfg.history:
            outcome.history = _record_history(session.spark, cfg, state)
            clock("history")
        if gaps:
            found = gap_findings(gaps, settings.scan.roles)
            outcome.findings = [*outcome.findings, *found]
            for r in found:
                add(state.totals["findings"], (r["server"], r["table"], r["check"], r["rule"], r["severity"]), r["count"])
        state.batch_id = batch_id
        store.save(state)
        outcome.seconds = round(time.time() - started, 3)
        outcome.stages = clock.stages
        return outcome, state
    finally:
        cache.release()


def _forget_reset(state: WatchState, gaps: list[GapRow]) -> None:
    """A partition whose offsets went back starts its history again (its first record, from_start)."""
    for g in gaps:
        if g.gap is Gap.OFFSETS_RESET:
            state.partitions.pop(_key(g.topic, g.partition), None)


class _Clock:
    """Seconds per stage of a batch (logged with it: where a slow batch spends its time)."""

    def __init__(self) -> None:
        self.mark, self.stages = time.perf_counter(), {}

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.stages[stage] = round(now - self.mark, 2)
        self.mark = now


def decoded_stream(carried: DataFrame, cfg: ScanConfig) -> DataFrame:
    """The carry operator's rows as the events frame, defined once on the streaming frame (Structured
    Streaming analyses it once, not per batch): the records were decoded once, before the operator
    (``carry_input``); new records come with every column, context with its facts
    (``watch/carry.py``'s ``decoded_rows``), each with the operator's ``role`` and a gap row's value
    (``GAP_VALUE``). ``cfg``: unused since the decoding moved before the operator (kept for callers)."""
    return decoded_rows(carried)


def _events(out: DataFrame, session: SessionCaps) -> DataFrame:
    """New records and their context (a record several groups carry, once), with flags: one
    SQL statement over the decoded rows (``decoded_stream``), one analysis."""
    columns = [c for c in out.columns if c not in ("role", GAP_VALUE, FOUND_COLUMN)]
    coord = set(COORD)
    # (a record several groups carry has the same facts in each, some left out by some: the first present)
    first = ", ".join(f"`{c}`" if c in coord else f"first(`{c}`, true) AS `{c}`" for c in columns)
    plain = ", ".join(f"`{c}`" for c in columns)
    context = ", ".join(repr(r) for r in CONTEXT_ROLES)
    text = (f"SELECT {plain}, true AS is_new, false AS tail, false AS candidate FROM {{out}} WHERE role = '{NEW}' "
            f"UNION ALL SELECT {first}, false AS is_new, max(role = '{TAIL}') AS tail, "
            f"max(role = '{CANDIDATE}') AS candidate FROM {{out}} WHERE role IN ({context}) GROUP BY {', '.join(COORD)}")
    return sql_over(session, text, {"out": out})


def _per_partition(census: list[Row]) -> list[dict[str, Any]]:
    """Per role, topic and partition of the operator's rows: the lowest and highest offset, the
    lowest record time, rows."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in census:
        p = out.setdefault((r["role"], r["topic"], r["partition"]), {
            "role": r["role"], "topic": r["topic"], "partition": r["partition"], "lo": None, "hi": None, "ts": None, "n": 0})
        p["lo"] = r["first_offset"] if p["lo"] is None else min(p["lo"], r["first_offset"])
        p["hi"] = r["last_offset"] if p["hi"] is None else max(p["hi"], r["last_offset"])
        if r["min_ts_ms"] is not None:
            p["ts"] = r["min_ts_ms"] if p["ts"] is None else min(p["ts"], r["min_ts_ms"])
        p["n"] += r["n"]
    return list(out.values())


def _check(out: DataFrame, events: DataFrame, census: list[Row], state: WatchState, settings: WatchSettings,
           batch_id: int, cache: FrameCache, clock: _Clock, session: SessionCaps
           ) -> tuple[BatchOutcome, list[tuple[str, str]], set[str]]:
    """The batch's outcome, its open transactions (server, key) and the servers whose markers it
    holds (as ``_key`` spells them). ``out``: the stateful operator's rows; ``events``: decoded;
    ``census``: the events' census rows."""
    cfg = settings.scan
    facts = facts_from_rows(census, _partitions(state, cfg.roles, batch_id))
    for beat in heartbeats(facts.rows):  # the newest per server, kept across batches for the gauge
        if beat["last_ts_ms"] is not None:
            server = beat["server"] or ""
            state.heartbeats[server] = max(state.heartbeats.get(server, 0), int(beat["last_ts_ms"]))
    _widen_txn_span(facts.txn_span, state.txn_span)
    clock("census")
    # the transactions the carry operator still holds (END seen, events on their way) are judged later
    scope = NewRecords(pending=out.where(F.col("role") == PENDING).select(
                           "topic", "partition", F.col("offset").alias("end_offset")),
                       known_final=out.where(F.col("role") == FINAL_ROLE).select(*COORD),
                       found=out.where(F.col("role") == FOUND).select(*KEY_FOUND),
                       history_step_ms=cfg.history_interval_ms if cfg.history else None)
    got = evaluate(WindowFrames(events), CheckContext(session, facts, cfg, cache), scope,
                   planned=lambda: clock("plan checks"))
    clock("checks")
    grouped = got.counts
    open_txns: list[tuple[str, str]] = []
    finalized: dict[str, dict[str, int]] = {}
    for r in got.parts.get("transactions", []):
        if r["status"] == TxStatus.OPEN:
            open_txns.append((r["server"], r["txn_key"]))
        else:
            per = finalized.setdefault(r["server"] or "", {})
            per[r["status"]] = per.get(r["status"], 0) + 1
    if cfg.history:
        late = absorb(state.history, got.parts[PARTIAL_PART], got.parts[FINDINGS_PART],
                      [r.asDict() for r in census if r["role"] == NEW], cfg.history_interval_ms)
        for server, n in late.items():
            add(state.totals.setdefault("history_late", {}), (server,), n)
    lag = [lag_row_ms(r) for r in got.parts["lag"]]
    by_op = got.parts["by_op"]
    counts = got.parts["counts"][0]
    totals = state.totals
    add(totals.setdefault("records", {}), ("",), int(counts["n"] or 0))
    for r in by_op:
        add(totals["events"], (r["server"], r["table"], r["op"]), r["count"])
    for server, per in finalized.items():
        for status, n in per.items():
            add(totals["transactions"], (server, status), n)
    for r in grouped:
        add(totals["findings"], (r["server"], r["table"], r["check"], r["rule"], r["severity"]), r["count"])
    assert all(r["rule"] in CATALOGUE for r in grouped)
    outcome = BatchOutcome(batch_id, int(counts["n"] or 0), int(counts["bad"] or 0), lag, by_op, finalized, grouped)
    return outcome, open_txns, {_key(r["server"]) for r in facts.rows if r["kind"] == "transaction"}


def _record_history(spark: SparkSession, cfg: ScanConfig, state: WatchState) -> Written:
    """Write the intervals now over (before the state is saved: a crash between the two re-runs the
    batch, which finds its rows committed)."""
    assert cfg.history is not None
    written = record(spark, cfg.history, state.history, cfg.history_interval_ms, cfg.history_lateness_ms)
    for server, n in written.rows.items():
        add(state.totals.setdefault("history_rows", {}), (server,), n)
    return written


def _widen_txn_span(batch: dict[Any, tuple[int, int]], seen: dict[str, list[int]]) -> None:
    """An orphan is a data event on no marker inside the span its server's transaction topic
    covers: in a stream, every marker read so far (a per-trigger cap can read the transaction topic
    a batch ahead; the batch's own markers would leave its events outside)."""
    for server, (lo, hi) in list(batch.items()):
        if server is None or lo is None or hi is None:
            continue
        old = seen.get(server)
        seen[server] = [min(old[0], lo), max(old[1], hi)] if old else [lo, hi]
    for server, (lo, hi) in seen.items():
        batch[server] = (lo, hi)


def overdue(state: WatchState, grace_ms: int, now: float | None = None) -> dict[str, int]:
    """Open transactions per server that have stayed open longer than the grace period."""
    now = time.time() if now is None else now
    out: dict[str, int] = {}
    for k, since in state.open_txns.items():
        if now - since > grace_ms / 1000:
            server = k.split("|", 1)[0]
            out[server] = out.get(server, 0) + 1
    return out
