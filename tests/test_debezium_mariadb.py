"""Debezium's MariaDB connector for real (tests/support/debezium_mariadb.py: 3.5.0.Final on MariaDB
10.11, in its own Connect worker on the suite's broker): an initial snapshot and a small workload in
real transactions (multi-statement across tables, autocommits, updates, deletes, a primary-key
change, decimal, datetime and JSON columns). ``scan`` of its topics gives no finding at warning or
above, every transaction complete, the events per table exactly what the workload implies; its
events (``source.connector`` "mariadb") are judged by the MySQL connector's rules, not as an
unknown connector's: faults injected into a copy of the real records are found by those rules."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from typing import Any

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
    # a known connector: not one judged by the generic rules only
    assert [f for f in result.findings if f["rule"] == "unknown_connector"] == []
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


def _value(record: dict[str, Any]) -> dict[str, Any] | None:
    return None if record["value"] is None else json.loads(bytes(record["value"]))


def _key_id(record: dict[str, Any]) -> int | None:
    return None if record["key"] is None else json.loads(bytes(record["key"]))["payload"]["id"]


def test_mariadb_events_are_judged_by_the_mysql_rules(spark, debezium_mariadb, kafka_broker):
    """A copy of the real records with three faults, each found by a MySQL rule that an unknown
    connector's events never get: order 10's update at a binlog position before its create's
    (position_regression), order 20's create without ``pos`` (missing_source_field), order 21's
    create with a negative ``row`` (invalid_position)."""
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.base import KAFKA_SCHEMA, SourceResult
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    flags = KafkaFlags(bootstrap_servers=kafka_broker, topics=TOPICS)
    records = [r.asDict() for r in prepare_input((), flags).read(spark).records.collect()]
    orders = f"{PREFIX}.{ORDERS}"
    data = {(_key_id(r), _value(r)["payload"]["op"]): r for r in records
            if r["topic"] == orders and r["value"] is not None}
    create10, update10 = _value(data[(10, "c")]), _value(data[(10, "u")])
    source10 = create10["payload"]["source"]
    # MySQL's source block, MariaDB's GTID (domain-server-sequence), the transaction's id as MySQL's is
    assert source10["connector"] == "mariadb" and {"file", "pos", "row", "server_id"} <= set(source10)
    assert re.fullmatch(r"\d+-\d+-\d+", source10["gtid"]) and create10["payload"]["transaction"]["id"] == source10["gtid"]
    update10["payload"]["source"] |= {"file": create10["payload"]["source"]["file"],
                                      "pos": create10["payload"]["source"]["pos"] - 1}
    create20, create21 = _value(data[(20, "c")]), _value(data[(21, "c")])
    del create20["payload"]["source"]["pos"]
    create21["payload"]["source"]["row"] = -1
    faulted = {id(data[(10, "u")]): update10, id(data[(20, "c")]): create20, id(data[(21, "c")]): create21}
    rows = [{**r, "value": json.dumps(faulted[id(r)]).encode()} if id(r) in faulted else r for r in records]
    result = run_scan(SourceResult(records=spark.createDataFrame(rows, KAFKA_SCHEMA)), ScanConfig(max_findings=100_000))
    at = {(f["rule"], f["offset"]) for f in result.findings if f["topic"] == orders}
    assert ("position_regression", data[(10, "u")]["offset"]) in at, result.findings
    assert ("missing_source_field", data[(20, "c")]["offset"]) in at, result.findings
    assert ("invalid_position", data[(21, "c")]["offset"]) in at, result.findings
    missing = next(f for f in result.findings if f["rule"] == "missing_source_field")
    assert "source lacks pos" in missing["message"], missing
    assert [f for f in result.findings if f["rule"] == "unknown_connector"] == []
