"""Debezium's MariaDB connector for real (tests/support/debezium_mariadb.py: 3.5.0.Final on MariaDB
10.11, in its own Connect worker on the suite's broker): an initial snapshot and a small workload in
real transactions (multi-statement across tables, autocommits, updates, deletes, a primary-key
change, decimal, datetime and JSON columns). ``scan`` of its topics gives no finding at warning or
above, every transaction complete, the events per table exactly what the workload implies."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from cdc_monitor.config import ScanConfig
from cdc_monitor.vocabulary import SEVERITY_RANK
from tests.support.debezium_world import _high_watermarks

PREFIX = "dbzmaria"
DATABASE = "shop"
TOPICS = rf"{PREFIX}\..*|__debezium-heartbeat\.{PREFIX}"
CUSTOMERS, ORDERS = f"{DATABASE}.customers", f"{DATABASE}.orders"
SCHEMA = """
create table customers (id int primary key, name varchar(40) not null, balance decimal(10,2), created datetime(3));
create table orders (id bigint primary key, customer_id int, amount decimal(10,3), meta json, note text);
insert into customers values (1, 'a', 10.25, '2024-03-01 09:00:00.123'), (2, 'b', 20.50, '2024-03-02 09:00:00'),
  (3, 'c', 0, null);
insert into orders values (1, 1, 1.125, '{"i": 1}', 'n1'), (2, 2, -3.5, '{"i": 2}', null);
"""
SNAPSHOT = {CUSTOMERS: 3, ORDERS: 2}
# (sql, data events per table): each a transaction with data events
WORKLOAD = [
    *[(f"begin; insert into orders values ({10 + n}, {1 + n % 3}, {n}.5, '{{\"n\": {n}}}', 'x'); "
       f"update customers set balance = balance + 1 where id = {1 + n % 3}; commit", {ORDERS: 1, CUSTOMERS: 1})
      for n in range(6)],
    *[(f"insert into orders values ({20 + n}, 2, 7.25, null, null)", {ORDERS: 1}) for n in range(3)],
    ("update orders set amount = amount * 2 where id between 10 and 12", {ORDERS: 3}),
    ("delete from orders where id = 2", {ORDERS: 1}),
    ("update customers set id = 30 where id = 3", {CUSTOMERS: 2}),  # a delete, its tombstone, a create
    ("begin; delete from customers where id = 30; insert into customers values (31, 'd', 1, now(3)); commit",
     {CUSTOMERS: 2}),
]
TOMBSTONES = {CUSTOMERS: 2, ORDERS: 1}


def _expected() -> Counter[str]:
    out: Counter[str] = Counter()
    for table, n in SNAPSHOT.items():
        out[f"{PREFIX}.{table}"] += n
    for _sql, events in WORKLOAD:
        for table, n in events.items():
            out[f"{PREFIX}.{table}"] += n
    for table, n in TOMBSTONES.items():
        out[f"{PREFIX}.{table}"] += n
    out[f"{PREFIX}.transaction"] = 2 * len(WORKLOAD)
    return out


def _wait(pipeline, bootstrap: str, expected: Counter[str], timeout: float = 90) -> None:
    """Until the topics hold exactly the expected records (more is a failure, not a wait)."""
    deadline = time.monotonic() + timeout
    while (seen := _high_watermarks(bootstrap, list(expected))) != expected:
        assert time.monotonic() < deadline and all(seen[t] <= n for t, n in expected.items()), \
            f"topics hold {dict(seen)}, expected {dict(expected)}\n{pipeline.connect.logs()[-3000:] if pipeline.connect else ''}"
        time.sleep(0.25)


@pytest.fixture(scope="module")
def debezium_mariadb(kafka_broker, tmp_path_factory):
    from tests.support.debezium_mariadb import DebeziumMariaDB

    pipeline = DebeziumMariaDB(tmp_path_factory.mktemp("debezium-mariadb"), kafka_broker, PREFIX, DATABASE,
                               prepare=lambda db: db.sql(SCHEMA))
    try:
        # the snapshot first: it reads the tables at one binlog position, a transaction committed
        # before that position is in its rows, not streamed
        _wait(pipeline, kafka_broker, Counter({f"{PREFIX}.{t}": n for t, n in SNAPSHOT.items()}))
        for sql, _ in WORKLOAD:
            pipeline.db.sql(sql)
        _wait(pipeline, kafka_broker, _expected())
        yield pipeline
    finally:
        pipeline.stop()


def test_mariadb_real_traffic_gives_no_warning_and_complete_transactions(spark, debezium_mariadb, kafka_broker):
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    flags = KafkaFlags(bootstrap_servers=kafka_broker, topics=TOPICS)
    result = run_scan(prepare_input((), flags).read(spark), ScanConfig(max_findings=100_000))
    loud = [f for f in result.findings if SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK["warning"]]
    assert loud == [], loud
    tx = result.transactions
    assert (tx["total"], tx["complete"]) == (len(WORKLOAD), len(WORKLOAD)), tx
    per_table: Counter[str] = Counter()
    for r in result.events_by_table:
        if r["server"] == PREFIX:
            per_table[r["table"]] += r["count"]
    expected = Counter(SNAPSHOT)
    for _sql, events in WORKLOAD:
        expected.update(events)
    assert per_table == expected, result.events_by_table
    assert result.summary["invalid_records"] == 0
