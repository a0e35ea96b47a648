"""``watch``: a Structured Streaming query over the Kafka stream reader whose stateful operator
(``watch/carry.py``, RocksDB state store) carries each key's history and the open transactions,
one engine batch per micro-batch, metrics served on /metrics until SIGTERM/SIGINT.

A failing micro-batch is never skipped: the query stops with the error, the exporter keeps the
last good snapshot and counts the failure, and the query is restarted from its checkpoint (the
failed batch is planned again from the same offsets) after a back-off. A failure every retry
would repeat (the cluster cannot run a Python worker or load a class: runtime/failures.py) stops
the watch instead, with its fix-it line (exit 2).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cdc_monitor.runtime.failures import setup_problem
from cdc_monitor.sinks.prometheus import MetricsServer, MetricsSnapshot
from cdc_monitor.vocabulary import TxStatus
from cdc_monitor.watch.batch import BatchOutcome, WatchSettings, decoded_stream, overdue, process_batch
from cdc_monitor.watch.catchup import CatchUp
from cdc_monitor.watch.state import StateStore, WatchState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps
    from cdc_monitor.sinks.web_config import WebConfig

TOTAL_LABELS = {"events": ("server", "table", "op"), "transactions": ("server", "status"),
                "findings": ("server", "table", "check", "rule", "severity"),
                "history_rows": ("server",), "history_late": ("server",),  # (watch --history)
                "keys_evicted": ("reason",)}


@dataclass
class WatchProgress:
    """``watch``'s outcome so far, as its exporter serves it (``MetricsSnapshot.from_outcome``)."""

    metrics_kind: ClassVar[str] = "watch"

    last: BatchOutcome | None  # the last batch applied (None: none yet, or idle since)
    transactions: dict[str, dict[str, int]]  # server -> status -> n (the last batch's final ones, open, overdue)
    totals: dict[str, list[dict[str, Any]]]  # running counters: records, events, transactions, findings
    finished_at: float | None
    failures: int  # failed windows
    up: bool  # False from a failed window until a batch completes again
    heartbeats: list[dict[str, Any]]  # per server, the newest heartbeat seen
    state: dict[str, float]  # the state store's rows and bytes, the driver's memory


@dataclass
class WatchOptions:
    source_options: dict[str, str]
    checkpoint: Path
    interval_s: float
    host: str
    port: int
    job: str
    settings: WatchSettings
    max_failures: int = 0  # 0: retry forever
    web_config: WebConfig | None = None  # TLS and basic auth for /metrics (sinks/web_config.py)
    reader: str = "python"  # watch/stream.py: the bundled data source, or Spark's Kafka connector
    live: bool = False  # a terminal's: the catch-up on a live line (watch/catchup.py)


