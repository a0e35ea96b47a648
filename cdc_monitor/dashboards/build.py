"""The cdc-monitor Grafana dashboard as code: ``cdc-monitor dashboards build`` writes dashboards/*.json.

Every panel queries only metrics the exporter serves (the test suite evaluates each query
against a real Prometheus fed by a faulty scan). Variables: datasource, server, table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdc_monitor.checks.registry_schemas import AVRO_SCHEMA_NAME, UNDECODABLE_AVRO, UNKNOWN_SCHEMA_ID
from cdc_monitor.checks.schema_changes import SCHEMA_CHANGE_WITHOUT_DDL
from cdc_monitor.checks.snapshots import SNAPSHOT_RESTARTED
from cdc_monitor.vocabulary import Severity

SEL = 'server=~"$server", table=~"$table"'
DS = {"type": "prometheus", "uid": "${datasource}"}


def _target(expr: str, legend: str, ref: str) -> dict[str, Any]:
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}


def _panel(title: str, targets: list[tuple[str, str]], unit: str = "short", kind: str = "timeseries",
           description: str = "") -> dict[str, Any]:
    return {
        "type": kind, "title": title, "description": description, "datasource": DS,
        "targets": [_target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]}}
        if kind == "timeseries" else {"reduceOptions": {"calcs": ["lastNotNull"]}},
    }


def _override(name: str, **props: Any) -> dict[str, Any]:
    return {"matcher": {"id": "byName", "options": name},
            "properties": [{"id": k.replace("__", "."), "value": v} for k, v in props.items()]}


DASHED = {"fill": "dash", "dash": [10, 10]}


def _band_panel(title: str, metric: str, current: tuple[str, str], agg: str, unit: str, description: str,
                lower: bool) -> dict[str, Any]:
    """A panel repeated per selected table: the current value, the recorded baseline and the band the
    anomaly alert judges against (deploy/prometheus/cdc-anomalies.rules.yml), filled between its edges."""
    targets = [(f"{agg}(cdc:{metric}:{current[0]}{{{SEL}}})", current[1]), (f"{agg}(cdc:{metric}:baseline{{{SEL}}})", "baseline"),
               (f"{agg}(cdc:{metric}:band_upper{{{SEL}}})", "band upper")]
    floor = "baseline"
    if lower:
        targets.append((f"{agg}(cdc:{metric}:band_lower{{{SEL}}})", "band lower"))
        floor = "band lower"
    edge = {"custom__lineWidth": 0, "custom__fillOpacity": 0, "color": {"mode": "fixed", "fixedColor": "green"}}
    panel = _panel(title, targets, unit, description=description)
    panel["fieldConfig"]["overrides"] = [
        _override("baseline", custom__lineStyle=DASHED, color={"mode": "fixed", "fixedColor": "green"}),
        _override("band upper", **{**edge, "custom__fillBelowTo": floor, "custom__fillOpacity": 15}),
        *([_override("band lower", **edge)] if lower else []),
    ]
    return panel | {"repeat": "table", "repeatDirection": "h", "maxPerRow": 2}


BAND_NOTE = ("The band needs a week of the table's history (no band, no alert before). One panel per selected "
             "table; several selected servers are summed (lag: the worst), so pick one server to see the alert's exact band")


def _row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _variable(name: str, query: str, label: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "query", "datasource": DS, "query": {"query": query, "refId": name},
            "definition": query, "refresh": 2, "includeAll": True, "multi": True, "allValue": ".*",
            "current": {"text": "All", "value": "$__all"}, "sort": 1}


# rules a window's findings panel shows per table (said once per window or schema, not per record)
STREAM_RULES = "|".join(r.name for r in (SNAPSHOT_RESTARTED, SCHEMA_CHANGE_WITHOUT_DDL, UNDECODABLE_AVRO, UNKNOWN_SCHEMA_ID,
                                        AVRO_SCHEMA_NAME))


def panels() -> list[dict[str, Any]]:
    q = lambda quantile: f'max by (server, table) (cdc_lag_seconds{{{SEL}, quantile="{quantile}"}})'  # noqa: E731
    return [
        _row("Lag"),
        _panel("Lag p99 per table", [(q("0.99"), "{{server}} {{table}}")], "s",
               description="99th percentile of payload.ts_ms - source.ts_ms per table, over each window"),
        _band_panel("Lag p99 against its baseline: $table", "table_lag_p99", ("avg5m", "p99 (5m average)"), "max", "s",
                    "The 5-minute average of the table's lag p99, its baseline (the median of its hourly median p99 "
                    "over the trailing hour, the same hour yesterday and last week) and the band up to 4 x baseline + 1 s: "
                    "CdcLagAnomaly fires after 10 minutes above it. " + BAND_NOTE, lower=False),
        _panel("Lag quantiles (worst selected table)", [
            (f'max(cdc_lag_seconds{{{SEL}, quantile="0.5"}})', "p50"),
            (f'max(cdc_lag_seconds{{{SEL}, quantile="0.95"}})', "p95"),
            (f'max(cdc_lag_seconds{{{SEL}, quantile="0.99"}})', "p99"),
            (f'max(cdc_lag_seconds{{{SEL}, quantile="1"}})', "max")], "s"),
        _panel("Lag quantiles across the selected tables and instances (histogram)", [
            (f"histogram_quantile({q}, sum by (le) (cdc_lag_distribution_seconds_bucket{{{SEL}}}))", f"p{round(float(q) * 100)}")
            for q in ("0.5", "0.95", "0.99")], "s",
               description="From cdc_lag_distribution_seconds: unlike the per-table summary, its buckets add up across "
                           "tables, servers and monitor instances"),
        _panel("Mean lag per table", [(f"sum by (server, table) (cdc_lag_seconds_sum{{{SEL}}}) / "
                                       f"sum by (server, table) (cdc_lag_seconds_count{{{SEL}}})", "{{server}} {{table}}")], "s"),
        _panel("Freshness: time since the newest source change", [
            (f"time() - max by (server, table) (cdc_last_source_timestamp_seconds{{{SEL}}})", "{{server}} {{table}}")], "s",
               description="Grows when a table gets no changes: idle, or stalled (see the CdcTableStalled alert)"),
        _panel("Heartbeat age per server", [
            ('time() - max by (server) (cdc_last_heartbeat_timestamp_seconds{server=~"$server"})', "{{server}}")], "s",
               description="Seconds since the connector's newest heartbeat: stays low while the connector is alive, "
                           "even when its database is idle (needs Debezium's heartbeat.interval.ms)"),
        _row("Completeness and conformity"),
        _band_panel("Event rate against its baseline band: $table", "table_events", ("rate5m", "events/s (5m)"), "sum", "cps",
                    "Change events per second over 5 minutes, the baseline (the median of the table's rate over the "
                    "trailing hour, the hour around this time yesterday and last week) and the band from 40% of the "
                    "lower to 3x the higher of yesterday's and last week's: CdcVolumeAnomaly fires after 10 minutes "
                    "outside it. " + BAND_NOTE, lower=True),
        _panel("Events by op", [(f"sum by (op) (cdc_window_events{{{SEL}}})", "{{op}}")]),
        _panel("Transactions by status", [('sum by (status) (cdc_window_transactions{server=~"$server"})', "{{status}}")]),
        _panel("Findings by check and rule", [(f"sum by (check, rule) (cdc_window_findings{{{SEL}}})", "{{check}} {{rule}}")]),
        _panel("Error findings per table", [
            (f'sum by (server, table) (cdc_window_findings{{{SEL}, severity="{Severity.ERROR}"}})', "{{server}} {{table}}")]),
        _panel("Re-snapshots, undeclared schema changes, Avro failures", [
            (f'sum by (server, table, rule) (cdc_window_findings{{{SEL}, rule=~"{STREAM_RULES}"}})',
             "{{server}} {{table}} {{rule}}")],
               description="A table snapshotted again after streaming (lost offsets), a value schema changed without "
                           "DDL on the schema-change topic, Avro records the registry cannot decode"),
        _row("Reconciliation (cdc-monitor reconcile)"),
        _panel("Rows not matching the source, per table and state", [
            ('sum by (table, state) (cdc_reconcile_rows{table=~"$table", state!="match"})', "{{table}} {{state}}")],
               description="From the latest reconcile run: rows missing from the topic, extra in it, differing, and "
                           "changed after the window (in_flight, not a mismatch). See the CdcReconcileMismatch alert"),
        _row("Monitor health"),
        _panel("Since the last completed window", [
            ("time() - max by (job) (cdc_monitor_last_success_timestamp_seconds)", "{{job}}")], "s", "stat"),
        _panel("Window duration", [("max by (job) (cdc_monitor_window_duration_seconds)", "{{job}}")], "s"),
        _panel("Records per window", [("sum by (job) (cdc_window_records)", "{{job}} records"),
                                      ("sum by (job) (cdc_window_invalid_records)", "{{job}} undecodable")]),
        _panel("Failed windows (1h)", [("sum by (job) (increase(cdc_monitor_window_failures_total[1h]))", "{{job}}")],
               "short", "stat"),
    ]


def dashboard() -> dict[str, Any]:
    laid_out, x, y = [], 0, 0
    for i, p in enumerate(panels()):
        p = dict(p, id=i + 1)
        if p["type"] == "row":
            y += 8 if x else 0
            x = 0
            p["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": y}
            y += 1
        else:
            p["gridPos"] = {"h": 8, "w": 12, "x": x, "y": y}
            x, y = (12, y) if x == 0 else (0, y + 8)
        laid_out.append(p)
    return {
        "uid": "cdc-monitor", "title": "cdc-monitor: CDC lag, completeness, conformity, ordering",
        "tags": ["cdc", "debezium", "cdc-monitor"], "timezone": "utc", "schemaVersion": 39, "version": 1,
        "editable": True, "refresh": "1m", "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0},
            _variable("server", "label_values(cdc_window_events, server)", "Server"),
            _variable("table", 'label_values(cdc_window_events{server=~"$server"}, table)', "Table"),
        ]},
        "annotations": {"list": []},
        "panels": laid_out,
    }


DASHBOARDS = {"cdc-monitor.json": dashboard}


def render(name: str) -> str:
    return json.dumps(DASHBOARDS[name](), indent=2, sort_keys=True) + "\n"


def write_all(folder: str | Path) -> list[Path]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in DASHBOARDS:
        path = out / name
        path.write_text(render(name))
        written.append(path)
    return written
