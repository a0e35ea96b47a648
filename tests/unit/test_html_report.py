"""scan --output html: a self-contained page with the summary, lag, transactions and findings,
every value escaped (finding messages and keys come from the data)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from cdc_monitor.pipeline import ScanResult
from cdc_monitor.sinks.html_report import render_html


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_html_report_shows_the_scan_and_escapes_data():
    result = ScanResult(
        window={}, summary={"records": 10, "data_events": 7, "tombstones": 1, "transaction_markers": 2,
                            "invalid_records": 1, "findings_by_check": {"decode": 1, "ordering": 2}},
        events_by_table=[{"server": "db1", "table": "inv.orders", "op": "c", "count": 7}],
        lag=[{"server": "db1", "table": "inv.orders", "count": 7, "p50_ms": 10, "p95_ms": 20, "p99_ms": 30,
              "max_ms": 40, "negative": 0, "invalid_source_ts": 0, "snapshot_excluded": 2}],
        transactions={"total": 2, "complete": 1, "missing_end": 1, "by_server": {"db1": {"complete": 1}}},
        findings=[{"check": "decode", "rule": "invalid_json", "severity": "error", "topic": "db1.inv.orders",
                   "partition": 0, "offset": 5, "key": '{"id":"<script>alert(1)</script>"}', "txn_id": None,
                   "message": "value is not JSON: <b>oops</b>"},
                  {"check": "ordering", "rule": "duplicate", "severity": "warning", "topic": "db1.inv.orders",
                   "partition": 1, "offset": 9, "key": '{"id":2}', "txn_id": "t9", "message": "same event"}],
        findings_by_rule={"error": {"invalid_json": 1}, "warning": {"duplicate": 2}},
        duration_seconds=3.5,
    )
    page = render_html(result)
    parsed = _Collect()
    parsed.feed(page)
    # markup in the data stays text: the only scripts are the page's own (chart data, Chart.js, drawing)
    assert parsed.tags.count("script") == 3 and "b" not in parsed.tags
    text = " ".join(parsed.text)
    assert "<script>alert(1)</script>" in text and "value is not JSON: <b>oops</b>" in text
    for expected in ("3 finding(s)", "inv.orders", "missing_end", "invalid_json", "duplicate", "db1.inv.orders",
                     "decode check, per record", "ordering check, per key"):
        assert expected in text, expected
    assert text.index("· error · 1") < text.index("· warning · 2")  # errors first
    assert "by_server" not in text  # only the status counts are tabulated
    assert not re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)  # offline: nothing to fetch
