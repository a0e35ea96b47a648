"""The Great Expectations gate: suites load or fail clearly; clean passes, faulty fails (exit 1)
naming the failed expectations, with JUnit XML and Data Docs; malformed suites exit 2."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from cdc_monitor.checks.lag import INVALID_SOURCE_TS
from cdc_monitor.errors import UsageError
from cdc_monitor.gate.frames import events_frame
from cdc_monitor.gate.suites import load_suite

ROOT = Path(__file__).resolve().parent.parent
SUITES = sorted((ROOT / "expectations").glob("*.json"))


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def test_shipped_suites_cover_every_frame():
    assert {load_suite(p).frame for p in SUITES} == {"events", "lag", "transactions", "findings"}


@pytest.mark.parametrize("content,message", [
    ("{nope", "not readable JSON"),
    ('{"name": "x"}', "no 'expectations' list"),
    ('{"expectations": [{"type": "expect_table_row_count_to_be_between"}], "meta": {"cdc_monitor": {"frame": "rows"}}}',
     "frame is 'rows'"),
    ('{"expectations": [{"kwargs": {}}], "meta": {"cdc_monitor": {"frame": "lag"}}}', "needs a 'type'"),
    ('{"expectations": [{"type": "expect_column_quantile_values_to_be_between", "kwargs": {}}],'
     ' "meta": {"cdc_monitor": {"frame": "lag"}}}', "crashes"),
])
def test_malformed_suites_are_usage_errors(tmp_path, content, message):
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        load_suite(path)


def test_unknown_expectation_exits_2_before_scanning(tmp_path):
    suite = tmp_path / "bad.json"
    suite.write_text(json.dumps({"name": "bad", "meta": {"cdc_monitor": {"frame": "lag"}},
                                 "expectations": [{"type": "expect_lag_to_be_small", "kwargs": {}}]}))
    capture = tmp_path / "c.jsonl"
    capture.write_text("{}\n")  # not empty: an empty input is refused first
    proc = run_cli("gate", str(capture), "--suite", str(suite))
    assert proc.returncode == 2, proc.stderr
    assert "expect_lag_to_be_small not found" in proc.stderr and "starting Spark" not in proc.stderr


def test_missing_suite_exits_2(tmp_path):
    proc = run_cli("gate", str(tmp_path), "--suite", str(tmp_path / "none.json"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def gate_locally(spark, capture: Path):
    """The gate in-process in the session's local Spark: every shipped suite over one capture."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.gate.evaluate import run_gate
    from cdc_monitor.gate.gx_runner import GateRunner
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.capture import read_capture

    suites = [load_suite(p) for p in SUITES]
    runner = GateRunner()
    runner.prepare(suites)
    scanned = run_scan(read_capture(spark, [str(capture)]), ScanConfig(), keep_events=True)
    try:
        return run_gate(scanned, suites, runner)
    finally:
        scanned.release()


def test_clean_capture_passes_every_shipped_suite(spark, tmp_path):
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture

    write_capture(generate("sqlserver", events=300, seed=21), tmp_path / "clean.jsonl")
    result = gate_locally(spark, tmp_path / "clean.jsonl")
    assert not result.failed, [(o.title, o.observed()) for o in result.failed]
    assert len(result.outcomes) == sum(len(json.loads(p.read_text())["expectations"]) for p in SUITES)
    events = [o for o in result.outcomes if o.frame == "events"]
    assert events and all(o.result.get("element_count", 0) > 300 for o in events)  # GX saw the real rows


