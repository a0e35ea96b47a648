"""A self-contained HTML report of a ScanResult (``scan --output html``): one offline file (the
charting library inlined, nothing fetched), every value escaped, for CI artifacts and sharing.

Header (inputs, window, version, generation time), summary and contents, pictures
(``html_charts``), the lag, transaction and event tables, then the findings grouped by rule with
the rule's meaning, errors first; samples name the key's payload, never its schema.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from html import escape
from typing import TYPE_CHECKING, Any

from cdc_monitor import __version__
from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.lag import INVALID_SOURCE_TS
from cdc_monitor.sinks.html_charts import PAGE_SCRIPT, chart_configs, chart_js, data_script
from cdc_monitor.vocabulary import SEVERITY_RANK, Severity

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult

SAMPLES_PER_RULE = 20
_STYLE = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dde5;--bg:#f6f7f9;--error:#b00020;--warning:#a15c00;--ok:#1b7f1b}
*{box-sizing:border-box}body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:var(--fg);line-height:1.4}
header,main{max-width:1400px;margin:0 auto;padding:1rem 1.5rem}header{border-bottom:1px solid var(--line)}
h1{margin:.2rem 0 .6rem;font-size:1.6rem}h2{margin-top:2rem;border-bottom:1px solid var(--line);padding-bottom:.3rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0;color:var(--muted)}
dl.meta dd{margin:0;color:var(--fg);overflow-wrap:anywhere}
.verdict{display:inline-block;padding:.2rem .7rem;border-radius:1rem;color:#fff;font-weight:600}
.verdict.error{background:var(--error);color:#fff}.verdict.warning{background:var(--warning);color:#fff}
.verdict.ok{background:var(--ok);color:#fff}
nav ul{display:flex;flex-wrap:wrap;gap:.4rem 1.2rem;list-style:none;padding:0;margin:.8rem 0 0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.8rem}
.card{background:var(--bg);border-radius:.5rem;padding:.6rem .9rem}.card .num{display:block;font-size:1.4rem;font-weight:700}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));gap:1.2rem}
figure{margin:0;background:var(--bg);border-radius:.5rem;padding:.6rem}figure div{position:relative;height:320px}
figure.wide{grid-column:1/-1}figure.wide div{height:380px}
figcaption{font-weight:600;margin-bottom:.3rem}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.5rem 0 1.2rem;width:100%}
th,td{border:1px solid var(--line);padding:.25rem .55rem;text-align:left;vertical-align:top}th{background:var(--bg)}
td{overflow-wrap:anywhere}td.n{text-align:right;white-space:nowrap}code{font-size:90%}
details{border:1px solid var(--line);border-radius:.5rem;margin:.6rem 0;padding:.3rem .8rem}
summary{cursor:pointer;font-weight:600}.error{color:var(--error)}.warning{color:var(--warning)}.ok{color:var(--ok)}
.meaning{color:var(--muted);font-weight:400}
"""
ORDER = {Severity.ERROR: 0, Severity.WARNING: 1}


def _cell(v: Any) -> str:
    return escape("" if v is None else str(v))


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i in numeric else ''}>{_cell(v)}</td>" for i, v in enumerate(row))
                   + "</tr>" for row in rows)
    return f'<div class=scroll><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _clock(ms: int | None) -> str:
    return "-" if ms is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


def _inputs(inputs: dict[str, Any]) -> str:
    if not inputs:
        return "-"
    if "files" in inputs:
        return ", ".join(str(f) for f in inputs["files"])
    return "; ".join(f"{k}: {v}" for k, v in inputs.items() if k != "kind")


def _short(txn: str | None) -> str | None:
    return txn if txn is None or len(txn) <= 24 else f"{txn[:10]}…{txn[-10:]}"


