"""anomaly check: each table against its own history (``--history``: docs/history.md).

Judged on the driver once a window's measurements are collected (history/record.py), per table and
interval of the history, against the table's baseline (checks/baseline.py: the median and MAD of
its past intervals at the same hour of the week, else of its last intervals; too little history
is no verdict, never a guess). Each finding carries the observed value, the baseline and the band.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cdc_monitor.checks.baseline import VOLUME_OPS, HistoryIndex, lag_p99, volume
from cdc_monitor.checks.findings import finding_row
from cdc_monitor.vocabulary import Rule, Severity

VOLUME_ANOMALY = Rule("volume_anomaly", "anomaly", Severity.WARNING, "table",
    "an interval's change events outside the table's baseline band (its history's median +- k scaled MADs)")
LAG_ANOMALY = Rule("lag_anomaly", "anomaly", Severity.WARNING, "table",
    "an interval's lag p99 above the table's baseline band")
TABLE_SILENT = Rule("table_silent", "anomaly", Severity.WARNING, "table",
    "no change events in the window where the table's baseline band expects some, while heartbeats or other tables "
    "show its connector alive (a silent connector is connector_stalled's)")
RULES = (VOLUME_ANOMALY, LAG_ANOMALY, TABLE_SILENT)
METRIC_RULE = {"events": VOLUME_ANOMALY, "lag_p99_ms": LAG_ANOMALY}


@dataclass
class Judgement:
    findings: list[dict[str, Any]] = field(default_factory=list)
    judged: int = 0  # (table, interval, metric) verdicts given
    no_verdict: dict[tuple[str, str], int] = field(default_factory=dict)  # (server, table) -> intervals a metric had none


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ms // 1000))


def judge_window(rows: Iterable[dict[str, Any]], history: HistoryIndex, window_start: int,
                 heartbeat_servers: Iterable[str] = ()) -> Judgement:
    """The window's history ``rows`` (history/measure.py) against ``history`` (committed rows before
    the window). A table silent through the window is ``table_silent`` only while its server shows
    life (heartbeats, or another table's events); otherwise it is not judged here."""
    rows = list(rows)
    totals: dict[tuple[str, str], int] = {}
    for r in rows:
        key = (r["server"], r["table"])
        totals[key] = totals.get(key, 0) + sum(r[f"events_{op}"] for op in VOLUME_OPS)
    beating = set(heartbeat_servers)
    out = Judgement()
    for r in rows:
        key = (r["server"], r["table"])
        unjudged = False
        silent = totals[key] == 0
        alive = r["server"] in beating or any(n > 0 for (s, t), n in totals.items() if s == r["server"] and t != r["table"])
        for metric, measure in (("events", volume), ("lag_p99_ms", lag_p99)):
            observed = measure(r)
            if observed is None:
                continue
            base = history.baseline(r["server"], r["table"], metric, r["interval_start_ms"], window_start)
            if base is None:
                unjudged = True
                continue
            out.judged += 1
            rule = METRIC_RULE[metric]
            if metric == "events" and silent:
                if observed >= base.lower or not alive:
                    continue
                rule = TABLE_SILENT
            elif not (observed > base.upper or (metric == "events" and observed < base.lower)):
                continue
            out.findings.append(anomaly_finding(rule, r, metric, observed, base.as_dict()))
        if unjudged:
            out.no_verdict[key] = out.no_verdict.get(key, 0) + 1
    return out


def anomaly_finding(rule: Rule, row: dict[str, Any], metric: str, observed: float, base: dict[str, Any]) -> dict[str, Any]:
    lo, hi = base["band"]
    message = (f"{row['table']} at {_when(row['interval_start_ms'])} UTC: {metric} {observed:g}, baseline {base['baseline']:g} "
               f"(band {lo:g}..{hi:g}, {base['baseline_intervals']} intervals, {base['baseline_from'].replace('_', ' ')})")
    return {**finding_row(rule, message, topic=row.get("topic"), server=row["server"], table=row["table"]),
            "interval_start_ms": row["interval_start_ms"], "metric": metric, "observed": round(observed, 3), **base}
