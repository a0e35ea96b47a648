"""JSON and text reports of a ScanResult (the JSON shape is in the README)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from cdc_monitor.checks.catalogue import RULES

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult

SAMPLE_LOCATIONS = 3


def render_json(result: ScanResult) -> str:
    return json.dumps(result.to_json_dict(), indent=2, sort_keys=False, default=str) + "\n"


def _location(f: dict) -> str:
    parts = [f"{f['topic']}[{f['partition']}]@{f['offset']}" if f.get("topic") else None]
    if f.get("txn_id"):
        parts.append(f"txn {f['txn_id']}")
    return " ".join(p for p in parts if p) or (f.get("message") or "")[:60]


def render_text(result: ScanResult, out: IO[str], width: int = 120) -> None:
    console = Console(file=out, width=width, highlight=False, soft_wrap=False)
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
            t.add_row(str(r["server"]), str(r["table"]), str(r["op"]), str(r["count"]))
        console.print(t)
    if result.lag:
        t = Table(title="Lag (worst p99 first, ms)", title_justify="left")
        for col in ("table", "count", "p50", "p95", "p99", "max", "negative", "invalid ts", "snapshot"):
            t.add_column(col, justify="left" if col == "table" else "right")
        for r in sorted(result.lag, key=lambda r: -(r.get("p99_ms") or 0))[:15]:
            t.add_row(r["table"], *(str(r.get(k)) for k in ("count", "p50_ms", "p95_ms", "p99_ms", "max_ms",
                                                             "negative", "invalid_source_ts", "snapshot_excluded")))
        console.print(t)
    if result.transactions:
        tx = result.transactions
        console.print("Transactions: " + ", ".join(f"{k} {v}" for k, v in tx.items() if isinstance(v, int)))
    by_check = s.get("findings_by_check", {})
    console.print("Findings by check: " + ", ".join(f"{k} {v}" for k, v in by_check.items()))
    samples: dict[str, list[dict]] = defaultdict(list)
    for f in result.findings:
        samples[f["rule"]].append(f)
    if result.findings_by_rule:
        t = Table(title="Findings by rule", title_justify="left")
        for col in ("check", "rule", "severity", "count", "sample locations"):
            t.add_column(col, justify="right" if col == "count" else "left")
        rows = [(sev, rule, n) for sev, by_rule in result.findings_by_rule.items() for rule, n in by_rule.items()]
        for sev, rule, n in sorted(rows, key=lambda r: (RULES[r[1]][0], r[1])):
            locs = "; ".join(_location(f) for f in samples[rule][:SAMPLE_LOCATIONS])
            t.add_row(RULES[rule][0], rule, sev, str(n), locs)
        console.print(t)
    else:
        console.print("[green]No findings.[/green]")
