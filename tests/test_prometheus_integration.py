"""Metrics end to end: a faulty scan's metrics served by the exporter and pushed to a real
Pushgateway, scraped by a real Prometheus (Debian's package) using the shipped scrape config and
alert rules; every dashboard and rule expression evaluated through Prometheus' HTTP API."""

from __future__ import annotations

import json
import re
import subprocess
import threading
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
def stack(request, tmp_path_factory):
    """exporter + pushgateway (a scheduled scan's push) + Prometheus scraping both, rules loaded. The
    exporter starts empty, as watch's does before its first batch; the servers start (a thread) while
    the faulty scan runs (``faulty_snapshot``), then the exporter serves it and the scan is pushed."""
    root = tmp_path_factory.mktemp("stack")
    exporter = MetricsServer("127.0.0.1", 0)
    shipped = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    assert [Path(f).name for f in shipped["rule_files"]] == [f.name for f in RULE_FILES]
    started: dict[str, object] = {}

    def start_servers() -> None:
        try:
            started["gateway"] = gateway = start_pushgateway(root)
            targets = {"cdc-monitor-watch": f"127.0.0.1:{exporter.port}", "pushgateway": gateway.url.removeprefix("http://")}
            started["jobs"] = {j["job_name"] for j in shipped["scrape_configs"]} == set(targets)
            started["prom"] = start_prometheus(root, [targets[j["job_name"]] for j in shipped["scrape_configs"]],
                                               list(map(str, RULE_FILES)))
        except BaseException as err:  # (raised in the test's thread below)
            started["error"] = err

    starting = threading.Thread(target=start_servers)
    starting.start()
    try:
        faulty_snapshot = request.getfixturevalue("faulty_snapshot")
    finally:
        starting.join()
    try:
        if "error" in started:
            raise started["error"]  # type: ignore[misc]
        assert started["jobs"]  # the shipped scrape config names the exporter and the gateway
        gateway, prom = started["gateway"], started["prom"]
        exporter.update(faulty_snapshot)
        batch = MetricsSnapshot(**{**faulty_snapshot.__dict__, "job": "nightly-scan", "totals": None})
        push(batch, gateway.url)
        push(reconcile_snapshot(), gateway.url)
    except BaseException:
        for server in (started.get("prom"), started.get("gateway"), exporter):
            if server is not None:
                server.stop()
        raise
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


def live_exprs() -> list[tuple[str, str]]:
    return [(t, e) for t, e in panel_exprs() + variable_exprs() if not NEEDS_HISTORY.search(e)]


def baseline_exprs() -> list[tuple[str, str]]:
    return [(t, e) for t, e in panel_exprs() if NEEDS_HISTORY.search(e)]


def _band(expr: str) -> str:
    """The recorded series a baseline panel draws."""
    return NEEDS_HISTORY.search(expr).group(0)


def test_the_panels_split_into_live_and_baseline_ones():
    """Every panel is in one of the two tests below, and the baseline panels are the lag and rate bands."""
    assert len(live_exprs()) + len(baseline_exprs()) == len(panel_exprs() + variable_exprs())
    assert {_band(e) for _, e in baseline_exprs()} == set(BASELINE_AFTER_A_STEADY_WEEK)


@pytest.mark.parametrize("title,expr", live_exprs())
def test_every_dashboard_query_returns_data(stack, title, expr):
    """Every panel and variable but the baseline bands, against the live stack."""
    answer = query(stack["prom"], substitute(expr))
    assert answer["status"] == "success", (title, answer)
    assert set(re.findall(r"cdc:[a-z0-9_:]+", expr)) <= RECORDED, expr
    assert answer["data"]["result"], f"panel {title!r} returns no data: {expr}"


@pytest.mark.parametrize("title,expr", baseline_exprs())
def test_baseline_panels_evaluate_and_are_empty_on_a_fresh_prometheus(stack, title, expr):
    """The bands need a week of history (the 1w reference): on the live stack they evaluate, read only
    recorded series, and draw nothing rather than a baseline from minutes of data."""
    answer = query(stack["prom"], substitute(expr))
    assert answer["status"] == "success", (title, answer)
    assert set(re.findall(r"cdc:[a-z0-9_:]+", expr)) <= RECORDED, expr
    assert not answer["data"]["result"], f"a fresh Prometheus has no baseline, yet {expr} returns data"


