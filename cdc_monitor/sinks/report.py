"""JSON and text reports of a ScanResult (docs/report.md describes both)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.checks.lag import INVALID_SOURCE_TS
from cdc_monitor.vocabulary import SEVERITY_RANK, Severity

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult

SAMPLE_LOCATIONS = 3
LAG_ROWS = 15
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def render_json(result: ScanResult) -> str:
    return json.dumps(result.to_json_dict(), indent=2, sort_keys=False, default=str) + "\n"


def _cell(value: object) -> str:
    """A table cell: ``-`` for a value that is absent (an event without op, a table without lag)."""
    return "-" if value is None else str(value)


def short_id(txn_id: str, keep: int = 18) -> str:
    """A transaction id short enough for a table cell: its start and end (ids such as
    ``file=mysql-bin.000003,pos=154:...`` or ``4242:25055872`` stay whole up to ``keep``)."""
    return txn_id if len(txn_id) <= keep else f"{txn_id[:keep - 8]}…{txn_id[-7:]}"


def _location(f: dict) -> str:
    if f.get("interval_start_ms") is not None:  # an anomaly: its table and interval (checks/anomalies.py)
        return f"{f['table']} {_utc(f['interval_start_ms'])}"
    parts = [f"{f['topic']}[{f['partition']}]@{f['offset']}" if f.get("topic") and f.get("offset") is not None
             else f"{f['topic']}[{f['partition']}]" if f.get("topic") else None]
    if f.get("txn_id"):
        parts.append(f"txn {short_id(f['txn_id'])}")
    return " ".join(p for p in parts if p) or (f.get("message") or "")[:60]


def _utc(ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ms // 1000))


def _history(result: ScanResult, console: Console) -> None:
    """With --history: what was recorded, what could not be judged, each anomaly against its band."""
    h = result.history
    if not h.get("recorded"):
        console.print(f"History {h['location']}: nothing recorded ({h.get('reason', '')})")
        return
    done = "already recorded (batch " + h["batch"] + ")" if h["already_recorded"] else f"{h['rows_written']} rows recorded"
    console.print(f"History {h['location']}: {done}; {h['judged']} table-interval metric(s) judged against "
                  f"{h['history_rows_read']} past row(s)")
    for n in h["no_verdict"]:
        console.print(f"  no verdict for {n['server']} {n['table']} ({n['intervals']} interval(s)): {n['reason']}")
    anomalies = [f for f in result.findings if f.get("interval_start_ms") is not None]
    if anomalies:
        t = Table(title="Anomalies (each table against its own history)", title_justify="left")
        for col in ("rule", "server", "table", "interval (UTC)", "metric", "observed", "baseline", "band"):
            t.add_column(col, justify="right" if col in ("observed", "baseline") else "left")
        for f in anomalies:
            lo, hi = f["band"]
            t.add_row(f["rule"], _cell(f["server"]), _cell(f["table"]), _utc(f["interval_start_ms"]), f["metric"],
                      f"{f['observed']:g}", f"{f['baseline']:g}", f"{lo:g} .. {hi:g}")
        console.print(t)


def text_width(out: IO[str]) -> int:
    """``COLUMNS`` when set, the terminal's width on a terminal, else 120 (a file or a pipe)."""
    import os
    import shutil

    if os.environ.get("COLUMNS", "").isdigit():
        return max(40, int(os.environ["COLUMNS"]))
    if getattr(out, "isatty", lambda: False)():
        return max(40, shutil.get_terminal_size((120, 24)).columns)
    return 120


def render_text(result: ScanResult, out: IO[str], width: int | None = None, colour: bool = False) -> None:
    """``colour``: ANSI colours (the caller knows whether the text ends on a terminal; NO_COLOR wins)."""
    console = Console(file=out, width=width or text_width(out), highlight=False, soft_wrap=False,
                      force_terminal=colour, no_color=not colour or None)
    s = result.summary
    console.print(
        f"[bold]cdc-monitor[/bold] scanned {s['records']} records: {s['data_events']} data events, "
        f"{s['tombstones']} tombstones, {s['transaction_markers']} transaction markers, "
        f"{s['invalid_records']} invalid records (scanned in {result.duration_seconds:.1f}s)"
    )
    if result.events_by_table:
        t = Table(title="Events by table", title_justify="left")
        for col in ("server", "table", "op", "events"):
            t.add_column(col, justify="right" if col == "events" else "left")
        for r in result.events_by_table:
            t.add_row(_cell(r["server"]), _cell(r["table"]), _cell(r["op"]), _cell(r["count"]))
        console.print(t)
    if result.lag:
        worst = sorted(result.lag, key=lambda r: -(r.get("p99_ms") or 0))
        more = len(worst) - LAG_ROWS
        t = Table(title="Lag (worst p99 first, ms)", title_justify="left",
                  caption=f"{more} more table(s): --output json lists them all" if more > 0 else None,
                  caption_justify="left")
        for col in ("server", "table", "count", "p50", "p95", "p99", "max", "negative", "invalid ts", "snapshot"):
            t.add_column(col, justify="left" if col in ("server", "table") else "right")
        for r in worst[:LAG_ROWS]:
            t.add_row(_cell(r.get("server")), _cell(r["table"]), *(_cell(r.get(k)) for k in (
                "count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "negative", INVALID_SOURCE_TS.name, "snapshot_excluded")))
        console.print(t)
    if result.snapshots:
        t = Table(title="Snapshots", title_justify="left")
        for col in ("server", "table", "rows", "incremental", "first marker", "last marker"):
            t.add_column(col, justify="right" if col in ("rows", "incremental") else "left")
        for r in result.snapshots:
            t.add_row(_cell(r["server"]), _cell(r["table"]), _cell(r["rows"]), _cell(r["incremental_rows"]),
                      "seen" if r["first_marker"] else "-", "seen" if r["last_marker"] else "-")
        console.print(t)
    if result.transactions:
        tx = result.transactions
        console.print("Transactions: " + ", ".join(f"{k} {v}" for k, v in tx.items() if isinstance(v, int)))
    if result.history:
        _history(result, console)
    by_check = s.get("findings_by_check", {})
    console.print("Findings by check: " + ", ".join(f"{k} {v}" for k, v in by_check.items()))
    samples: dict[str, list[dict]] = defaultdict(list)
    for f in result.findings:
        samples[f["rule"]].append(f)
    if result.findings_by_rule:
        t = Table(title="Findings by rule (errors first)", title_justify="left")
        for col in ("severity", "check", "rule", "count", "sample locations"):
            t.add_column(col, justify="right" if col == "count" else "left")
        rows = [(sev, rule, n) for sev, by_rule in result.findings_by_rule.items() for rule, n in by_rule.items()]
        for sev, rule, n in sorted(rows, key=lambda r: (-SEVERITY_RANK.get(r[0], -1), CATALOGUE[r[1]].check, r[1])):
            locs = "; ".join(_location(f) for f in samples[rule][:SAMPLE_LOCATIONS])
            t.add_row(f"[{SEVERITY_STYLE.get(sev, '')}]{sev}[/]" if sev in SEVERITY_STYLE else sev,
                      CATALOGUE[rule].check, rule, str(n), locs)
        console.print(t)
    else:
        console.print("[green]No findings.[/green]")
    if result.session.get("connect"):
        console.print("Spark Connect: not reported: " + "; ".join(result.session.get("skipped", {}).values()))
