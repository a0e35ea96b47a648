"""``reconcile`` against a real PostgreSQL: the shop of tests/support/pg_world.py, whose events
differ from its tables in known ways, counted exactly."""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.browser import chromium
from tests.support.postgres import PASSWORD, USER, Postgres

ORDERS = {"source_rows": 18, "topic_rows": 17, "match": 14, "missing": 2, "extra": 1, "differs": 1, "in_flight": 1}
ITEMS = {"source_rows": 10, "topic_rows": 6, "match": 6, "missing": 4, "extra": 0, "differs": 0, "in_flight": 0}
STOCK = {"source_rows": 3, "topic_rows": 3, "match": 3, "missing": 0, "extra": 0, "differs": 0, "in_flight": 0}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    from tests.support.pg_world import build

    pg = Postgres()
    try:
        captures = build(pg, tmp_path_factory.mktemp("shop"))
        password = tmp_path_factory.mktemp("secret") / "pw"
        password.write_text(PASSWORD + "\n")
        yield pg, captures, password
    finally:
        pg.stop()


@pytest.fixture(scope="module")
def reconcile_with(spark, shop):
    from cdc_monitor.reconcile.connection import jdbc_settings
    from cdc_monitor.reconcile.run import run_reconcile
    from cdc_monitor.sources.capture import read_capture

    pg, _captures, password = shop
    jdbc = jdbc_settings(pg.url, USER, str(password))
    spark.sql(f"ADD JAR {jdbc.jar}")  # what `reconcile` puts on spark.jars

    def run(capture: Path, **kw):
        return run_reconcile(read_capture(spark, [str(capture)]), jdbc, **kw)

    return run


@pytest.fixture(scope="module")
def outcome(reconcile_with, shop):
    return reconcile_with(shop[1]["schemas"])


def by_table(outcome) -> dict[str, dict]:
    return {t["table"]: t for t in outcome.to_json_dict()["reconcile"]}


def counts(table: dict) -> dict[str, int]:
    return {k: table[k] for k in ORDERS}


def test_every_state_is_counted_exactly(outcome):
    tables = by_table(outcome)
    assert set(tables) == {"public.orders", "public.items", "inventory.stock"}  # public.audit: not in the topics
    assert counts(tables["public.orders"]) == ORDERS
    assert counts(tables["public.items"]) == ITEMS  # a snapshot that stopped after 6 of 10 rows
    assert counts(tables["inventory.stock"]) == STOCK  # a two-column key in another schema
    orders = tables["public.orders"]
    samples = orders["samples"]
    assert [s["key"] for s in samples["missing"]] == [{"id": "7"}, {"id": "8"}]  # create lost; delete the source never made
    assert [s["key"] for s in samples["extra"]] == [{"id": "9"}]  # deleted in the source, no delete event
    assert samples["differs"] == [{"key": {"id": "10"}, "columns": [
        {"column": "note", "source": "changed in the source", "topic": "note 10"}]}]
    assert samples["in_flight"] == [{"key": {"id": "11"}, "columns": [{"column": "paid", "source": "true", "topic": "false"}]}]
    # decimals, timestamps with and without time zone, a date before 1970, jsonb, text[] and an enum all
    # matched; the toasted note of order 12 was not carried by its update, so it is not compared
    assert orders["columns_differing"] == {"note": 1}  # differs rows only (in-flight rows are not mismatches)
    assert orders["unavailable_values"] == 1
    assert tables["inventory.stock"]["checksums"]["equal"] and not orders["checksums"]["equal"]
    assert outcome.mismatches == 2 + 1 + 1 + 4
    assert outcome.source["window_txid"] is not None and outcome.source["position"] > 0


def test_without_schemas_and_in_key_ranges_the_verdict_is_the_same(reconcile_with, shop, outcome):
    """decimal.handling.mode=string, no embedded schemas (timestamps' units from their size), and the
    source read in key ranges: the same counts, samples and checksums."""
    plain = reconcile_with(shop[1]["plain"], rows_per_partition=4)
    assert by_table(plain) == by_table(outcome)
    orders = next(t for t in plain.tables if t.table == "public.orders")
    assert orders.source_partitions == 5  # 18 rows, 4 per partition
    quiet = reconcile_with(shop[1]["plain"], tables=("inventory.stock",))
    assert [t.table for t in quiet.tables] == ["inventory.stock"] and quiet.mismatches == 0


def test_from_kafka_the_verdict_is_the_same(spark, kafka_broker, reconcile_with, shop, outcome):
    """The same events produced to a broker and read with scan's Kafka flags (topics by regex)."""
    from confluent_kafka import Producer

    from cdc_monitor.reconcile.run import run_reconcile
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    producer = Producer({"bootstrap.servers": kafka_broker, "linger.ms": 5})
    for line in shop[1]["schemas"].read_text().splitlines():
        r = json.loads(line)
        value = r["payload"].encode() if r["payload"] is not None else None
        producer.produce(f"reconcile.{r['topic']}", key=r["key"].encode(), value=value, partition=0)
    assert producer.flush(30) == 0
    prepared = prepare_input((), KafkaFlags(bootstrap_servers=kafka_broker, topics=r"reconcile\..*"))
    from_kafka = run_reconcile(prepared.read(spark), outcome_jdbc(shop))
    assert by_table(from_kafka) == by_table(outcome)


