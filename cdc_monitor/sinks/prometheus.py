"""Prometheus metrics (docs/metrics.md lists them): one collector over a results snapshot, and transports.

Render and transport are separate: ``MetricsSnapshot`` -> ``SnapshotCollector`` -> a private
``CollectorRegistry`` (never the global one); ``render`` gives the exposition text, ``push``
replaces a Pushgateway group, ``write_textfile`` writes atomically for node_exporter, and
``MetricsServer`` serves /metrics (``watch``). Labels never carry keys, offsets or transaction ids.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector, CollectorRegistry

from cdc_monitor.checks.lag import HISTOGRAM_LE_S
from cdc_monitor.errors import InputError
from cdc_monitor.vocabulary import OPS, TxStatus

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult
    from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile
    from cdc_monitor.sinks.web_config import WebConfig
    from cdc_monitor.verbs.scan import Outcome as ScanOutcome

QUANTILES = (("0.5", "p50_ms"), ("0.95", "p95_ms"), ("0.99", "p99_ms"), ("1", "max_ms"))
KNOWN_OPS = frozenset(OPS)  # other op values are grouped: labels stay bounded
# overdue: open longer than watch's grace period (quiet systems delay END legitimately)
TX_STATUSES = tuple(s.value for s in TxStatus)  # watch adds overdue to a window's statuses


class WatchMetrics(Protocol):
    """What ``MetricsSnapshot.from_outcome`` reads of ``watch``'s progress (watch/runner.py's
    ``WatchProgress``): declared here, so this sink never imports watch (watch imports it)."""

    metrics_kind: ClassVar[str]
    last: Any  # the last batch's outcome (lag, events, findings, records, invalid_records, seconds), or None
    transactions: dict[str, dict[str, int]]
    totals: dict[str, list[dict[str, Any]]]
    finished_at: float | None
    failures: int
    up: bool
    heartbeats: list[dict[str, Any]]
    state: dict[str, float]


@dataclass
class MetricsSnapshot:
    """The numbers a run produced, in label-ready form (``from_outcome``)."""

    job: str
    lag: list[dict[str, Any]] = field(default_factory=list)  # server, table, count, sum_ms, p*_ms, last_source_ts_ms
    events: list[dict[str, Any]] = field(default_factory=list)  # server, table, op, count
    transactions: dict[str, dict[str, int]] = field(default_factory=dict)  # server -> status -> n
    findings: list[dict[str, Any]] = field(default_factory=list)  # server, table, check, rule, severity, count
    records: int = 0
    invalid_records: int = 0
    finished_at: float | None = None
    duration_seconds: float | None = None
    window_failures: int = 0
    up: bool | None = None  # watch: False while its query is failing (the broker unreachable, a window failing)
    totals: dict[str, list[dict[str, Any]]] | None = None  # watch: running events/transactions/findings
    job_level: bool = True  # include the monitor's own and window-wide series
    heartbeats: list[dict[str, Any]] = field(default_factory=list)  # server, last_ts_ms
    state: dict[str, float] | None = None  # watch: its state store's rows, bytes and driver memory
    reconcile: list[TableReconcile] | None = None  # reconcile: per table, its rows by state and checksums
    lineage: Mapping[str, int] | None = None  # --openlineage: the run's events delivered and failed

    @classmethod
    def from_outcome(cls, outcome: ScanResult | ScanOutcome | WatchMetrics | ReconcileOutcome, job: str) -> MetricsSnapshot:
        """The one way a run's outcome becomes metrics, whichever transport takes them (the
        exporter ``watch`` serves, a Pushgateway push, a node_exporter textfile): a scanned
        window (or the ``scan`` verb's outcome), ``watch``'s progress so far, a reconciliation."""
        kind = getattr(outcome, "metrics_kind", None)  # (each outcome class says which it is: no import here)
        if kind == "scan":
            outcome, kind = outcome.result, "window"
        if kind == "window":
            r = outcome
            return cls(
                job=job, lag=r.lag, events=r.events_by_table,
                transactions=dict(r.transactions.get("by_server", {})), findings=r.finding_counts,
                records=int(r.summary.get("records", 0)), invalid_records=int(r.summary.get("invalid_records", 0)),
                finished_at=r.finished_at, duration_seconds=r.duration_seconds, heartbeats=r.heartbeats,
            )
        if kind == "watch":
            w, last = outcome, outcome.last
            return cls(
                job=job, lag=last.lag if last else [], events=last.events if last else [],
                transactions=w.transactions, findings=last.findings if last else [],
                records=last.records if last else 0, invalid_records=last.invalid_records if last else 0,
                finished_at=w.finished_at, duration_seconds=last.seconds if last else None,
                window_failures=w.failures, up=w.up, totals=w.totals, heartbeats=w.heartbeats, state=w.state,
            )
        if kind == "reconcile":
            return cls(job=job, records=outcome.records, finished_at=outcome.finished_at,
                       duration_seconds=outcome.duration_seconds, reconcile=outcome.tables)
        raise TypeError(f"no metrics for a {type(outcome).__name__}")

    def servers(self) -> set[str]:
        found = {str(r.get("server") or "") for rows in (self.lag, self.events, self.findings, self.heartbeats) for r in rows}
        return (found | set(self.transactions)) - {""}

    def group(self, server: str) -> MetricsSnapshot:
        """The part of this snapshot one Pushgateway group carries: one server's series, or (server
        "") the job-level series and those without a server (undecodable records)."""
        def keep(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [r for r in rows if (r.get("server") or "") == server]
        job_level = server == ""
        return MetricsSnapshot(self.job, keep(self.lag), keep(self.events),
                               {k: v for k, v in self.transactions.items() if k == server}, keep(self.findings),
                               self.records, self.invalid_records, self.finished_at, self.duration_seconds,
                               self.window_failures, job_level=job_level, heartbeats=keep(self.heartbeats),
                               reconcile=self.reconcile if job_level else None, lineage=self.lineage if job_level else None)


STATE_GAUGES = {
    "rows": "watch: rows in its state store (key histories, open transactions, candidates, table tails)",
    "bytes": "watch: memory its state store uses (RocksDB, on the executors)",
    "disk_bytes": "watch: size of its state store's files (RocksDB SST files, on the executors)",
    "driver_rss_bytes": "watch: resident memory of the driver process",
}


def _label(value: Any) -> str:
    return "" if value is None else str(value)


def _per_table_lag(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """One row per (server, table); if a table spans topics, the one with most events speaks."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        k = (_label(r.get("server")), _label(r.get("table")))
        if k not in out or (r.get("count") or 0) > (out[k].get("count") or 0):
            out[k] = r
    return out


