"""Debezium itself: its PostgreSQL connector (3.6.1, pgoutput, transaction metadata, heartbeats,
JSON with schemas) in Kafka Connect, on PostgreSQL 15 and the suite's Apache Kafka broker, writing
the traffic of tests/support/debezium_workload.py (one world for these tests: conftest's
``debezium_world``). Clean traffic gives no finding; a connector crash gives exactly its re-sent
events, as ``replayed_after_restart``; reconcile matches the database row for row."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import time
from collections import Counter

import pytest

from cdc_monitor.checks.ordering import REPLAYED_AFTER_RESTART
from cdc_monitor.config import ScanConfig
from cdc_monitor.history.store import read_committed
from cdc_monitor.vocabulary import GENERIC_OPS, SEVERITY_RANK, Severity
from tests.support import debezium_workload as w
from tests.support.debezium import HEARTBEAT_MS
from tests.support.debezium_world import HEARTBEAT_TOPIC, PREFIX, TOPICS, data_topic

SERVER = PREFIX


def _scan(spark, world, reader: str, end_ms: int | None):
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    flags = KafkaFlags(bootstrap_servers=world.bootstrap, topics=TOPICS, reader=reader,
                       end=str(end_ms) if end_ms is not None else None)
    return run_scan(prepare_input((), flags).read(spark), ScanConfig(max_findings=100_000))


def _by_table_op(result) -> Counter[tuple[str, str]]:
    return Counter({(r["table"], r["op"]): r["count"] for r in result.events_by_table if r["server"] == SERVER})


@pytest.fixture(scope="module")
def clean(spark, debezium_world):
    return _scan(spark, debezium_world, "python", debezium_world.clean_end_ms)


def test_clean_real_traffic_gives_no_finding_and_exact_counts(clean, debezium_world):
    """The snapshot and the clean workload (37 transactions), read from Kafka with the bundled reader."""
    result, txns = clean, debezium_world.clean
    assert result.findings == [], result.findings  # not even info
    assert w.transactions(txns) == 37
    tx = result.transactions
    assert (tx["total"], tx["complete"]) == (37, 37), tx
    assert all(tx[k] == 0 for k in ("open", "unverifiable", "missing_end", "missing_begin", "count_mismatch",
                                    "collection_count_mismatch", "order_gap", "orphan_events")), tx
    by_op = _by_table_op(result)
    expected = Counter(w.SNAPSHOT) + w.events(txns)
    assert dict(expected) == {w.CUSTOMERS: 6 + 20, w.ORDERS: 8 + 32, w.STOCK: 4 + 15, w.SCRATCH: 3 + 2}
    per_table = Counter()
    for (table, _op), n in by_op.items():
        per_table[table] += n
    assert per_table == expected, by_op
    assert {t: by_op[(t, "r")] for t in w.TABLES} == w.SNAPSHOT
    assert by_op[(w.SCRATCH, "t")] == 1 and by_op[(w.ORDERS, "d")] == 2 and by_op[(w.CUSTOMERS, "d")] == 2
    # lag: every streamed change (c/u/d; not snapshot reads, not the truncate), each under a minute
    lag = {r["table"]: r for r in result.lag if r.get("server") in (SERVER, None)}
    assert {t: lag[t]["count"] for t in lag} == {t: n - (1 if t == w.SCRATCH else 0) for t, n in w.events(txns).items()}
    assert all(0 <= r["max_ms"] < 60_000 for r in lag.values()), lag
    snaps = {(s["table"], s["rows"], s["first_marker"], s["last_marker"]) for s in result.snapshots}
    assert snaps == {(t, n, True, True) for t, n in w.SNAPSHOT.items()}
    assert result.heartbeats and result.heartbeats[0]["server"] == SERVER and result.heartbeats[0]["count"] >= 1
    assert result.summary["invalid_records"] == 0


@pytest.fixture(scope="module")
def crashed(spark, debezium_world):
    return _scan(spark, debezium_world, "spark", None)


def test_a_connector_crash_is_its_resent_events_as_one_info_rule(crashed, debezium_world):
    """Connect killed with SIGKILL after streaming 6 transactions it had not committed offsets for,
    3 more committed while it was down, then started: Debezium sends the 6 again (10 change events
    and their BEGIN/END markers) from its last committed offset. Read with Spark's Kafka connector."""
    result, world = crashed, debezium_world
    resent = w.events(world.resent)
    assert sum(resent.values()) == 10 and w.transactions(world.resent) == 6
    found = Counter((f["rule"], f["severity"]) for f in result.findings)
    assert found == {(REPLAYED_AFTER_RESTART.name, Severity.INFO.value): 10}, result.findings
    assert not [f for f in result.findings if SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK["warning"]]
    # exactly the copies: per topic, the records after the first streaming of everything before the
    # kill, each naming its original, the record as many places back as the topic's re-sent records
    before = world.expected_records(replayed=False)
    for table, n in (w.events(world.resent) + w.tombstones(world.resent)).items():
        before[data_topic(table)] += n
    copies = {data_topic(t): n for t, n in (w.events(world.resent) + w.tombstones(world.resent)).items()}
    seen = Counter()
    for f in result.findings:
        topic, offset = f["topic"], f["offset"]
        seen[topic] += 1
        assert before[topic] <= offset < before[topic] + copies[topic], f
        original = int(re.search(r"at offset (\d+) sent again", f["message"]).group(1))
        assert original == offset - copies[topic], f
    assert seen == {data_topic(t): n for t, n in resent.items()}
    tx = result.transactions
    assert (tx["total"], tx["complete"]) == (37 + 6 + 3, 37 + 6 + 3), tx
    assert tx["count_mismatch"] == tx["collection_count_mismatch"] == tx["order_gap"] == tx["missing_end"] == 0, tx
    # every event counted, copies included
    every = Counter(w.SNAPSHOT) + w.events([*world.clean, *world.resent, *world.resent, *world.down])
    per_table = Counter()
    for (table, _op), n in _by_table_op(result).items():
        per_table[table] += n
    assert per_table == every


