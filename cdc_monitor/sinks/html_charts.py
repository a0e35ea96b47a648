"""The pictures of the HTML report: Chart.js (vendored, MIT, ``vendor/``) configurations built
from a ScanResult, and the page script that draws them. Nothing is fetched: the library and the
data are inlined, so the page works offline and as a CI artifact.

Four pictures: the lag distribution per table (cumulative share of events at or under each
histogram bound, log scale), the largest lag per interval of record time per table against the
threshold, findings per rule per interval (stacked), and transactions by status; with
``--history``, one more per anomalous table and metric: its series against its baseline band.
"""

from __future__ import annotations

import json
import time
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.lag import HISTOGRAM_LE_S
from cdc_monitor.engine.census import nulls_first
from cdc_monitor.vocabulary import TxStatus

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#ad494a", "#637939", "#843c39", "#7b4173", "#3182bd")
MAX_LINES = 12  # tables drawn per picture (the largest lags first); the tables below list them all
MIN_LAG_S = 0.001  # a log scale cannot show 0 or negative lags: drawn at 1 ms


@cache
def chart_js() -> str:
    return resources.files("cdc_monitor.sinks").joinpath("vendor/chart.umd.min.js").read_text(encoding="utf-8")


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _clock(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000))


def _table_name(r: dict[str, Any]) -> str:
    return " ".join(str(x) for x in (r.get("server"), r.get("table")) if x) or "(unknown)"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    if seconds < 60:
        return f"{seconds:g} s"
    return f"{seconds / 60:g} min" if seconds < 3600 else f"{seconds / 3600:g} h"


def lag_distribution(result: ScanResult) -> dict[str, Any] | None:
    """Cumulative share of each table's change events at or under each histogram bound: the
    bounds are log-spaced, one step each on the axis (a CDF on a log scale)."""
    rows = [r for r in result.lag if r.get("count") and r.get("le_counts") is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: -(r.get("p99_ms") or 0))[:MAX_LINES]
    datasets = [{"label": _table_name(r), "data": [round(100 * n / r["count"], 2) for n in r["le_counts"]],
                 "borderColor": _colour(i), "backgroundColor": _colour(i), "stepped": "before", "pointRadius": 2}
                for i, r in enumerate(rows)]
    return {"type": "line", "data": {"labels": [_duration(le) for le in HISTOGRAM_LE_S], "datasets": datasets}, "options": {
        "scales": {
            "x": {"title": {"display": True, "text": "lag at most (log-spaced bounds)"}},
            "y": {"min": 0, "max": 100, "title": {"display": True, "text": "% of the table's change events"}}}}}


def lag_over_time(result: ScanResult) -> dict[str, Any] | None:
    series = result.series.get("lag") or []
    if not series:
        return None
    by_table: dict[str, list[dict[str, Any]]] = {}
    worst: dict[str, int] = {}
    for r in series:
        name = _table_name(r)
        by_table.setdefault(name, []).append({"x": r["t_ms"], "y": max((r["max_ms"] or 0) / 1000, MIN_LAG_S)})
        worst[name] = max(worst.get(name, 0), r["max_ms"] or 0)
    names = sorted(by_table, key=lambda n: (-worst[n], n))[:MAX_LINES]
    datasets: list[dict[str, Any]] = [
        {"label": n, "data": by_table[n], "borderColor": _colour(i), "backgroundColor": _colour(i), "pointRadius": 2}
        for i, n in enumerate(names)]
    start, end = min(r["t_ms"] for r in series), max(r["t_ms"] for r in series) + result.series["step_ms"]
    threshold_s = result.series.get("lag_threshold_ms", 0) / 1000
    datasets.append({"label": f"threshold {threshold_s:g} s", "data": [{"x": start, "y": threshold_s}, {"x": end, "y": threshold_s}],
                     "borderColor": "#b00020", "borderDash": [6, 4], "pointRadius": 0})
    return {"type": "line", "data": {"datasets": datasets}, "options": {
        "parsing": False, "scales": {
            "x": {"type": "linear", "title": {"display": True, "text": f"record time (UTC), per {result.series['step_ms'] // 1000} s"},
                  "ticks": {"callback": "clock"}},
            "y": {"type": "logarithmic", "ticks": {"callback": "decades"},
                  "title": {"display": True, "text": "largest lag in the interval (seconds, log scale)"}}}}}


def findings_over_time(result: ScanResult) -> dict[str, Any] | None:
    series = result.series.get("findings") or []
    if not series:
        return None
    step = result.series["step_ms"]
    times = sorted({r["t_ms"] for r in series})
    ticks = list(range(times[0], times[-1] + step, step))
    rules = sorted({(r["severity"], r["rule"]) for r in series}, key=lambda x: nulls_first(*x))
    counts = {(r["rule"], r["t_ms"]): r["count"] for r in series}
    datasets = [{"label": f"{rule} ({sev})", "data": [counts.get((rule, t), 0) for t in ticks],
                 "backgroundColor": _colour(i), "stack": "findings"} for i, (sev, rule) in enumerate(rules)]
    return {"type": "bar", "wide": True, "data": {"labels": [_clock(t)[11:] for t in ticks], "datasets": datasets}, "options": {
        "plugins": {"legend": {"labels": {"boxWidth": 10, "font": {"size": 11}}}},
        "scales": {"x": {"stacked": True, "title": {"display": True, "text": f"record time (UTC), per {step // 1000} s"}},
                   "y": {"stacked": True, "title": {"display": True, "text": "findings"}}}}}