def _header(result: ScanResult, total: int, verdict: str) -> str:
    w = result.window
    span = ""
    if w.get("start_ms") is not None and w.get("end_ms") is not None:
        span = f" ({(w['end_ms'] - w['start_ms']) / 1000:.1f} s of record time)"
    meta = [("inputs", _inputs(result.inputs)),
            ("window", f"{_clock(w.get('start_ms'))} to {_clock(w.get('end_ms'))}{span}"),
            ("partitions", f"{len(w.get('partitions') or [])} ({sum(1 for p in w.get('partitions') or [] if p.get('from_start'))} "
                           "read from their first offset)"),
            ("generated", f"{_clock(int(result.finished_at * 1000)) if result.finished_at else '-'} by cdc-monitor {__version__},"
                          f" scanned in {result.duration_seconds:.1f} s")]
    if result.session.get("connect"):
        meta.append(("Spark Connect", "not reported: " + "; ".join(result.session.get("skipped", {}).values())))
    label = "no findings" if not total else f"{total} finding(s)"
    return (f"<header><h1>cdc-monitor report <span class='verdict {verdict}'>{escape(label)}</span></h1><dl class=meta>"
            + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in meta) + "</dl>"
            "<nav><ul><li><a href='#summary'>Summary</a></li><li><a href='#pictures'>Pictures</a></li>"
            "<li><a href='#lag'>Lag</a></li><li><a href='#transactions'>Transactions</a></li>"
            "<li><a href='#events'>Events</a></li>" + ("<li><a href='#history'>History</a></li>" if result.history else "")
            + "<li><a href='#findings'>Findings</a></li></ul></nav></header>")


def _summary(result: ScanResult) -> str:
    s = result.summary
    cards = [("records", s["records"]), ("data events", s["data_events"]), ("tombstones", s["tombstones"]),
             ("transaction markers", s["transaction_markers"]), ("invalid records", s["invalid_records"])]
    cards += [(f"{sev} findings", n) for sev, n in sorted(s.get("findings_by_severity", {}).items(),
                                                         key=lambda x: -SEVERITY_RANK.get(x[0], 0))]
    return ("<section id=summary><h2>Summary</h2><div class=cards>"
            + "".join(f"<div class=card><span class=num>{_cell(n)}</span>{escape(k)}</div>" for k, n in cards) + "</div>"
            + _table(["check", "findings"], [[c, n] for c, n in s.get("findings_by_check", {}).items()], {1}) + "</section>")


def _pictures(configs: list[tuple[str, str, dict[str, Any]]]) -> str:
    if not configs:
        return "<section id=pictures><h2>Pictures</h2><p>No lag, transaction or finding data to draw.</p></section>"
    figures = "".join(
        f"<figure{' class=wide' if cfg.get('wide') else ''}><figcaption>{escape(title)}</figcaption><div>"
        f"<canvas id='{cid}' role=img aria-label='{escape(title)}'></canvas></div></figure>" for cid, title, cfg in configs)
    return f"<section id=pictures><h2>Pictures</h2><div class=charts>{figures}</div></section>"


def _tables(result: ScanResult) -> str:
    out = ["<section id=lag><h2>Lag (ms, snapshot events excluded)</h2>"]
    if result.lag:
        out.append(_table(
            ["server", "table", "events", "p50", "p95", "p99", "max", "negative", "invalid source ts", "snapshot"],
            [[r.get("server"), r.get("table"), r.get("count"), r.get("p50_ms"), r.get("p95_ms"), r.get("p99_ms"),
              r.get("max_ms"), r.get("negative"), r.get(INVALID_SOURCE_TS.name), r.get("snapshot_excluded")]
             for r in sorted(result.lag, key=lambda r: -(r.get("p99_ms") or 0))], set(range(2, 10))))
    else:
        out.append("<p>No change events.</p>")
    out.append("</section><section id=transactions><h2>Transactions</h2>")
    tx = {k: v for k, v in (result.transactions or {}).items() if isinstance(v, int)}
    out.append(_table(list(tx), [list(tx.values())], set(range(len(tx)))) if tx else "<p>No transaction metadata.</p>")
    out.append("</section><section id=events><h2>Events by table</h2>")
    out.append(_table(["server", "table", "op", "events"],
                      [[r["server"], r["table"], r["op"], r["count"]] for r in result.events_by_table], {3}))
    if result.snapshots:
        out.append("<h3>Snapshots</h3>" + _table(
            ["server", "table", "rows", "incremental rows", "first marker", "last marker"],
            [[r["server"], r["table"], r["rows"], r["incremental_rows"], r["first_marker"], r["last_marker"]]
             for r in result.snapshots], {2, 3}))
    return "".join(out) + "</section>"


