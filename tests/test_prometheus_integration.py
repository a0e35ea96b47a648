"""Metrics end to end: a faulty scan's metrics served by the exporter and pushed to a real
Pushgateway, scraped by a real Prometheus (Debian's package) using the shipped scrape config and
alert rules; every dashboard and rule expression evaluated through Prometheus' HTTP API."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.dashboards.build import dashboard
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from cdc_monitor.sinks.prometheus import MetricsServer, MetricsSnapshot, push, render, write_textfile
from tests.support.promtools import binary, get, query, start_prometheus, start_pushgateway

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = [ROOT / "deploy" / "prometheus" / name for name in ("cdc-monitor.rules.yml", "cdc-anomalies.rules.yml")]
GRAFANA_VARS = {"$server": ".*", "$table": ".*", "$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h"}


def rule_exprs() -> list[tuple[str, str]]:
    """(alert or recorded series name, expression) of every rule, alerting and recording."""
    docs = [yaml.safe_load(f.read_text()) for f in RULE_FILES]
    return [(r.get("alert") or r["record"], r["expr"]) for doc in docs for g in doc["groups"] for r in g["rules"]]


RECORDED = {name for name, _ in rule_exprs() if name.startswith("cdc:")}
# series recorded from a week of history (baselines and bands): absent from a Prometheus started a second ago
NEEDS_HISTORY = re.compile(r"cdc:table_[a-z0-9_]+:(reference|baseline|band_lower|band_upper|floor)\b")


def panel_exprs() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in dashboard()["panels"] if p["type"] != "row" for t in p["targets"]]


def variable_exprs() -> list[tuple[str, str]]:
    """Grafana's label_values(selector, label) as the PromQL that returns the same label values."""
    out = []
    for v in dashboard()["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", v["query"]["query"])
            assert m, v["query"]
            out.append((v["name"], f"group by ({m.group(2)}) ({m.group(1)})"))
    return out


def substitute(expr: str) -> str:
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return expr


@pytest.fixture(scope="module")
def faulty_snapshot(scan, tmp_path_factory):
    root = tmp_path_factory.mktemp("prom")
    write_capture(generate("sqlserver", events=600, seed=8, faults=True, heartbeats=True), root / "faulty.jsonl")
    result = scan([root / "faulty.jsonl"])
    assert result.findings_by_rule  # the capture is faulty
    snap = MetricsSnapshot.from_outcome(result, "watch-test")
    snap.totals = {"events": result.events_by_table, "findings": result.finding_counts,
                   "transactions": [{"server": s, "status": st, "count": n}
                                    for s, per in snap.transactions.items() for st, n in per.items()]}
    return snap


def reconcile_snapshot() -> MetricsSnapshot:
    """A reconcile run's metrics (the reconcile tests build real ones against PostgreSQL)."""
    from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile
    from cdc_monitor.vocabulary import ReconcileState

    rows = dict.fromkeys(ReconcileState, 0) | {ReconcileState.MATCH: 14, ReconcileState.MISSING: 2}
    table = TableReconcile("public.orders", 16, 14, rows, {}, 0, "0a", "0b", {})
    return MetricsSnapshot.from_outcome(ReconcileOutcome([table], records=30, finished_at=time.time()),
                                          "nightly-reconcile")


@pytest.fixture(scope="module")
def stack(faulty_snapshot, tmp_path_factory):
    """exporter + pushgateway (a scheduled scan's push) + Prometheus scraping both, rules loaded."""
    root = tmp_path_factory.mktemp("stack")
    exporter = MetricsServer("127.0.0.1", 0, faulty_snapshot)
    gateway = start_pushgateway(root)
    batch = MetricsSnapshot(**{**faulty_snapshot.__dict__, "job": "nightly-scan", "totals": None})
    push(batch, gateway.url)
    push(reconcile_snapshot(), gateway.url)
    shipped = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    targets = {"cdc-monitor-watch": f"127.0.0.1:{exporter.port}", "pushgateway": gateway.url.removeprefix("http://")}
    assert {j["job_name"] for j in shipped["scrape_configs"]} == set(targets)
    assert [Path(f).name for f in shipped["rule_files"]] == [f.name for f in RULE_FILES]
    prom = start_prometheus(root, [targets[j["job_name"]] for j in shipped["scrape_configs"]], list(map(str, RULE_FILES)))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        up = query(prom, "sum(up)")["data"]["result"]
        # two scrapes of each target at least: rate-style panels need two samples
        ready = query(prom, 'count(cdc_window_events{job="nightly-scan"}) and count(cdc_events_total) '
                            "and min(count_over_time(cdc_monitor_window_failures_total[1m])) >= 2 "
                            "and count(cdc:table_events:rate5m) and count(cdc:table_lag_p99:avg5m)")
        if up and float(up[0]["value"][1]) == 2 and ready["data"]["result"]:
            break
        time.sleep(0.5)
    else:
        pytest.fail("Prometheus did not scrape both targets within 60s")
    yield {"prom": prom, "gateway": gateway, "exporter": exporter}
    prom.stop()
    gateway.stop()
    exporter.stop()