def test_watch_over_the_same_stream_finds_what_scan_finds(spark, debezium_world, crashed, tmp_path):
    """watch (bundled reader, the stateful carry and per-batch engine) over the same topics: the same
    records, events and findings as the scan of them, replays included."""
    from cdc_monitor.watch.stream import open_stream
    from tests.support.watch_stream import run_stream, stream_settings

    options = {"kafka.bootstrap.servers": debezium_world.bootstrap, "subscribePattern": TOPICS,
               "startingOffsets": "earliest"}
    settings, topics = stream_settings(options)
    # with a history of 1-second intervals (watch --history)
    history = tmp_path / "history"
    settings = dataclasses.replace(settings, scan=dataclasses.replace(
        settings.scan, history=str(history), history_interval_ms=1_000, history_lateness_ms=0))
    in_kafka = _records_per_topic(debezium_world.bootstrap)
    _, state = run_stream(spark, None, tmp_path / "ckpt", settings, stream=open_stream(spark, options, "python", topics))
    # the watch read more records than the scan: heartbeats the connector wrote since, and nothing else.
    # Every other topic holds exactly the records the scan read from it; the heartbeats the watch read are
    # at least the scan's and those in Kafka when it started, at most those in Kafka when it ended
    written = _records_per_topic(debezium_world.bootstrap)
    scanned_heartbeats = sum(h["count"] for h in crashed.heartbeats if h["server"] == SERVER)
    others = {t: n for t, n in written.items() if t != HEARTBEAT_TOPIC}
    assert others == {t: n for t, n in in_kafka.items() if t != HEARTBEAT_TOPIC}
    assert sum(others.values()) == crashed.summary["records"] - scanned_heartbeats
    watched_heartbeats = state.totals["records"][""] - sum(others.values())
    assert max(scanned_heartbeats, in_kafka[HEARTBEAT_TOPIC]) <= watched_heartbeats <= written[HEARTBEAT_TOPIC]
    found = Counter()
    for key, n in state.totals["findings"].items():
        found[(key.split("|")[3], key.split("|")[4])] += n  # server|table|check|rule|severity
    assert +found == Counter({(REPLAYED_AFTER_RESTART.name, Severity.INFO.value): 10}), found
    events = Counter()
    for key, n in state.totals["events"].items():
        events[(key.split("|")[1], key.split("|")[2])] += n  # server|table|op
    assert +events == _by_table_op(crashed)
    # the same counts as watch's exporter serves them on /metrics (the watch verb's snapshot of its state)
    served = _served_counters(state)
    assert served["cdc_events_total"] == {(SERVER, table, op): n for (table, op), n in _by_table_op(crashed).items()}
    assert served["cdc_findings_total"] == {(SERVER, table, "ordering", REPLAYED_AFTER_RESTART.name, Severity.INFO.value): n
                                            for (table, _), n in _replays_by_table(crashed).items()}
    assert served["cdc_records_total"] == {("watch",): state.totals["records"][""]}
    # the history: a later batch of heartbeats alone (the database quiet) passes every interval, and
    # the rows written hold every event by table and op, and the findings, as the scan counted them
    time.sleep(HEARTBEAT_MS / 1000 + 1)
    run_stream(spark, None, tmp_path / "ckpt", settings, stream=open_stream(spark, options, "python", topics))
    rows = read_committed(spark, str(history)).collect()
    measured, findings = Counter(), Counter()
    for r in rows:
        for op in GENERIC_OPS:
            measured[(r["table"], op)] += r[f"events_{op}"]
        for rule, n in r["findings"].items():
            findings[(r["table"], rule)] += n
    assert +measured == _by_table_op(crashed)
    assert +findings == _replays_by_table(crashed)
    assert len(rows) == len({(r["table"], r["interval_start_ms"]) for r in rows})  # one row per table and interval


