"""docs/ is what users rely on: each page names everything the code has (metrics, JSON report
fields, settings and environment variables), so a new one cannot ship undocumented."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from cdc_monitor.config import HISTORY_SETTINGS, WATCH_SETTINGS, ScanConfig
from cdc_monitor.engine.census import KINDS
from cdc_monitor.pipeline import ScanResult

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_exported_metric_is_documented():
    source = (ROOT / "cdc_monitor" / "sinks" / "prometheus.py").read_text()
    names = set(re.findall(r'"(cdc_[a-z_]+)"', source))
    assert len(names) >= 15
    page = (DOCS / "metrics.md").read_text()
    missing = [n for n in sorted(names) if f"`{n}" not in page]
    assert not missing, missing


def test_every_recorded_series_is_documented():
    rules = (ROOT / "deploy" / "prometheus" / "cdc-anomalies.rules.yml").read_text()
    names = set(re.findall(r"record: (cdc:[a-z0-9_:]+)", rules))
    assert len(names) >= 10
    page = (DOCS / "metrics.md").read_text()
    missing = [n for n in sorted(names) if f"`{n}`" not in page]
    assert not missing, missing


def test_every_json_report_field_is_documented():
    report = ScanResult(window={}, summary={}, events_by_table=[]).to_json_dict()
    page = (DOCS / "report.md").read_text()
    summary = ["records", *KINDS.values(), "invalid_records", "unreadable_lines", "findings_by_check", "findings_by_severity"]
    missing = [k for k in [*report, *summary] if f"`{k}`" not in page]
    assert not missing, missing


def test_every_setting_and_environment_variable_is_documented():
    page = (DOCS / "configuration.md").read_text()
    internal = {"transaction_topic_regex", "table_lag_threshold_ms", "spark_conf", "kafka_conf", "lag_threshold_ms",
                "stall_threshold_ms"}  # (documented as lag_threshold and stall_threshold: durations)
    internal |= {"spark_remote"}  # (documented as [spark] remote)
    internal |= set(HISTORY_SETTINGS.values()) - {"history"}  # (documented by their [history] keys, below)
    internal |= {"watch_max_keys"}  # (documented as [watch] max_keys, below)
    settings = [f.name for f in fields(ScanConfig) if f.name not in internal]
    missing = [s for s in settings if f"{s} =" not in page and f"[{s}]" not in page]
    assert not missing, missing
    history = page[page.index("[history]"):]
    assert not [k for k in HISTORY_SETTINGS if f"\n{k} =" not in history], "a [history] setting is not documented"
    watch = page[page.index("[watch]"):]
    assert not [k for k in WATCH_SETTINGS if f"\n{k} =" not in watch], "a [watch] setting is not documented"
    code = "\n".join(p.read_text() for p in (ROOT / "cdc_monitor").rglob("*.py"))
    variables = set(re.findall(r"CDC_MONITOR_[A-Z_]*[A-Z]", code)) - {"CDC_MONITOR_JVM_LOG"}  # set for the driver's own use
    undocumented = [v for v in sorted(variables) if v not in page and not v.startswith("CDC_MONITOR_KAFKA_")]
    assert not undocumented, undocumented


def test_the_readme_links_every_page():
    readme = (ROOT / "README.md").read_text()
    for page in DOCS.glob("*.md"):
        assert f"docs/{page.name}" in readme, page.name


def test_every_relative_link_of_the_readme_and_docs_exists():
    pages = [ROOT / "README.md", *DOCS.glob("*.md")]
    broken = [f"{page.name}: {target}" for page in pages
              for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text())
              if not (page.parent / target).exists()]
    assert not broken, broken