def transactions_by_status(result: ScanResult) -> dict[str, Any] | None:
    from cdc_monitor.checks.transactions import STATUSES

    tx = result.transactions or {}
    if not tx.get("total"):
        return None
    colours = {TxStatus.COMPLETE: "#2ca02c", TxStatus.OPEN: "#7f7f7f"}
    return {"type": "bar", "data": {"labels": list(STATUSES), "datasets": [{
        "label": "transactions", "data": [int(tx.get(s) or 0) for s in STATUSES],
        "backgroundColor": [colours.get(s, "#b00020") for s in STATUSES]}]},
        "options": {"plugins": {"legend": {"display": False}}, "scales": {"y": {
            "type": "logarithmic", "ticks": {"callback": "decades"},
            "title": {"display": True, "text": "transactions (log scale)"}}}}}


CHARTS = (("lag-distribution", "Lag distribution per table", lag_distribution),
          ("lag-over-time", "Lag over record time per table", lag_over_time),
          ("findings-over-time", "Findings per rule over record time", findings_over_time),
          ("transactions-by-status", "Transactions by status", transactions_by_status))


def anomaly_chart(s: dict[str, Any], step_ms: int) -> dict[str, Any]:
    """One anomalous table's metric (``--history``: history/record.py's ``series``): its recent
    history, the window's intervals, and the baseline band of each (shaded between its bounds)."""
    window = s["window"]
    banded = [p for p in window if "band" in p]
    datasets: list[dict[str, Any]] = [
        {"label": "band: lower", "data": [{"x": p["t_ms"], "y": p["band"][0]} for p in banded], "borderColor": "#9ab",
         "borderDash": [4, 3], "pointRadius": 0},
        {"label": "band: upper", "data": [{"x": p["t_ms"], "y": p["band"][1]} for p in banded], "borderColor": "#9ab",
         "borderDash": [4, 3], "pointRadius": 0, "fill": "-1", "backgroundColor": "rgba(120,150,190,0.18)"},
        {"label": "baseline (median)", "data": [{"x": p["t_ms"], "y": p["baseline"]} for p in banded],
         "borderColor": "#567", "pointRadius": 0},
        {"label": "history", "data": [{"x": p["t_ms"], "y": p["observed"]} for p in s["past"]], "borderColor": "#7f7f7f",
         "backgroundColor": "#7f7f7f", "pointRadius": 1},
        {"label": "this window", "data": [{"x": p["t_ms"], "y": p["observed"]} for p in window], "borderColor": "#b00020",
         "backgroundColor": "#b00020", "pointRadius": 4}]
    unit = "change events per interval" if s["metric"] == "events" else "lag p99 (ms)"
    return {"type": "line", "data": {"datasets": datasets}, "options": {
        "parsing": False, "plugins": {"filler": {"propagate": False}}, "scales": {
            "x": {"type": "linear", "ticks": {"callback": "clock"},
                  "title": {"display": True, "text": f"record time (UTC), per {step_ms // 60_000} min"}},
            "y": {"min": 0, "title": {"display": True, "text": unit}}}}}


def anomaly_charts(result: ScanResult) -> list[tuple[str, str, dict[str, Any]]]:
    h = result.history or {}
    return [(f"anomaly-{i}", f"{_table_name(s)}: {s['metric']} against its baseline band", anomaly_chart(s, h["interval_ms"]))
            for i, s in enumerate(h.get("series") or [])]


def chart_configs(result: ScanResult) -> list[tuple[str, str, dict[str, Any]]]:
    """(element id, title, Chart.js configuration) of every picture this result has data for."""
    return [(cid, title, cfg) for cid, title, build in CHARTS if (cfg := build(result)) is not None] + anomaly_charts(result)


def data_script(configs: list[tuple[str, str, dict[str, Any]]]) -> str:
    """The configurations as an inert JSON script element (``</`` escaped: no value can close it)."""
    drawn = {cid: {k: v for k, v in cfg.items() if k != "wide"} for cid, _, cfg in configs}  # "wide": the page's layout
    payload = json.dumps(drawn).replace("</", "<\\/")
    return f'<script id="cdc-charts" type="application/json">{payload}</script>'


# draws every configuration; records what it drew (and any error) on <html> so a browser test can
# read the outcome from the DOM
PAGE_SCRIPT = """
(function () {
  var root = document.documentElement, drawn = 0;
  window.addEventListener('error', function (e) { root.dataset.errors = (root.dataset.errors || '') + e.message + ';'; });
  function clock(v) { return new Date(v).toISOString().slice(11, 19); }
  function decades(v) { var l = Math.log10(v); return Math.abs(l - Math.round(l)) < 1e-9 ? String(v) : ''; }
  var callbacks = {clock: clock, decades: decades};
  var configs = JSON.parse(document.getElementById('cdc-charts').textContent);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Object.keys(configs).forEach(function (id) {
    var cfg = configs[id], scales = (cfg.options && cfg.options.scales) || {};
    Object.keys(scales).forEach(function (axis) {
      var ticks = scales[axis].ticks;
      if (ticks && typeof ticks.callback === 'string') { ticks.callback = callbacks[ticks.callback]; }
    });
    new Chart(document.getElementById(id), cfg);
    drawn += 1;
  });
  root.dataset.charts = String(drawn);
})();
"""
