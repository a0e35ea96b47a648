"""Transaction metadata as Db2, Informix, Vitess (VGTID ids) and Spanner write it: recognised
connectors (no unknown_connector), opaque transaction ids reconciled, their faults found. And
Debezium's MariaDB connector, judged as MySQL (its real output: tests/test_debezium_mariadb.py)."""

from __future__ import annotations

import collections
import json

from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000
CONNECTORS = {  # connector -> (its source block's identity, tables as END markers name them, a transaction id)
    "db2": ({"db": "TESTDB", "schema": "DB2INST1"}, ("CUSTOMERS", "ORDERS"), lambda n: f"0000000000000000000000000000{n:04x}"),
    "informix": ({"db": "testdb", "schema": "informix"}, ("customers", "orders"), lambda n: str(2560 + n)),
    "vitess": ({"keyspace": "commerce", "shard": "0"}, ("customer", "corder"),
               lambda n: json.dumps([{"keyspace": "commerce", "shard": "0", "gtid": f"MySQL56/a1b2c3:1-{100 + n}"}])),
    "spanner": ({}, ("Singers", "Albums"), lambda n: f"txn-{n:08x}-5f3a"),
}


def _qualified(connector: str, ident: dict, table: str) -> str:
    if connector == "vitess":
        return f"{ident['keyspace']}.{table}"
    if connector == "spanner":
        return table
    return f"{ident['db']}.{ident['schema']}.{table}"


def _position(connector: str, seq: int, commit: int) -> dict:
    if connector == "db2":
        return {"commit_lsn": f"00000000:0000{commit:04x}:0000000000000001", "change_lsn": f"00000000:0000{seq:04x}:0000000000000001"}
    if connector == "informix":
        return {"begin_lsn": str(1000 + commit), "commit_lsn": str(5000 + commit), "change_lsn": str(3000 + seq)}
    if connector == "vitess":
        return {"vgtid": json.dumps([{"keyspace": "commerce", "shard": "0", "gtid": f"MySQL56/a1b2c3:1-{100 + commit}"}])}
    return {}


def _traffic(connector: str, *, short_end: bool = False, regress: bool = False) -> list[str]:
    """Four transactions of two events each (one per table), the last open; ``short_end``: the
    third END counts an event more than was written; ``regress``: one key updated from an older position."""
    ident, tables, txid = CONNECTORS[connector]
    server = f"{connector}srv"
    lines: list[str] = []
    offsets: dict[str, int] = collections.Counter()
    seq = 0

    def emit(topic: str, key: dict, value: dict, ts: int) -> None:
        lines.append(kcat_line(topic, 0, offsets[topic], json.dumps(key), json.dumps(value), ts))
        offsets[topic] += 1

    for n in range(4):
        tid, t0 = txid(n), BASE + n * 10_000
        emit(f"{server}.transaction", {"id": tid},
             {"status": "BEGIN", "id": tid, "event_count": None, "data_collections": None, "ts_ms": t0}, t0)
        for order, table in enumerate(tables, 1):
            seq += 1
            op, pk = ("u", 1) if regress and n == 2 and order == 1 else ("c", n * 10 + order)
            source = {"version": "2.7.0.Final", "connector": connector, "name": server, "ts_ms": t0 + order,
                      "snapshot": "false", "table": table, **ident,
                      **(_position(connector, 0, 0) if op == "u" else _position(connector, seq, n))}  # a replay of old
            emit(f"{server}.{_qualified(connector, ident, table)}", {"id": pk},
                 {"before": None, "after": {"id": pk, "name": f"n{n}"}, "source": source, "op": op, "ts_ms": t0 + order + 40,
                  "transaction": {"id": tid, "total_order": order, "data_collection_order": 1}}, t0 + order + 50)
        if n < 3:  # Debezium writes END when the next transaction begins: the last one stays open
            count = 3 if short_end and n == 2 else 2
            emit(f"{server}.transaction", {"id": tid},
                 {"status": "END", "id": tid, "event_count": count, "ts_ms": t0 + 100,
                  "data_collections": [{"data_collection": _qualified(connector, ident, t), "event_count": 1} for t in tables]},
                 t0 + 9_000)
    return lines


