"""A self-contained HTML report of a ScanResult (``scan --output html``): one file, no scripts,
every value escaped, for CI artifacts and sharing."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.catalogue import RULES

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult

SAMPLES_PER_RULE = 20
_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}td.n{text-align:right}th{background:#f3f3f3}
.error{color:#b00020}.warning{color:#a15c00}.ok{color:#1b7f1b}code{font-size:90%}"""


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=n' if i in numeric else ''}>{escape('' if v is None else str(v))}</td>"
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(result: ScanResult) -> str:
    s = result.summary
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>cdc-monitor report</title><style>{_STYLE}</style>"
             "</head><body><h1>cdc-monitor report</h1>"]
    total = sum(n for per in result.findings_by_rule.values() for n in per.values())
    verdict = "ok" if not total else ("error" if result.findings_by_rule.get("error") else "warning")
    parts.append(f"<p class={verdict}><strong>{total} finding(s)</strong> in {s['records']} records: {s['data_events']} data "
                 f"events, {s['tombstones']} tombstones, {s['transaction_markers']} transaction markers, "
                 f"{s['invalid_records']} invalid records; scanned in {result.duration_seconds:.1f}s.</p>")
    parts.append("<h2>Findings by check</h2>" + _table(
        ["check", "findings"], [[c, n] for c, n in s.get("findings_by_check", {}).items()], {1}))
    if result.lag:
        parts.append("<h2>Lag (ms, snapshot events excluded)</h2>" + _table(
            ["server", "table", "events", "p50", "p95", "p99", "max", "negative", "invalid source ts", "snapshot"],
            [[r.get("server"), r.get("table"), r.get("count"), r.get("p50_ms"), r.get("p95_ms"), r.get("p99_ms"),
              r.get("max_ms"), r.get("negative"), r.get("invalid_source_ts"), r.get("snapshot_excluded")]
             for r in sorted(result.lag, key=lambda r: -(r.get("p99_ms") or 0))], set(range(2, 10))))
    if result.transactions:
        tx = {k: v for k, v in result.transactions.items() if isinstance(v, int)}
        parts.append("<h2>Transactions</h2>" + _table(list(tx), [list(tx.values())], set(range(len(tx)))))
    if result.events_by_table:
        parts.append("<h2>Events by table</h2>" + _table(
            ["server", "table", "op", "events"],
            [[r["server"], r["table"], r["op"], r["count"]] for r in result.events_by_table], {3}))
    if result.findings_by_rule:
        samples: dict[str, list[dict]] = defaultdict(list)
        for f in result.findings:
            if len(samples[f["rule"]]) < SAMPLES_PER_RULE:
                samples[f["rule"]].append(f)
        parts.append("<h2>Findings</h2>")
        order = sorted(((sev, rule, n) for sev, per in result.findings_by_rule.items() for rule, n in per.items()),
                       key=lambda x: ({"error": 0, "warning": 1}.get(x[0], 2), -x[2]))
        for sev, rule, n in order:
            parts.append(f"<h3 class={escape(sev)}>{escape(rule)} ({escape(RULES.get(rule, ('?',))[0])}, "
                         f"{escape(sev)}): {n}</h3>")
            parts.append(_table(["topic", "partition", "offset", "key", "txn", "message"], [
                [f.get("topic"), f.get("partition"), f.get("offset"), (f.get("key") or "")[:120], f.get("txn_id"),
                 f.get("message")] for f in samples[rule]]))
    parts.append("</body></html>\n")
    return "".join(parts)