def _records_per_topic(bootstrap: str) -> dict[str, int]:
    """Records Kafka holds in each of the world's topics (high minus low watermark, summed over partitions)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "records-per-topic"})
    try:
        out = {}
        for name, meta in consumer.list_topics(timeout=10).topics.items():
            if re.fullmatch(TOPICS, name):
                marks = [consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10) for p in meta.partitions]
                out[name] = sum(high - low for low, high in marks)
        return out
    finally:
        consumer.close()


def _replays_by_table(result) -> Counter[tuple[str, str]]:
    """The scan's replayed_after_restart findings per (table, rule)."""
    return Counter((f["table"], f["rule"]) for f in result.findings if f["rule"] == REPLAYED_AFTER_RESTART.name)


def _served_counters(state) -> dict[str, dict[tuple[str, ...], float]]:
    """cdc_records/events/findings_total per label set, read over HTTP from watch's exporter (MetricsServer)
    serving the snapshot the watch verb makes of ``state``."""
    from prometheus_client.parser import text_string_to_metric_families

    from cdc_monitor.sinks.prometheus import MetricsServer, MetricsSnapshot
    from cdc_monitor.watch.runner import WatchProgress, totals_rows
    from tests.support.promtools import get

    totals = totals_rows(state)
    totals["records"] = [{"job": "watch", "count": state.totals["records"][""]}]
    progress = WatchProgress(last=None, transactions={}, totals=totals, finished_at=None, failures=0, up=True,
                             heartbeats=[], state={})
    server = MetricsServer("127.0.0.1", 0, MetricsSnapshot.from_outcome(progress, "watch"))
    try:
        text = get(f"http://127.0.0.1:{server.port}/metrics").decode()
    finally:
        server.stop()
    labels = {"cdc_events_total": ("server", "table", "op"), "cdc_records_total": ("job",),
              "cdc_findings_total": ("server", "table", "check", "rule", "severity")}
    out: dict[str, dict[tuple[str, ...], float]] = {name: {} for name in labels}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            if sample.name in labels and sample.value:
                out[sample.name][tuple(sample.labels[k] for k in labels[sample.name])] = sample.value
    return out


# the rows no event of the topics has written since ``alter table public.orders add column discount ...
# default 0``: PostgreSQL fills existing rows with the default without a WAL record, so Debezium
# sends nothing for them and their last event has no ``discount`` field
BEFORE_ADD_COLUMN = 23


def _counts(tables: dict) -> dict[str, dict[str, int]]:
    return {t: {k: r[k] for k in ("source_rows", "topic_rows", "match", "missing", "extra", "differs", "in_flight")}
            for t, r in tables.items()}


@pytest.fixture(scope="module")
def reconciled(spark, debezium_world, tmp_path_factory):
    """reconcile(): per table, its JSON report, and the outcome."""
    from cdc_monitor.reconcile.connection import jdbc_settings
    from cdc_monitor.reconcile.run import run_reconcile
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input
    from tests.support.postgres import PASSWORD, USER

    password = tmp_path_factory.mktemp("debezium-secret") / "pw"
    password.write_text(PASSWORD + "\n")
    jdbc = jdbc_settings(debezium_world.pipeline.pg.url, USER, str(password))
    spark.sql(f"ADD JAR {jdbc.jar}")

    def reconcile():
        flags = KafkaFlags(bootstrap_servers=debezium_world.bootstrap, topics=TOPICS)
        out = run_reconcile(prepare_input((), flags).read(spark), jdbc, max_samples=50)
        return {t["table"]: t for t in out.to_json_dict()["reconcile"]}, out

    return reconcile