def driver_rss() -> float:
    """Resident memory of this (the driver's Python) process, in bytes."""
    try:
        return float(int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        import resource

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def totals_rows(state: WatchState) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for family, labels in TOTAL_LABELS.items():
        rows = []
        for key, n in sorted(state.totals.get(family, {}).items()):
            values = key.split("|")
            rows.append({**dict(zip(labels, values, strict=False)), "count": n})
        out[family] = rows
    return out


class Watcher:
    def __init__(self, session: SessionCaps, opts: WatchOptions, log=None) -> None:
        self.session, self.spark = session, session.spark
        self.opts = opts
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.store = StateStore(opts.checkpoint)
        self.store.bind_reader(opts.reader)
        self.state = self.store.load()
        self.failures = 0
        self.up = True  # False from a failed window until a batch completes again
        self.last: BatchOutcome | None = None
        self.last_finished: float | None = None
        self.idle = False
        self.stopping = threading.Event()
        self.query = None
        self.store_size: dict[str, float] = {}
        self.applied = 0  # batches this process applied
        self.catch_up = CatchUp()  # on a terminal, from the query's start until it is caught up
        self.server = MetricsServer(opts.host, opts.port, self.snapshot(), opts.web_config)
        url = f"{self.server.scheme}://{opts.host}:{self.server.port}/metrics"
        self.log(f"cdc-monitor watch: serving {url}; checkpoint {opts.checkpoint}; resuming after batch {self.state.batch_id}"
                 if self.state.batch_id >= 0 else f"cdc-monitor watch: serving {url}; new checkpoint {opts.checkpoint}")

    def snapshot(self) -> MetricsSnapshot:
        return MetricsSnapshot.from_outcome(self.progress(), self.opts.job)

    def progress(self) -> WatchProgress:
        """What the watch has seen so far (the last batch, unless idle since) and its health."""
        last = None if self.idle else self.last
        transactions: dict[str, dict[str, int]] = {}
        if last is not None:
            transactions = {s: dict(v) for s, v in last.finalized.items()}
        late = overdue(self.state, self.opts.settings.grace_ms)
        for key in self.state.open_txns:
            server = key.split("|", 1)[0]
            transactions.setdefault(server, {})
        for server, per in transactions.items():
            opened = sum(1 for k in self.state.open_txns if k.split("|", 1)[0] == server)
            per[TxStatus.OVERDUE] = late.get(server, 0)
            per[TxStatus.OPEN] = opened - per[TxStatus.OVERDUE]
        totals = totals_rows(self.state)
        state = dict(self.store_size, driver_rss_bytes=driver_rss())
        totals["records"] = [{"job": self.opts.job, "count": self.state.totals.get("records", {}).get("", 0)}]
        return WatchProgress(
            last=last, transactions=transactions, totals=totals, finished_at=self.last_finished, failures=self.failures,
            up=self.up, heartbeats=[{"server": s, "last_ts_ms": ts} for s, ts in sorted(self.state.heartbeats.items())],
            state=state)

    def on_batch(self, frame: DataFrame, batch_id: int) -> None:
        outcome, state = process_batch(self.session, frame, batch_id, self.state, self.store, self.opts.settings)
        if outcome.skipped:
            self.log(f"cdc-monitor watch: batch {batch_id} was already applied; skipped")
            return
        self.state = state
        self.applied += 1
        if os.environ.get("CDC_MONITOR_WATCH_CRASH_AFTER_SAVE") == str(self.applied):  # fault injection (tests):
            os.kill(os.getpid(), signal.SIGKILL)  # the batch is saved here, Spark has not committed it yet
        self.last, self.last_finished, self.idle, self.up = outcome, time.time(), False, True
        self.catch_up.batch(outcome.records)
        self._read_store_size()
        found = sum(int(r["count"]) for r in outcome.findings)
        self.log(f"cdc-monitor watch: batch {batch_id}: {outcome.records} records, {found} findings, "
                 f"{len(state.open_txns)} open transaction(s), "
                 + (f"{sum(outcome.history.rows.values())} history row(s) written, " if outcome.history else "")
                 + f"{outcome.seconds:.1f}s ("
                 + ", ".join(f"{k} {v:.1f}s" for k, v in outcome.stages.items()) + ")")
        self.server.update(self.snapshot())

    def _read_store_size(self) -> None:
        """The state store's size as of the last batch Spark reported progress for."""
        progress = self.query.lastProgress if self.query is not None else None
        ops = (progress or {}).get("stateOperators") or []
        if ops:
            self.store_size = {"rows": float(sum(o.get("numRowsTotal", 0) for o in ops)),
                               "bytes": float(sum(o.get("memoryUsedBytes", 0) for o in ops)),
                               "disk_bytes": float(sum((o.get("customMetrics") or {}).get("rocksdbSstFileSize", 0)
                                                       for o in ops))}

    def _start_query(self):
        from cdc_monitor.watch.carry import STREAM_CONF, carry_stream
        from cdc_monitor.watch.stream import open_stream

        for name, value in STREAM_CONF.items():
            self.spark.conf.set(name, value)
        topics = [t for t, _ in self.opts.settings.topic_partitions]
        stream = open_stream(self.spark, self.opts.source_options, self.opts.reader, topics)
        carried = decoded_stream(carry_stream(stream, self.opts.settings.carry(), self.opts.settings.scan, self.session),
                                 self.opts.settings.scan)
        return (carried.writeStream.foreachBatch(self.on_batch)
                .option("checkpointLocation", str(self.opts.checkpoint / "spark"))
                .trigger(processingTime=f"{self.opts.interval_s} seconds").start())

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.set())
        backoff = 1.0
        self.catch_up = CatchUp.start(self.opts.live, self.session, self.opts.source_options,
                                      self.opts.settings.topic_partitions, self.state)
        while not self.stopping.is_set():
            self.query = self._start_query()
            while not self.stopping.is_set() and self.query.isActive:
                self.stopping.wait(1.0)
                self._refresh_idle()
            if self.stopping.is_set():
                break
            err = self.query.exception()
            if (problem := setup_problem(err)) is not None:  # the cluster cannot run it: every retry fails alike
                self._shutdown()
                raise problem
            self.failures += 1
            self.up = False
            first = (str(err).strip().splitlines() or ["stopped"])[0][:300] if err else "query stopped"
            self.log(f"cdc-monitor watch: window failed ({first}); serving the last good metrics, retrying in {backoff:.0f}s")
            self.server.update(self.snapshot())
            if self.opts.max_failures and self.failures >= self.opts.max_failures:
                self.log("cdc-monitor watch: too many failed windows; stopping")
                self._shutdown()
                return 2
            self.stopping.wait(backoff)
            backoff = min(backoff * 2, 60.0)
        self._shutdown()
        return 0

    def _refresh_idle(self) -> None:
        """No data: the monitor is alive and the window is empty; open transactions age. The state
        store's size arrives with the query's progress, after the batch."""
        self._read_store_size()
        if not self.up and self.query is not None and self.query.isActive and self.query.lastProgress is not None:
            self.up = True  # the restarted query completed a trigger: its source answers again
        quiet_for = time.time() - (self.last_finished or 0)
        if self.query is not None and quiet_for > max(2 * self.opts.interval_s, 5) and not self.query.status.get("isTriggerActive"):
            self.idle, self.last_finished = True, time.time()
        self.server.update(self.snapshot())

    def _shutdown(self) -> None:
        self.catch_up.stop()
        self.log("cdc-monitor watch: stopping (the checkpoint keeps the position)")
        if self.query is not None and self.query.isActive:
            self.query.stop()
        self.server.stop()