class SnapshotCollector(Collector):
    """Yields the metric families of the snapshot it currently holds (swapped atomically)."""

    def __init__(self, snapshot: MetricsSnapshot | None = None) -> None:
        self._snapshot = snapshot
        self._lock = threading.Lock()

    def update(self, snapshot: MetricsSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot

    def describe(self) -> Iterator[Metric]:
        return iter(())  # families depend on the snapshot; collect() is cheap enough to run at register time

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap = self._snapshot
        if snap is None:
            return
        if snap.reconcile is not None:  # a reconcile run: its own series and the monitor's
            yield from _reconcile_families(snap.reconcile)
        else:
            yield from _window_families(snap)
        if snap.job_level:
            yield from _monitor_families(snap)
        if snap.totals is not None:
            yield from _counter_families(snap.totals)


def _window_families(snap: MetricsSnapshot) -> Iterator[Metric]:
    lag = SummaryMetricFamily("cdc_lag_seconds", "CDC lag (payload.ts_ms - source.ts_ms) over the latest window; "
                              "snapshot events excluded", labels=["server", "table"])
    # SummaryMetricFamily has no quantile argument: add the samples by hand
    for (server, table), r in sorted(_per_table_lag(snap.lag).items()):
        lag.add_metric([server, table], count_value=int(r.get("count") or 0), sum_value=(r.get("sum_ms") or 0) / 1000)
        for q, col in QUANTILES:
            if r.get(col) is not None:
                lag.add_sample("cdc_lag_seconds", {"server": server, "table": table, "quantile": q}, r[col] / 1000)
    yield lag
    hist = HistogramMetricFamily("cdc_lag_distribution_seconds", "CDC lag over the latest window as a histogram (the "
                                 "same buckets everywhere: histogram_quantile aggregates tables and instances); "
                                 "snapshot events excluded", labels=["server", "table"])
    for (server, table), r in sorted(_per_table_lag(snap.lag).items()):
        if r.get("le_counts") is not None:
            buckets = [(format(le, "g"), n) for le, n in zip(HISTOGRAM_LE_S, r["le_counts"], strict=True)]
            hist.add_metric([server, table], [*buckets, ("+Inf", int(r.get("count") or 0))],
                            sum_value=(r.get("sum_ms") or 0) / 1000)
    yield hist
    fresh = GaugeMetricFamily("cdc_last_source_timestamp_seconds", "Newest valid source.ts_ms seen in the window",
                              labels=["server", "table"])
    for (server, table), r in sorted(_per_table_lag(snap.lag).items()):
        if r.get("last_source_ts_ms") is not None:
            fresh.add_metric([server, table], r["last_source_ts_ms"] / 1000)
    yield fresh
    beat = GaugeMetricFamily("cdc_last_heartbeat_timestamp_seconds", "Newest Debezium heartbeat (its ts_ms) seen per "
                             "server: advances while the connector is alive, even when its database is idle",
                             labels=["server"])
    for r in snap.heartbeats:
        if r.get("last_ts_ms") is not None:
            beat.add_metric([_label(r.get("server"))], r["last_ts_ms"] / 1000)
    yield beat
    events = GaugeMetricFamily("cdc_window_events", "Change events in the latest window (op c/u/d/r/t/m; "
                               "'missing' and 'invalid' for events breaking the op rules)", labels=["server", "table", "op"])
    by_op: dict[tuple[str, str, str], int] = {}
    for r in snap.events:
        op = r.get("op")
        op_label = op if op in KNOWN_OPS else ("missing" if op in (None, "") else "invalid")
        k = (_label(r.get("server")), _label(r.get("table")), op_label)
        by_op[k] = by_op.get(k, 0) + int(r["count"])
    for labels, n in sorted(by_op.items()):
        events.add_metric(list(labels), n)
    yield events
    txns = GaugeMetricFamily("cdc_window_transactions", "Transactions by status in the latest window",
                             labels=["server", "status"])
    for server, by_status in sorted(snap.transactions.items()):
        for status in TX_STATUSES:
            if status in by_status or status != TxStatus.OVERDUE:
                txns.add_metric([server, status], int(by_status.get(status, 0)))
    yield txns
    found = GaugeMetricFamily("cdc_window_findings", "Findings in the latest window",
                              labels=["server", "table", "check", "rule", "severity"])
    for r in snap.findings:
        found.add_metric([_label(r.get(k)) for k in ("server", "table", "check", "rule", "severity")], int(r["count"]))
    yield found


def _monitor_families(snap: MetricsSnapshot) -> Iterator[Metric]:
    for name, doc, value in (("cdc_window_records", "Kafka records read in the latest window", snap.records),
                             ("cdc_window_invalid_records", "Records that could not be decoded in the latest window",
                              snap.invalid_records)):
        fam = GaugeMetricFamily(name, doc, labels=["job"])
        fam.add_metric([snap.job], value)
        yield fam
    if snap.finished_at is not None:
        done = GaugeMetricFamily("cdc_monitor_last_success_timestamp_seconds", "When a window last completed",
                                 labels=["job"])
        done.add_metric([snap.job], snap.finished_at)
        yield done
    if snap.duration_seconds is not None:
        took = GaugeMetricFamily("cdc_monitor_window_duration_seconds", "Time the last window took", labels=["job"])
        took.add_metric([snap.job], snap.duration_seconds)
        yield took
    fails = CounterMetricFamily("cdc_monitor_window_failures", "Windows that failed since the monitor started",
                                labels=["job"])
    fails.add_metric([snap.job], snap.window_failures)
    yield fails
    if snap.up is not None:
        up = GaugeMetricFamily("cdc_monitor_up", "1 while the monitor's windows complete, 0 while they fail "
                               "(watch keeps serving the last good metrics)", labels=["job"])
        up.add_metric([snap.job], 1.0 if snap.up else 0.0)
        yield up
    if snap.lineage is not None:
        sent = GaugeMetricFamily("cdc_monitor_openlineage_events", "The run's OpenLineage events by result: delivered, or "
                                 "failed (the endpoint unreachable or refusing them; the run's result stands)",
                                 labels=["job", "result"])
        for result in ("delivered", "failed"):
            sent.add_metric([snap.job, result], snap.lineage.get(result, 0))
        yield sent
    for name, doc in STATE_GAUGES.items():
        if snap.state is not None and name in snap.state:
            fam = GaugeMetricFamily(f"cdc_monitor_state_{name}", doc, labels=["job"])
            fam.add_metric([snap.job], snap.state[name])
            yield fam


def _reconcile_families(tables: list[TableReconcile]) -> Iterator[Metric]:
    fam = GaugeMetricFamily("cdc_reconcile_rows", "Rows of a table by reconciliation state (match, missing, extra, "
                            "differs, in_flight) in the latest reconcile run", labels=["table", "state"])
    equal = GaugeMetricFamily("cdc_reconcile_checksum_equal", "1 when the table's source and topic checksums are equal",
                              labels=["table"])
    for t in tables:
        for state, n in t.rows.items():
            fam.add_metric([_label(t.table), state.value], n)
        equal.add_metric([_label(t.table)], float(t.source_checksum == t.topic_checksum))
    yield fam
    yield equal


def _counter_families(totals: dict[str, list[dict[str, Any]]]) -> Iterator[Metric]:
    specs = (("cdc_events", "Change events since the monitor started", ["server", "table", "op"], "events"),
             ("cdc_transactions", "Transactions by final status since the monitor started", ["server", "status"],
              "transactions"),
             ("cdc_findings", "Findings since the monitor started", ["server", "table", "check", "rule", "severity"],
              "findings"),
             ("cdc_history_rows_written", "History rows (per table and interval) written since the monitor started",
              ["server"], "history_rows"),
             ("cdc_history_late_events", "Events that arrived too late to be measured in the history", ["server"],
              "history_late"),
             ("cdc_monitor_state_keys_evicted", "watch: key histories that left the state store (one per key and "
              "partition it was held in), by reason: ttl (idle for --key-ttl) or max_keys (least recently seen "
              "beyond [watch] max_keys)", ["reason"], "keys_evicted"))
    if "records" in totals:
        fam = CounterMetricFamily("cdc_records", "Kafka records processed since the monitor started", labels=["job"])
        for r in totals["records"]:
            fam.add_metric([_label(r.get("job"))], int(r["count"]))
        yield fam
    for name, doc, labels, key in specs:
        fam = CounterMetricFamily(name, doc, labels=labels)
        for r in totals.get(key, []):
            fam.add_metric([_label(r.get(lab)) for lab in labels], int(r["count"]))
        yield fam


def registry_for(snapshot: MetricsSnapshot) -> tuple[CollectorRegistry, SnapshotCollector]:
    registry = CollectorRegistry(auto_describe=False)
    collector = SnapshotCollector(snapshot)
    registry.register(collector)
    return registry, collector


def render(snapshot: MetricsSnapshot) -> bytes:
    from prometheus_client import generate_latest

    return generate_latest(registry_for(snapshot)[0])


def write_textfile(snapshot: MetricsSnapshot, path: str) -> None:
    """Atomically (temp file + rename), as node_exporter's textfile collector needs."""
    from prometheus_client import write_to_textfile

    if not path.endswith(".prom"):
        raise InputError(f"--textfile {path}: node_exporter only reads files ending in .prom")
    try:
        write_to_textfile(path, registry_for(snapshot)[0])
    except OSError as err:
        raise InputError(f"cannot write --textfile {path} ({err.strerror}): check the folder exists and is writable") from None


def push(snapshot: MetricsSnapshot, gateway: str, timeout: float = 10.0) -> list[dict[str, str]]:
    """PUT one group per server (grouping key job + server) plus one for the job itself: each PUT
    replaces its group, so series of tables gone from this window never linger. A server gone
    from the window entirely keeps its last group until deleted (``delete_from_gateway``).
    Returns the grouping keys pushed."""
    from prometheus_client import push_to_gateway

    keys = []
    for server in ["", *sorted(snapshot.servers())]:
        key = {"server": server} if server else {}
        try:
            push_to_gateway(gateway, job=snapshot.job, registry=registry_for(snapshot.group(server))[0],
                            grouping_key=key, timeout=timeout)
        except OSError as err:
            raise InputError(f"cannot push to the Pushgateway at {gateway} ({err}): check --push-gateway") from None
        keys.append({"job": snapshot.job, **key})
    return keys


class MetricsServer:
    """/metrics on HOST:PORT over a collector whose snapshot ``update`` swaps (watch's exporter)."""

    def __init__(self, host: str, port: int, snapshot: MetricsSnapshot | None = None,
                 web_config: WebConfig | None = None) -> None:
        from cdc_monitor.sinks.metrics_http import serve

        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = SnapshotCollector(snapshot)
        self.registry.register(self.collector)
        self.scheme = "https" if web_config is not None and web_config.tls else "http"
        try:
            self.server = serve(host, port, self.registry, web_config)
        except OSError as err:
            raise InputError(f"cannot listen on {host}:{port} ({err.strerror}): choose another --listen") from None
        self.port = self.server.server_port

    def update(self, snapshot: MetricsSnapshot) -> None:
        self.collector.update(snapshot)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