def test_faulty_capture_fails_the_gate_with_junit_and_data_docs(spark, tmp_path):
    """The gate command in-process (the session's Spark): exit 1, every failure with what was
    observed, JUnit XML and Data Docs."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture

    traffic = generate("mysql", events=600, seed=5, faults=True)
    write_capture(traffic, tmp_path / "faulty.jsonl")
    injected_ops = collections.Counter(lab.rec.value["op"] for lab in traffic.labels if lab.rule == "invalid_op")
    junit, docs = tmp_path / "out" / "junit.xml", tmp_path / "docs"
    args = ["gate", str(tmp_path / "faulty.jsonl"), "--suite", str(ROOT / "expectations"),
            "--junit", str(junit), "--data-docs", str(docs)]
    proc = CliRunner().invoke(cli, args)
    assert proc.exit_code == 1, proc.output[-3000:]
    failed_lines = [line for line in proc.stdout.splitlines() if line.strip().startswith("FAIL [")]
    observed = [line for line in proc.stdout.splitlines() if line.strip().startswith("observed:")]
    assert failed_lines and len(observed) == len(failed_lines)  # every failure says what was seen
    # the faults the generator injected must show up as these failed expectations
    for expected in ("[cdc_transactions] expect_column_values_to_be_between(column=missing_end",
                     "[cdc_transactions] expect_column_values_to_be_between(column=count_mismatch",
                     "[cdc_events] expect_column_values_to_be_in_set(column=op",
                     "[cdc_lag] expect_column_values_to_be_between(column=negative",
                     "[cdc_findings] expect_column_values_to_not_be_in_set(column=severity"):
        assert any(expected in line for line in failed_lines), (expected, proc.stdout)
    allowed = next(e["kwargs"]["value_set"] for e in json.loads((ROOT / "expectations" / "events.json").read_text())
                   ["expectations"] if e["kwargs"].get("column") == "op" and "value_set" in e["kwargs"])
    outside = {op: n for op, n in injected_ops.items() if op not in allowed}
    assert outside
    for op, n in outside.items():  # observed values are shown: the injected ops outside the suite's set
        assert f"'{op}' x{n}" in proc.stdout, (op, n)
    tree = ET.parse(junit)
    cases = tree.findall(".//testcase")
    assert len(cases) == sum(len(json.loads(p.read_text())["expectations"]) for p in SUITES)
    failures = tree.findall(".//testcase/failure")
    assert len(failures) == len(failed_lines) == int(tree.getroot().get("failures"))
    assert (docs / "index.html").exists()
    assert len(list((docs / "validations").rglob("*.html"))) == len(SUITES)


@pytest.mark.parametrize("expectation,message", [
    ({"type": "expect_column_values_to_be_between", "kwargs": {"max_value": 1}}, "expectation #2"),
    ({"type": "expect_nothing_at_all", "kwargs": {}}, "expect_nothing_at_all"),
])
def test_an_expectation_gx_cannot_build_is_never_dropped_silently(tmp_path, expectation, message):
    from cdc_monitor.gate.gx_runner import GateRunner

    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "meta": {"cdc_monitor": {"frame": "lag"}}, "expectations": [
        {"type": "expect_table_row_count_to_be_between", "kwargs": {"min_value": 1}}, expectation]}))
    with pytest.raises(UsageError, match=message):
        GateRunner().prepare([load_suite(path)])


def test_events_frame_judges_source_times_as_invalid_source_ts_does(spark, tmp_path):
    """events.source_ts_valid is invalid_source_ts's judgement: false on exactly the records the rule
    finds (a snapshot read's source.ts_ms too: Debezium's snapshot records carry one), null where the
    rule does not judge (a truncate, a message op), so the suite's expectation fails on those records only."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.gate.evaluate import run_gate
    from cdc_monitor.gate.gx_runner import GateRunner
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.generator.records import drop_fine_times
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.capture import read_capture

    traffic = generate("mysql", events=300, seed=21)
    data = [r for r in traffic.records if isinstance(r.value, dict) and isinstance(r.value.get("source"), dict)]
    snapshot_read = next(r for r in data if r.value["op"] == "r")
    changes = [r for r in data if r.value["op"] in ("c", "u")]
    for rec, op in ((snapshot_read, "r"), (changes[0], "c"), (changes[1], "t"), (changes[2], "m")):
        rec.value["op"] = op
        rec.value["source"]["ts_ms"] = 0
        drop_fine_times(rec.value["source"])
    write_capture(traffic, tmp_path / "times.jsonl")
    suite = load_suite(ROOT / "expectations" / "events.json")
    runner = GateRunner()
    runner.prepare([suite])
    scanned = run_scan(read_capture(spark, [str(tmp_path / "times.jsonl")]), ScanConfig(), keep_events=True)
    try:
        frame = events_frame(scanned.events_frame)
        zeroed = frame.where("source_ts_ms = 0").select("op", "source_ts_valid").collect()
        assert sorted(r["op"] for r in zeroed) == ["c", "m", "r", "t"]  # the four, each a data event
        assert {r["op"]: r["source_ts_valid"] for r in zeroed} == {"r": False, "c": False, "t": None, "m": None}
        found = sum(int(c["count"]) for c in scanned.finding_counts if c["rule"] == INVALID_SOURCE_TS.name)
        assert found == frame.where(~F.col("source_ts_valid")).count() == 2
        outcome = next(o for o in run_gate(scanned, [suite], runner).outcomes
                       if o.kwargs.get("column") == "source_ts_valid")
        assert not outcome.success and outcome.result["unexpected_count"] == found
    finally:
        scanned.release()
