"""On a real Spark standalone cluster (the session's master and two workers; executors in JVMs
of their own whose Python has no cdc-monitor installed): a scan from Kafka, a scan of a capture
with its metrics, and the gate give what local mode gives. (``watch`` moves to the cluster on its
restart in tests/test_watch.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.config import ScanConfig
from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import label_dicts, write_capture
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.pipeline import run_scan
from cdc_monitor.sinks.prometheus import MetricsSnapshot, render
from cdc_monitor.sources.kafka.options import KafkaOptions

# topic prefixes no other test produces to the session's broker
FLAVOURS = (("mysql", 260, 21), ("yugabyte", 260, 22))
TOPICS = r"(mysql_server_1|ybserver1)\..*"
SUITES = sorted(str(p) for p in (Path(__file__).resolve().parents[1] / "expectations").glob("*.json"))


@pytest.fixture(scope="module")
def faulty(kafka_broker, tmp_path_factory):
    """A faulty capture of two flavours, also produced to the broker (offsets are the broker's)."""
    root = tmp_path_factory.mktemp("cluster-capture")
    opts = KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker})
    labels, paths = [], []
    for flavour, events, seed in FLAVOURS:
        traffic = generate(flavour, events=events, seed=seed, faults=True, partitions=2)
        produce_traffic(traffic, opts)
        paths.append(str(root / f"{flavour}.jsonl"))
        write_capture(traffic, paths[-1])
        labels += label_dicts(traffic)
    return {"paths": paths, "labels": labels}


def cli(*args: str, timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def without_timings(report: dict) -> dict:
    report.pop("timings_seconds", None)
    return report


def window_metrics(text: str) -> dict:
    """The data's samples (not the run's own: durations, last success time)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text)
            for s in fam.samples if not s.name.startswith("cdc_monitor_")}


def test_executors_python_has_no_cdc_monitor(spark_cluster, tmp_path):
    python = str(spark_cluster["python"])
    assert subprocess.run([python, "-c", "import confluent_kafka, pyarrow"], cwd=tmp_path).returncode == 0
    missing = subprocess.run([python, "-c", "import cdc_monitor"], capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode != 0 and "No module named 'cdc_monitor'" in missing.stderr


def test_kafka_scan_on_the_cluster_equals_local(spark_cluster, faulty, kafka_broker, spark):
    """The Kafka reader runs in the executors' Python: this works only with the shipped package."""
    from cdc_monitor.sources.kafka.source import read_kafka

    options = {"kafka.bootstrap.servers": kafka_broker, "subscribePattern": TOPICS}
    local = without_timings(run_scan(read_kafka(spark, options), ScanConfig()).to_json_dict())
    proc = cli("scan", "--bootstrap-servers", kafka_broker, "--topics", TOPICS, "--output", "json", "--quiet",
               *spark_cluster["args"])
    assert proc.returncode == 1, proc.stderr[-3000:]
    remote = without_timings(json.loads(proc.stdout))
    assert remote == local
    assert {d["rule"] for d in faulty["labels"]} <= {f["rule"] for f in remote["findings"]}


def test_capture_scan_and_gate_on_the_cluster_equal_local(spark_cluster, faulty, spark, tmp_path):
    from cdc_monitor.gate.run import run_gate
    from cdc_monitor.gate.runner import GateRunner
    from cdc_monitor.gate.suites import load_suites
    from cdc_monitor.sources.capture import read_capture

    scanned = run_scan(read_capture(spark, faulty["paths"]), ScanConfig(), keep_events=True)
    local = without_timings(scanned.to_json_dict())
    local_metrics = window_metrics(render(MetricsSnapshot.from_result(scanned, "cdc-monitor")).decode())
    suites = load_suites(SUITES)
    runner = GateRunner(None)
    runner.prepare(suites)
    try:
        local_gate = without_timings(run_gate(scanned, suites, runner).to_json_dict())
    finally:
        scanned.release()

    report, prom = tmp_path / "scan.json", tmp_path / "cdc.prom"
    proc = cli("scan", *faulty["paths"], "--output", "json", "--report-file", str(report), "--textfile", str(prom),
               "--quiet", *spark_cluster["args"])
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert without_timings(json.loads(report.read_text())) == local
    assert window_metrics(prom.read_text()) == local_metrics
    assert Counter(name for name, _ in local_metrics)["cdc_window_findings"] > 5

    gate = tmp_path / "gate.json"
    proc = cli("gate", *faulty["paths"], *[a for s in SUITES for a in ("--suite", s)], "--output", "json",
               "--report-file", str(gate), "--quiet", *spark_cluster["args"])
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert without_timings(json.loads(gate.read_text())) == local_gate
    assert local_gate["gate"] == "failed"
