"""Debezium heartbeats (__debezium-heartbeat.<prefix>): recognised per server, with and without
embedded schemas, their newest timestamp reported and exported (cdc_last_heartbeat_timestamp_seconds,
which the stalled-server alert reads: deploy/prometheus/tests), and never a finding (faulty
traffic with heartbeats stays exact: tests/test_accuracy.py, tests/test_watch*.py)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.cli.main import cli
from cdc_monitor.sinks.prometheus import MetricsSnapshot, render


def newest_heartbeat(path, schemas: bool) -> tuple[int, int]:
    """(heartbeat records, newest ts_ms) of a capture, read from its lines."""
    values = [json.loads(rec["payload"]) for rec in map(json.loads, path.read_text().splitlines())
              if rec["topic"].startswith("__debezium-heartbeat.")]
    return len(values), max((v["payload"] if schemas else v)["ts_ms"] for v in values)


def test_heartbeats_are_reported_per_server_and_nothing_else(scan, tmp_path):
    expected = []
    for flavour, server, schemas in (("postgresql", "pgserver1", True), ("mysql", "mysql_server_1", False)):
        capture = tmp_path / f"{flavour}.jsonl"
        run = CliRunner().invoke(cli, ["generate", "--flavour", flavour, "--events", "300", "--heartbeats",
                                       "--schemas" if schemas else "--no-schemas", "--output", str(capture)])
        assert run.exit_code == 0, run.output
        count, newest = newest_heartbeat(capture, schemas)
        assert count > 5
        expected.append({"server": server, "count": count, "last_ts_ms": newest})
    result = scan([tmp_path / "mysql.jsonl", tmp_path / "postgresql.jsonl"])
    assert result.findings_by_rule == {}  # clean traffic: heartbeats are judged as no data event
    assert result.summary["heartbeats"] == sum(e["count"] for e in expected)
    assert result.heartbeats == sorted(expected, key=lambda e: e["server"])
    assert result.to_json_dict()["heartbeats"] == result.heartbeats
    text = render(MetricsSnapshot.from_outcome(result, "hb")).decode()
    samples = {s.labels["server"]: s.value for fam in text_string_to_metric_families(text) for s in fam.samples
               if s.name == "cdc_last_heartbeat_timestamp_seconds"}
    assert samples == {e["server"]: e["last_ts_ms"] / 1000 for e in expected}