def _history(result: ScanResult) -> str:
    """With --history: what was recorded, what had no verdict, each anomaly against its band."""
    h = result.history
    if not h:
        return ""
    out = ["<section id=history><h2>History</h2>"]
    if not h.get("recorded"):
        return "".join([*out, f"<p>{escape(h['location'])}: nothing recorded ({escape(h.get('reason', ''))}).</p></section>"])
    done = f"already recorded (batch {h['batch']})" if h["already_recorded"] else f"{h['rows_written']} rows recorded"
    out.append(f"<p>{escape(h['location'])}: {escape(done)}; {h['judged']} table-interval metric(s) judged against "
               f"{h['history_rows_read']} past row(s). Baseline: {escape(json.dumps(h['baseline']))}.</p>")
    if h["no_verdict"]:
        out.append(_table(["server", "table", "intervals without a verdict", "why"],
                          [[n["server"], n["table"], n["intervals"], n["reason"]] for n in h["no_verdict"]], {2}))
    anomalies = [f for f in result.findings if f.get("interval_start_ms") is not None]
    if anomalies:
        out.append(_table(["rule", "server", "table", "interval", "metric", "observed", "baseline", "band"], [
            [f["rule"], f["server"], f["table"], _clock(f["interval_start_ms"]), f["metric"], f["observed"], f["baseline"],
             f"{f['band'][0]:g} .. {f['band'][1]:g}"] for f in anomalies], {5, 6}))
    return "".join(out) + "</section>"


def _findings(result: ScanResult) -> str:
    if not result.findings_by_rule:
        return "<section id=findings><h2>Findings</h2><p class=ok>No findings.</p></section>"
    samples: dict[str, list[dict]] = defaultdict(list)
    for f in result.findings:
        if len(samples[f["rule"]]) < SAMPLES_PER_RULE:
            samples[f["rule"]].append(f)
    order = sorted(((sev, rule, n) for sev, per in result.findings_by_rule.items() for rule, n in per.items()),
                   key=lambda x: (ORDER.get(x[0], 2), -x[2], x[1]))
    out = ["<section id=findings><h2>Findings</h2>"]
    for sev, rule, n in order:
        meta = CATALOGUE.get(rule)
        meaning = f"{meta.check} check, per {meta.scope}: {meta.meaning}" if meta else ""
        shown = len(samples[rule])
        out.append(f"<details id='rule-{escape(rule)}'{' open' if sev == 'error' else ''}><summary><span class={escape(sev)}>"
                   f"{escape(rule)}</span> · {escape(sev)} · {n} <span class=meaning>{escape(meaning)}</span></summary>")
        if shown < n:
            out.append(f"<p>The first {shown} of {n}.</p>")
        out.append(_table(["topic", "partition", "offset", "key", "transaction", "message"], [
            [f.get("topic"), f.get("partition"), f.get("offset"), f.get("key"), _short(f.get("txn_id")), f.get("message")]
            for f in samples[rule]], {1, 2}))
        out.append("</details>")
    return "".join(out) + "</section>"


def render_html(result: ScanResult) -> str:
    total = sum(n for per in result.findings_by_rule.values() for n in per.values())
    verdict = "ok" if not total else (Severity.ERROR if result.findings_by_rule.get(Severity.ERROR) else Severity.WARNING)
    configs = chart_configs(result)
    title = "no findings" if not total else f"{total} finding(s)"
    return "".join([
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<meta name=viewport content='width=device-width,initial-scale=1'>",
        f"<title>cdc-monitor report: {title}</title><style>{_STYLE}</style></head><body>",
        _header(result, total, verdict), "<main>", _summary(result), _pictures(configs), _tables(result), _history(result),
        _findings(result),
        "</main>", data_script(configs), f"<script>{chart_js()}</script><script>{PAGE_SCRIPT}</script></body></html>\n",
    ])