def outcome_jdbc(shop):
    from cdc_monitor.reconcile.connection import jdbc_settings

    return jdbc_settings(shop[0].url, USER, str(shop[2]))


def test_text_and_html_reports(outcome, tmp_path):
    from cdc_monitor.sinks.reconcile_report import render_html, render_text

    text = render_text(outcome)
    assert text.startswith("cdc-monitor reconcile: MISMATCH: 8 row(s)")
    row = next(line for line in text.splitlines() if line.startswith("public.orders "))
    assert row.split() == ["public.orders", "18", "17", "14", "2", "1", "1", "1", "differ"]
    assert "public.orders differs (1), first 1:" in text and "'changed in the source'" in text

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.cells: list[str] = []

        def handle_data(self, data):
            self.cells.append(data)

    page = render_html(outcome)
    parser = Cells()
    parser.feed(page)
    assert "public.items" in parser.cells and "missing: 4 row(s)" in parser.cells
    assert PASSWORD not in page
    file = tmp_path / "reconcile.html"
    file.write_text(page)
    dom = chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", file.as_uri())  # as a person sees it
    assert dom.returncode == 0, dom.stderr[-2000:]
    shown = unescape(re.sub(r"<[^>]+>", " ", dom.stdout))
    assert "MISMATCH: 8 row(s) missing, extra or differing" in shown and "changed in the source / note 10" in shown


def test_cli_json_report_metrics_and_exit_1_without_showing_the_password(spark, reconcile_with, shop, tmp_path,
                                                                         monkeypatch):
    """The verb as a user runs it (in this process: the suite's session is the one it gets)."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    pg, captures, password = shop
    report, prom, lineage = tmp_path / "reconcile.json", tmp_path / "reconcile.prom", tmp_path / "lineage.jsonl"
    for name in ("CDC_MONITOR_JDBC_USER", "CDC_MONITOR_JDBC_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, [
        "reconcile", str(captures["schemas"]), "--jdbc-url", pg.url, "--jdbc-user", USER,
        "--jdbc-password-file", str(password), "--tables", "public.orders,public.items",
        "--output", "json", "--report-file", str(report), "--textfile", str(prom), "--openlineage", f"file:{lineage}"])
    assert result.exit_code == 1, result.output
    data = json.loads(report.read_text())
    assert [t["table"] for t in data["reconcile"]] == ["public.items", "public.orders"]
    assert counts(data["reconcile"][1]) == ORDERS and data["mismatches"] == 8
    assert data["source"]["url"] == pg.url and data["source"]["dialect"] == "postgresql"
    assert "8 mismatching row(s)" in result.output
    metrics = prom.read_text()
    assert 'cdc_reconcile_rows{state="missing",table="public.orders"} 2.0' in metrics
    assert 'cdc_reconcile_rows{state="in_flight",table="public.orders"} 1.0' in metrics
    assert 'cdc_reconcile_checksum_equal{table="public.items"} 0.0' in metrics
    for text in (result.output, report.read_text(), metrics, lineage.read_text()):
        assert PASSWORD not in text
    # OpenLineage: the source tables as the naming spec names PostgreSQL tables, with their counts
    from urllib.parse import urlsplit

    from tests.support.openlineage import registry, validate

    events = [json.loads(line) for line in lineage.read_text().splitlines()]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    for e in events:
        validate(e, registry())
    source = urlsplit(pg.url.removeprefix("jdbc:"))
    tables = {d["name"]: d["inputFacets"] for d in events[1]["inputs"]
              if d["namespace"] == f"postgres://{source.hostname}:{source.port}"}
    orders = tables[f"{source.path.strip('/')}.public.orders"]["cdcMonitor_reconcile"]
    assert {"source_rows": orders["sourceRows"], "topic_rows": orders["topicRows"], **orders["rows"]} == ORDERS


def test_settle_turns_a_change_that_lands_meanwhile_into_in_flight(spark, reconcile_with, shop):
    """Order 10's source change reaches agreement while the run settles (its note is put back, as
    the event would have been applied): on the second read it matches, so it was in flight. Last in
    this module: it leaves order 10's row newer than the window."""
    from cdc_monitor.reconcile.run import run_reconcile
    from cdc_monitor.sources.capture import read_capture

    pg, captures, _ = shop

    def read_again():
        pg.sql("update public.orders set note = 'note 10' where id = 10")
        return read_capture(spark, [str(captures["schemas"])])

    settled = run_reconcile(read_capture(spark, [str(captures["schemas"])]), outcome_jdbc(shop),
                            tables=("public.orders",), settle=(0.1, read_again))
    orders = by_table(settled)["public.orders"]
    assert counts(orders) == {**ORDERS, "differs": 0, "in_flight": 2}
    assert [s["key"] for s in orders["samples"]["in_flight"]] == [{"id": "10"}, {"id": "11"}]
    assert "settle" in settled.timings