def test_opaque_transaction_ids_reconcile_for_every_connector(scan, tmp_path):
    lines = [line for c in CONNECTORS for line in _traffic(c)]
    result = scan([write_lines(tmp_path / "clean.jsonl", lines)])
    assert result.findings == []
    by_server = result.transactions["by_server"]
    for connector in CONNECTORS:
        assert by_server[f"{connector}srv"]["complete"] == 3 and by_server[f"{connector}srv"]["open"] == 1, connector
    assert {r["table"] for r in result.lag if r["server"] == "vitesssrv"} == {"commerce.customer", "commerce.corder"}


def test_their_faults_are_found(scan, tmp_path):
    lines = _traffic("vitess", short_end=True) + _traffic("informix", regress=True) + _traffic("db2", regress=True)
    result = scan([write_lines(tmp_path / "faulty.jsonl", lines)])
    found = collections.Counter((f["server"], f["rule"]) for f in result.findings)
    assert found == {("vitesssrv", "count_mismatch"): 1, ("informixsrv", "position_regression"): 1,
                     ("db2srv", "position_regression"): 1}, found
    mismatch = next(f for f in result.findings if f["rule"] == "count_mismatch")
    assert mismatch["txn_id"] == CONNECTORS["vitess"][2](2)  # the VGTID, as written


MARIADB_SOURCE = {"version": "3.5.0.Final", "connector": "mariadb", "name": "maria", "ts_ms": BASE, "snapshot": "false",
                  "db": "shop", "table": "orders", "server_id": 1, "gtid": "0-1-42", "file": "mysql-bin.000002",
                  "pos": 1234, "row": 1, "thread": 7, "query": None}
# a value whose connector is told only by its source schema's name (no source.connector)
MARIADB_NAMED = {"type": "struct", "optional": False, "name": "maria.shop.orders.Envelope", "fields": [
    {"field": "source", "type": "struct", "optional": False, "name": "io.debezium.connector.mariadb.Source",
     "fields": [{"field": "db", "type": "string", "optional": True}]},
    {"field": "op", "type": "string", "optional": False}]}


def test_mariadb_events_are_judged_as_mysql(spark, caps):
    from cdc_monitor.decoding import decode_records

    def value(**source) -> dict:
        return {"before": None, "after": {"id": 1}, "op": "c", "source": {**MARIADB_SOURCE, **source}}

    without_pos = value()
    del without_pos["source"]["pos"]
    cases = {  # name -> (value, (flavour, position, table, missing_source_field's message))
        "whole": (value(), ("mysql", [2, 1234, 1], "shop.orders", None)),
        "without pos": (without_pos, ("mysql", None, "shop.orders", "source lacks pos (mysql)")),
        # (with its version and time: a block with neither connector nor version, or no time, is another
        # producer's, whose source fields are not judged: schema's non_debezium_producer)
        "named by its schema": ({"schema": MARIADB_NAMED, "payload": {"op": "c", "after": {"id": 1}, "source": {
                                    "db": "shop", "version": "3.5.0.Final", "ts_ms": BASE}}},
                                ("mysql", None, "shop.orders", "source lacks name, file, pos (mysql)")),
    }
    rows = [("maria.shop.orders", json.dumps({"id": 1}), json.dumps(v), name) for name, (v, _) in cases.items()]
    frame = spark.createDataFrame(rows, "topic string, key string, value string, name string").selectExpr(
        "topic", "0 AS partition", "monotonically_increasing_id() AS offset", "CAST(key AS binary) AS key",
        "CAST(value AS binary) AS value", "current_timestamp() AS timestamp", "0 AS timestampType",
        "CAST(NULL AS array<struct<key:string,value:binary>>) AS headers", "name")
    out = {r["name"]: (r["flavour"], r["position"], r["table"],
                       next((v["message"] for v in r["verdicts"] or [] if v["rule"] == "missing_source_field"), None))
           for r in decode_records(frame, keep=("name",), session=caps).collect()}
    assert out == {name: want for name, (_, want) in cases.items()}