@pytest.fixture(scope="module")
def quiescent(reconciled):
    """The first reconciliation: after the crash and its replays, nothing written since."""
    return reconciled()


# customers: 6, one deleted (5 renamed 600); orders: 8, one deleted, 12 + 6 + 5 inserted, 3 before the crash and
# one of them deleted, 2 while down; stock: 4, one inserted, one deleted; scratch: truncated last
ROWS = {w.CUSTOMERS: 6 - 1, w.ORDERS: 8 - 1 + 12 + 6 + 5 + 3 - 1 + 2, w.STOCK: 4 + 1 - 1, w.SCRATCH: 0}


def test_reconcile_matches_every_row_quiescent(quiescent):
    """A truncate (no key) empties its table's state; a column added with a default is not compared on
    rows whose last event predates it (PostgreSQL wrote nothing for them to the WAL)."""
    tables, out = quiescent
    assert _counts(tables) == {t: {"source_rows": n, "topic_rows": n, "match": n, "missing": 0, "extra": 0, "differs": 0,
                                   "in_flight": 0} for t, n in ROWS.items()}
    assert out.mismatches == 0


def test_reconcile_then_a_change_the_connector_never_saw(reconciled, quiescent, debezium_world):
    """Quiescent, after the crash and its replays: every table matches row for row. Then a transaction that began before the
    connector's last one commits while Connect is stopped: its update is ``differs`` and its insert
    ``missing``, exactly (PostgreSQL's xmin older than the window's newest txId: not in flight).
    Stops the connector: the last test of the world."""
    from tests.support.debezium_world import TRANSACTION_TOPIC, wait_for
    from tests.support.postgres import DATABASE, PASSWORD, USER

    world = debezium_world
    pg = world.pipeline.pg
    first, out = quiescent
    quiet = {t: {"source_rows": n, "topic_rows": n, "match": n, "missing": 0, "extra": 0, "differs": 0, "in_flight": 0}
             for t, n in ROWS.items()}
    assert _counts(first) == quiet, _counts(first)
    # order 1's TOASTed note, not carried by its update, and the discount of the rows last changed before it was added
    assert first[w.ORDERS]["unavailable_values"] == 1 + BEFORE_ADD_COLUMN, first[w.ORDERS]["unavailable_values"]
    assert out.mismatches == 0

    session = subprocess.Popen(["psql", "-h", "127.0.0.1", "-p", str(pg.port), "-U", USER, "-d", DATABASE, "-qAt",
                                "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={"PGPASSWORD": PASSWORD, "PATH": "/usr/bin:/bin"})
    assert session.stdin is not None and session.stdout is not None
    session.stdin.write("begin; update public.orders set amount = 0.5 where id = 301; "
                        "insert into inventory.stock values ('z', 9, 1, 1.00); select 'ready';\n")
    session.stdin.flush()
    assert session.stdout.readline().strip() == "ready"
    pg.sql("update public.customers set email = 'last@example.com' where id = 4")  # streamed: the newest txId
    expected = world.expected_records(replayed=True)
    expected[data_topic(w.CUSTOMERS)] += 1
    expected[TRANSACTION_TOPIC] += 2
    wait_for(world.bootstrap, expected, world.pipeline)
    assert world.pipeline.connect is not None
    world.pipeline.connect.stop()
    session.stdin.write("commit;\n")
    session.stdin.close()
    assert session.wait(30) == 0
    second, out = reconciled()
    changed = {**quiet, w.STOCK: quiet[w.STOCK] | {"source_rows": ROWS[w.STOCK] + 1, "missing": 1},
               w.ORDERS: quiet[w.ORDERS] | {"match": quiet[w.ORDERS]["match"] - 1, "differs": 1}}
    assert _counts(second) == changed, _counts(second)
    differs = [s for s in second[w.ORDERS]["samples"]["differs"] if s["key"] == {"id": "301"}]
    assert differs == [{"key": {"id": "301"}, "columns": [{"column": "amount", "source": "0.5", "topic": "-263.301"}]}], \
        differs
    assert [s["key"] for s in second[w.STOCK]["samples"]["missing"]] == [{"sku": "z", "store": "9"}]
    assert out.mismatches == 2