# a table steady for a week: 1 event/s (60 a minute), lag p99 0.2 s; its bands as the rules define them
STEADY_RATE, STEADY_LAG = 1.0, 0.2
BASELINE_AFTER_A_STEADY_WEEK = {
    "cdc:table_events:baseline": STEADY_RATE, "cdc:table_events:band_lower": 0.4 * STEADY_RATE,
    "cdc:table_events:band_upper": 3 * STEADY_RATE,
    "cdc:table_lag_p99:baseline": STEADY_LAG, "cdc:table_lag_p99:band_upper": 4 * STEADY_LAG + 1}


def test_baseline_panels_draw_the_bands_after_a_week_of_history(tmp_path):
    """The same panel queries over a week and an hour of steady history (promtool test rules, the
    shipped anomaly rules): each draws its band at the value the rules define."""
    minutes = 7 * 24 * 60 + 60
    spec = {
        "rule_files": [str(RULE_FILES[1])],
        "evaluation_interval": "5m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'cdc_events_total{server="s1", table="inv.orders", op="c"}', "values": f"0+60x{minutes}"},
                {"series": 'cdc_lag_seconds{server="s1", table="inv.orders", quantile="0.99"}',
                 "values": f"{STEADY_LAG}x{minutes}"}],
            "promql_expr_test": [
                {"expr": substitute(expr), "eval_time": "7d1h",
                 "exp_samples": [{"labels": "{}", "value": BASELINE_AFTER_A_STEADY_WEEK[_band(expr)]}]}
                for _, expr in baseline_exprs()]}]}
    test_file = tmp_path / "baseline-panels.test.yml"
    test_file.write_text(yaml.safe_dump(spec))
    proc = subprocess.run([binary("promtool"), "test", "rules", str(test_file)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


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


def _rewritten_while_read(path: Path, snapshots: list, writes: int = 150) -> tuple[list[bytes | None], int]:
    """Rewrite ``path`` ``writes`` times, cycling through the snapshots, while a thread reads it as fast
    as it can. Returns every distinct content read (None: the file was missing) and how many reads."""
    seen: set[bytes | None] = set()
    reads, done = 0, threading.Event()

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                seen.add(path.read_bytes())
            except FileNotFoundError:
                seen.add(None)
            reads += 1

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(writes):
            write_textfile(snapshots[i % len(snapshots)], str(path))
    finally:
        done.set()
        reader.join()
    return list(seen), reads


def test_textfile_is_written_atomically_and_valid(faulty_snapshot, tmp_path):
    """A reader polling the file (node_exporter's textfile collector) while it is rewritten never sees a
    partial or missing file: only one whole exposition or the other."""
    small = reconcile_snapshot()
    whole = []
    for n, snap in enumerate((faulty_snapshot, small)):
        write_textfile(snap, str(tmp_path / f"whole{n}.prom"))
        whole.append((tmp_path / f"whole{n}.prom").read_bytes())
    assert len(whole[0]) > 2 * len(whole[1])  # a half-written big file would differ from both
    path = tmp_path / "live" / "cdc.prom"
    path.parent.mkdir()
    write_textfile(small, str(path))
    seen, reads = _rewritten_while_read(path, [small, faulty_snapshot])  # the faulty one written last
    assert set(seen) <= set(whole), f"a reader saw {len(set(seen) - set(whole))} partial or missing versions in {reads} reads"
    assert set(seen) == set(whole) and reads > 150  # the reads did overlap the rewrites
    assert [p.name for p in path.parent.iterdir()] == ["cdc.prom"]  # no temp file left behind
    proc = subprocess.run([binary("promtool"), "check", "metrics"], input=path.read_bytes(), capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = {f.name for f in text_string_to_metric_families(path.read_text())}
    assert {"cdc_lag_seconds", "cdc_window_findings", "cdc_monitor_last_success_timestamp_seconds"} <= names
