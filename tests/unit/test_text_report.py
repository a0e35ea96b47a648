"""The text report as a person reads it: the terminal's width, errors first, short transaction
ids, the server in the lag table, and a word when a table is cut."""

from __future__ import annotations

import io

from cdc_monitor.pipeline import ScanResult
from cdc_monitor.sinks.report import render_text, short_id, text_width

LONG_TXN = "file=mysql-bin.000003,pos=154,row=0,server_id=223344,event=2"


def result() -> ScanResult:
    lag = [{"server": f"srv{i % 2}", "topic": f"srv.db.t{i}", "table": f"db.t{i}", "count": 10, "p50_ms": i,
            "p95_ms": i, "p99_ms": i, "max_ms": i, "negative": 0, "invalid_source_ts": 0, "snapshot_excluded": 0}
           for i in range(17)]
    findings = [
        {"check": "lag", "rule": "lag_spike", "severity": "warning", "topic": "srv.db.t1", "partition": 0, "offset": 7,
         "txn_id": None, "message": "spike"},
        {"check": "transactions", "rule": "missing_end", "severity": "error", "topic": "srv.transaction", "partition": 0,
         "offset": 3, "txn_id": LONG_TXN, "message": "no END"},
    ]
    return ScanResult(
        window={}, events_by_table=[{"server": "srv0", "table": "db.t1", "op": "c", "count": 10},
                                    {"server": "srv0", "table": "db.t2", "op": None, "count": 2}], lag=lag,
        summary={"records": 30, "data_events": 20, "tombstones": 1, "transaction_markers": 9, "invalid_records": 0,
                 "findings_by_check": {"lag": 1, "transactions": 1}},
        findings=findings, findings_by_rule={"warning": {"lag_spike": 1}, "error": {"missing_end": 1}},
        duration_seconds=1.5)


def render(width: int, colour: bool = False) -> str:
    buf = io.StringIO()
    render_text(result(), buf, width=width, colour=colour)
    return buf.getvalue()


def test_fits_an_80_column_terminal_without_colour_codes():
    text = render(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b[" not in text


def test_errors_first_short_ids_servers_and_what_was_cut():
    text = render(160)
    assert text.index("missing_end") < text.index("lag_spike")  # errors before warnings
    assert LONG_TXN not in text and short_id(LONG_TXN) in text and len(short_id(LONG_TXN)) == 18
    assert "srv1" in text.split("Lag (worst p99 first")[1]  # the lag table names the server
    lag_table = text.split("Lag (worst p99 first")[1].split("Findings by check")[0]
    assert "2 more table(s)" in lag_table and "db.t16" in lag_table and "db.t0 " not in lag_table  # 15 worst shown


def test_colour_only_when_asked():
    assert "\x1b[" in render(120, colour=True)


def test_width_follows_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "90")
    assert text_width(io.StringIO()) == 90
    monkeypatch.delenv("COLUMNS")
    assert text_width(io.StringIO()) == 120  # a file or a pipe


def test_an_absent_value_is_a_dash_not_python_s_none():
    text = render(160)
    assert "None" not in text
    events = text.split("Events by table")[1].split("Lag (worst p99 first")[0]
    rows = [[cell.strip() for cell in line.split("│")[1:5]] for line in events.splitlines() if "db.t2" in line]
    assert rows == [["srv0", "db.t2", "-", "2"]]  # an event without op


def test_a_report_over_spark_connect_names_what_it_lacks():
    from cdc_monitor.runtime.connect import SKIPPED
    from cdc_monitor.sinks.html_report import render_html

    local, remote = result(), result()
    remote.session = {"connect": True, "skipped": dict(SKIPPED)}
    buf = io.StringIO()
    render_text(local, buf, width=120)
    assert "Spark Connect" not in buf.getvalue() and "Spark Connect" not in render_html(local)
    buf = io.StringIO()
    render_text(remote, buf, width=200)
    assert buf.getvalue().splitlines()[-1] == f"Spark Connect: not reported: {SKIPPED['spark_jobs']}"
    assert "<dt>Spark Connect</dt><dd>not reported: Spark job and stage counts need" in render_html(remote)
    assert remote.to_json_dict()["session"]["skipped"] == SKIPPED and "session" not in local.to_json_dict()
