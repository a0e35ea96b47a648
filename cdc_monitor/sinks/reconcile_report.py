"""``reconcile``'s text and HTML reports (its JSON is ``ReconcileOutcome.to_json``): per table the
rows on each side, the count per state, the columns that differ, the checksums and sample keys."""

from __future__ import annotations

import json
import time
from html import escape
from typing import TYPE_CHECKING, Any

from cdc_monitor import __version__
from cdc_monitor.sinks.html_report import _STYLE, _table
from cdc_monitor.vocabulary import ReconcileState

if TYPE_CHECKING:
    from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile

STATES = [s for s in ReconcileState]


def _verdict(outcome: ReconcileOutcome) -> str:
    n = outcome.mismatches
    return f"MISMATCH: {n} row(s) missing, extra or differing" if n else "match: the topics agree with the source"


def _summary_rows(outcome: ReconcileOutcome) -> list[list[Any]]:
    """Per table: its name, the rows on each side, the rows per state, the checksums' verdict."""
    return [[t.table, t.source_rows, t.topic_rows, *[t.rows[s] for s in STATES],
             "equal" if t.source_checksum == t.topic_checksum else "differ"] for t in outcome.tables]


def _sample_text(sample: dict[str, Any]) -> str:
    key = json.dumps(sample["key"], sort_keys=True)
    cols = "; ".join(f"{c['column']}: source {c['source']!r}, topic {c['topic']!r}" for c in sample.get("columns", []))
    return f"{key}  {cols}".rstrip()


def render_text(outcome: ReconcileOutcome) -> str:
    src = outcome.source
    lines = [f"cdc-monitor reconcile: {_verdict(outcome)}",
             f"source: {src.get('url')} ({src.get('dialect')}); {outcome.records} record(s) read"]
    if src.get("position") is not None and src.get("window_position") is not None:
        lines.append(f"source log position {src['position']}, the window's last {src['window_position']} "
                     f"({src['position'] - src['window_position']} byte(s) of log since)")
    lines.append("")
    head = ["table", "source", "topic", *[s.value for s in STATES], "checksums"]
    rows = _summary_rows(outcome)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for row in (head, *rows):
        cells = zip(row, widths, strict=True)
        lines.append("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(cells)))
    for t in outcome.tables:
        lines.extend(_table_detail(t))
    for s in outcome.skipped:
        lines.append(f"skipped {s['table']}: {s['reason']}")
    return "\n".join(lines) + "\n"


def _table_detail(t: TableReconcile) -> list[str]:
    out: list[str] = []
    if t.columns_differing:
        out.append(f"\n{t.table}: differing columns: " + ", ".join(f"{c} ({n})" for c, n in t.columns_differing.items()))
    if t.unavailable_values:
        out.append(f"{t.table}: {t.unavailable_values} toasted value(s) the topic could not carry (not compared)")
    for state, samples in t.samples.items():
        if samples:
            out.append(f"{t.table} {state.value} ({t.rows[state]}), first {len(samples)}:")
            out.extend(f"  {_sample_text(s)}" for s in samples)
    return out


def render_html(outcome: ReconcileOutcome) -> str:
    src = outcome.source
    verdict_class = "error" if outcome.mismatches else "ok"
    meta = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in (
        ("source", f"{src.get('url')} ({src.get('dialect')})"), ("records read", outcome.records),
        ("source log position", src.get("position")), ("window's last position", src.get("window_position")),
        ("generated", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(outcome.finished_at))),
        ("version", __version__)))
    rows = _summary_rows(outcome)
    parts = [f"<header><h1>cdc-monitor reconcile</h1><p><span class='verdict {verdict_class}'>{escape(_verdict(outcome))}"
             f"</span></p><dl class='meta'>{meta}</dl></header><main>",
             "<h2 id='tables'>Tables</h2><div class='scroll'>",
             _table(["table", "source rows", "topic rows", *[s.value for s in STATES], "checksums"], rows,
                    set(range(1, 3 + len(STATES)))), "</div>"]
    for t in outcome.tables:
        parts.append(f"<h2>{escape(t.table)}</h2>")
        if t.columns_differing:
            parts.append(_table(["column", "rows differing"], [[c, n] for c, n in t.columns_differing.items()], {1}))
        if t.unavailable_values:
            parts.append(f"<p>{t.unavailable_values} toasted value(s) the topic could not carry (not compared).</p>")
        for state, samples in t.samples.items():
            if samples:
                parts.append(f"<details open><summary class='error'>{escape(state.value)}: {t.rows[state]} row(s)</summary>")
                parts.append(_table(["key", "columns (source / topic)"], [
                    [json.dumps(s["key"], sort_keys=True),
                     "; ".join(f"{c['column']}: {c['source']} / {c['topic']}" for c in s.get("columns", []))]
                    for s in samples]))
                parts.append("</details>")
    if outcome.skipped:
        parts.append("<h2>Skipped</h2>" + _table(["table", "reason"], [[s["table"], s["reason"]] for s in outcome.skipped]))
    parts.append("</main>")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>cdc-monitor reconcile</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>\n")
