"""``reconcile``'s evaluation: the window's events folded per key, the source read through JDBC,
one classification, a ``ReconcileOutcome``. Seven actions whatever the tables (the decode's count,
the window's tables, the catalogue, the source's position, the key ranges, the counts, the
samples), 10 Spark jobs measured; ``--settle`` adds a second read and its counts."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.decoding import decode_records
from cdc_monitor.errors import InputError
from cdc_monitor.reconcile.compare import classify, samples, summarise, topic_rows
from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile, key_object, shown
from cdc_monitor.reconcile.source_side import read_catalogue, read_position, read_tables
from cdc_monitor.reconcile.topic_state import latest_state, topic_tables
from cdc_monitor.runtime.progress import live_steps, spark_tasks
from cdc_monitor.runtime.session import SessionCaps, capabilities
from cdc_monitor.vocabulary import MISMATCH_STATES, ReconcileState, TopicRoles

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame

    from cdc_monitor.reconcile.connection import JdbcSettings
    from cdc_monitor.reconcile.dialects import SourceTable
    from cdc_monitor.reconcile.topic_state import TopicTable
    from cdc_monitor.sources import SourceResult


def _checksum(value: int | None) -> str:
    return format((value or 0) & 0xFFFF_FFFF_FFFF_FFFF, "016x")


def run_reconcile(source: SourceResult, jdbc: JdbcSettings, tables: tuple[str, ...] = (),
                  roles: TopicRoles | None = None, max_samples: int = 10, rows_per_partition: int = 500_000,
                  progress: Callable[[str], None] | None = None,
                  settle: tuple[float, Callable[[], SourceResult]] | None = None, live: bool = False,
                  session: SessionCaps | None = None) -> ReconcileOutcome:
    """``settle``: (seconds, a function reading the window again): mismatching keys are checked once
    more that much later, against a fresh read of both sides; those that then agree were in flight.
    ``live``: the running step on a live line (a terminal's: runtime/progress.py); ``session``: the
    capabilities of the source's session (runtime/session.py; by default asked here)."""
    started = time.time()
    timings: dict[str, float] = {}
    mark = [started]
    spark = source.records.sparkSession
    caps = session or capabilities(spark)
    steps = live_steps(live, "read decode", lambda: spark_tasks(caps))

    def lap(name: str, then: str | None = None) -> None:
        """``name`` ended (its line), ``then`` runs next (the live line's)."""
        now = time.time()
        timings[name] = round(now - mark[0], 3)
        mark[0] = now
        if progress is not None:
            progress(f"{name.replace('_', ' ')}: {timings[name]:.1f}s")
        if then:
            steps.step(then)
        else:
            steps.idle()

    events = decode_records(source.records, roles, texts=True, session=caps).persist()
    steps.start()
    try:
        records = events.count()
        window = topic_tables(events)
        lap("read_decode", "source catalogue")
        wanted = list(tables) or sorted(window)
        catalogue = read_catalogue(spark, jdbc, wanted)
        absent = [t for t in wanted if t not in catalogue]
        if tables and absent:
            raise InputError(f"--tables {', '.join(absent)}: not in the source database (or not readable by "
                             f"this user): check the names (schema.table, as the topics name them)")
        keyless = [t for t in catalogue.values() if not t.key]
        if tables and keyless:
            raise InputError(f"--tables {keyless[0].name}: has no primary key, and reconcile compares rows by key: "
                             "leave it out of --tables")
        skipped = [{"table": t, "reason": "not in the source"} for t in absent]
        skipped += [{"table": t.name, "reason": "no primary key"} for t in keyless]
        chosen: list[SourceTable] = [t for t in catalogue.values() if t.key]
        if not chosen:
            raise InputError("no table to reconcile: the window's tables "
                             f"({', '.join(wanted) or 'none'}) are not in the source database with a primary key")
        position_now = read_position(spark, jdbc)
        window_txid = _newest_txid(window)
        classified, partitions = _classified(events, window, jdbc, chosen, rows_per_partition)
        classified = classified.persist()
        lap("source_catalogue", "compare")
        try:
            counts, diffs = summarise(classified)
            settling = settle if settle is not None and any(r["state"] in MISMATCHES for r in counts) else None
            lap("compare", "settle" if settling else "samples")
            if settling is not None:
                classified, counts, diffs = _settle(classified, settling, jdbc, chosen, roles, rows_per_partition, caps)
                lap("settle", "samples")
            examples = samples(classified, max_samples) if any(
                r["state"] != ReconcileState.MATCH.value for r in counts) else []
            steps.idle()
        finally:
            classified.unpersist()
    finally:
        events.unpersist()
        steps.stop()
    lsns = [t.max_lsn for t in window.values() if t.max_lsn is not None]
    result = ReconcileOutcome(
        tables=[_table(t, counts, diffs, examples, partitions.get(t.name, 1), window[t.name].topics if t.name in window else ())
                for t in sorted(chosen, key=lambda t: t.name)],
        skipped=skipped,
        source={"url": jdbc.shown_url, "dialect": jdbc.dialect.name, "position": position_now,
                "window_position": max(lsns) if lsns else None, "window_txid": window_txid},
        inputs=dict(source.description), records=records, timings=timings)
    result.finished_at = time.time()
    result.duration_seconds = round(result.finished_at - started, 3)
    return result


MISMATCHES = tuple(s.value for s in MISMATCH_STATES)


def _newest_txid(window: dict[str, TopicTable]) -> int | None:
    """The newest transaction of the whole window, not only of the chosen tables: the window is
    complete up to it, whichever table its events touched."""
    txids = [t.max_txid for t in window.values() if t.max_txid is not None]
    return max(txids) if txids else None


def _classified(events: DataFrame, window: dict[str, TopicTable], jdbc: JdbcSettings, chosen: list[SourceTable],
                rows_per_partition: int) -> tuple[DataFrame, dict[str, int]]:
    """Every key of ``chosen`` classified: the source's tables read, the window's events folded."""
    source_frame, partitions = read_tables(events.sparkSession, jdbc, chosen, rows_per_partition)
    state = latest_state(events, {t.name: window[t.name] for t in chosen if t.name in window})
    return classify(source_frame, topic_rows(state, chosen, window), _newest_txid(window)), partitions


def _settle(first: DataFrame, settle: tuple[float, Callable[[], SourceResult]], jdbc: JdbcSettings,
            chosen: list[SourceTable], roles: TopicRoles | None, rows_per_partition: int, session: SessionCaps):
    """The first pass with its mismatching keys that agree (or are both absent) on a second read
    ``settle[0]`` seconds later turned in flight; its counts and differences."""
    seconds, read_again = settle
    time.sleep(seconds)
    source = read_again()
    events = decode_records(source.records, roles, texts=True, session=session).persist()
    try:
        second, _ = _classified(events, topic_tables(events), jdbc, chosen, rows_per_partition)
        mismatched = F.col("state").isin(*MISMATCHES)
        # checkpointed: the second read's plan (its own observed metrics among them) stays out of the join
        still = second.where(mismatched).select("table", "key", F.lit(True).alias("still")).localCheckpoint()
        settled = (first.join(still, ["table", "key"], "left")
                   .withColumn("state", F.when(mismatched & F.col("still").isNull(),
                                               F.lit(ReconcileState.IN_FLIGHT.value)).otherwise(F.col("state")))
                   .drop("still").persist())
        counts, diffs = summarise(settled)
    finally:
        events.unpersist()
    first.unpersist()
    return settled, counts, diffs


def _table(t: SourceTable, counts: list[dict], diffs: list[dict], examples: list[dict], partitions: int,
           topics: tuple[str, ...]) -> TableReconcile:
    mine = [r for r in counts if r["table"] == t.name]
    rows = {s: sum(int(r["n"]) for r in mine if r["state"] == s.value) for s in ReconcileState}
    names = [c.name for c in t.columns]
    columns = {names[int(r["idx"])]: int(r["n"]) for r in sorted(diffs, key=lambda r: r["idx"]) if r["table"] == t.name}
    picked: dict[ReconcileState, list[dict]] = {s: [] for s in ReconcileState if s is not ReconcileState.MATCH}
    for r in examples:
        if r["table"] != t.name:
            continue
        sample: dict = {"key": key_object(r["key"], t.key)}
        if r["diff"]:
            sample["columns"] = [{"column": names[i], "source": shown(r["s_vals"][i]), "topic": shown(r["t_vals"][i])}
                                 for i in r["diff"]]
        picked[ReconcileState(r["state"])].append(sample)
    return TableReconcile(
        table=t.name, key_columns=t.key, source_partitions=partitions, topics=topics,
        source_rows=sum(int(r["s_rows"] or 0) for r in mine), topic_rows=sum(int(r["t_rows"] or 0) for r in mine),
        rows=rows, columns_differing=columns, unavailable_values=sum(int(r["unavailable"] or 0) for r in mine),
        source_checksum=_checksum(_xor(r["s_sum"] for r in mine)), topic_checksum=_checksum(_xor(r["t_sum"] for r in mine)),
        samples={s: sorted(v, key=lambda x: str(x["key"])) for s, v in picked.items()})


def _xor(values) -> int:
    out = 0
    for v in values:
        out ^= int(v or 0)
    return out