def test_promtool_accepts_the_exposition(faulty_snapshot, stack):
    for text in (render(faulty_snapshot), get(f"http://127.0.0.1:{stack['exporter'].port}/metrics")):
        proc = subprocess.run([binary("promtool"), "check", "metrics"], input=text, capture_output=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("title,expr", panel_exprs() + variable_exprs())
def test_every_dashboard_query_returns_data(stack, title, expr):
    """Baseline bands need a week of history: they must evaluate, and read only recorded series."""
    answer = query(stack["prom"], substitute(expr))
    assert answer["status"] == "success", (title, answer)
    assert set(re.findall(r"cdc:[a-z0-9_:]+", expr)) <= RECORDED, expr
    if NEEDS_HISTORY.search(expr):
        assert not answer["data"]["result"], f"a fresh Prometheus has no baseline, yet {expr} returns data"
    else:
        assert answer["data"]["result"], f"panel {title!r} returns no data: {expr}"


@pytest.mark.parametrize("alert,expr", rule_exprs())
def test_every_rule_expression_parses_and_evaluates(stack, alert, expr):
    answer = query(stack["prom"], expr)
    assert answer["status"] == "success", (alert, answer)


def test_rules_loaded_and_faults_fire(stack):
    rules = json.loads(get(stack["prom"].url + "/api/v1/rules"))["data"]["groups"]
    assert {r["name"] for g in rules for r in g["rules"]} == {a for a, _ in rule_exprs()}
    assert all(r["health"] == "ok" for g in rules for r in g["rules"])
    expected = {"CdcTransactionEndMissing", "CdcTransactionCountMismatch", "CdcSchemaViolations", "CdcOrderingAnomalies"}
    firing: set[str] = set()
    deadline = time.monotonic() + 20  # no `for:` clause: they fire on the first evaluations of the faulty window
    while not expected <= firing and time.monotonic() < deadline:
        alerts = json.loads(get(stack["prom"].url + "/api/v1/alerts"))["data"]["alerts"]
        firing = {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}
        time.sleep(0.5)
    assert expected <= firing


def test_dashboards_and_rules_name_only_exported_metrics(faulty_snapshot):
    exported = set()
    for snapshot in (faulty_snapshot, reconcile_snapshot()):
        for fam in text_string_to_metric_families(render(snapshot).decode()):
            exported |= {s.name for s in fam.samples}
    named = set()
    for _, expr in panel_exprs() + variable_exprs() + rule_exprs():
        named |= set(re.findall(r"\b(cdc_[a-z0-9_]+)\b", expr))
    assert named and named <= exported, f"not exported: {sorted(named - exported)}"


def test_pushgateway_groups_replace_old_series(stack, faulty_snapshot):
    gateway = stack["gateway"]
    snap = MetricsSnapshot(**{**faulty_snapshot.__dict__, "job": "replace-test", "totals": None})
    keys = push(snap, gateway.url)
    assert {"job": "replace-test"} in keys and all(k["job"] == "replace-test" for k in keys)
    gone = snap.lag[0]["table"]
    assert f'table="{gone}"' in _group_text(gateway, "replace-test")
    later = MetricsSnapshot(**{**snap.__dict__,
                               "lag": [r for r in snap.lag if r["table"] != gone],
                               "events": [r for r in snap.events if r["table"] != gone],
                               "findings": [r for r in snap.findings if r["table"] != gone]})
    push(later, gateway.url)
    text = _group_text(gateway, "replace-test")
    assert f'table="{gone}"' not in text  # the table left the window: its series went with it
    assert "cdc_lag_seconds" in text and "cdc_monitor_last_success_timestamp_seconds" in text


def _group_text(gateway, job: str) -> str:
    lines = get(gateway.url + "/metrics").decode().splitlines()
    return "\n".join(line for line in lines if f'job="{job}"' in line)


def test_textfile_is_written_atomically_and_valid(faulty_snapshot, tmp_path):
    path = tmp_path / "cdc.prom"
    write_textfile(faulty_snapshot, str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["cdc.prom"]  # no temp file left behind
    proc = subprocess.run([binary("promtool"), "check", "metrics"], input=path.read_bytes(), capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {f.name for f in text_string_to_metric_families(path.read_text())}
    assert {"cdc_lag_seconds", "cdc_window_findings", "cdc_monitor_last_success_timestamp_seconds"} <= names
