"""Debezium heartbeats (__debezium-heartbeat.<prefix>): recognised per server, their newest
timestamp reported and exported (cdc_last_heartbeat_timestamp_seconds, which the stalled-server
alert reads: deploy/prometheus/tests), and never a finding."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.cli.main import cli
from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import label_dicts, write_capture
from cdc_monitor.generator.records import serialize
from cdc_monitor.sinks.prometheus import MetricsSnapshot, render


def heartbeat_records(path):
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["topic"].startswith("__debezium-heartbeat."):
            out.append(rec)
    return out


@pytest.mark.parametrize("schemas", [True, False])
def test_clean_traffic_with_heartbeats_reports_them_and_nothing_else(scan, tmp_path, schemas):
    capture = tmp_path / "hb.jsonl"
    flag = "--schemas" if schemas else "--no-schemas"
    run = CliRunner().invoke(cli, ["generate", "--flavour", "postgresql", "--events", "300", "--heartbeats", flag,
                                   "--output", str(capture)])
    assert run.exit_code == 0, run.output
    beats = heartbeat_records(capture)
    assert len(beats) > 5 and {b["topic"] for b in beats} == {"__debezium-heartbeat.pgserver1"}
    payloads = [json.loads(b["payload"]) for b in beats]
    newest = max((p["payload"] if schemas else p)["ts_ms"] for p in payloads)
    result = scan([capture])
    assert result.findings_by_rule == {}  # heartbeats are no data: no rule judges them as such
    assert result.summary["heartbeats"] == len(beats)
    assert result.heartbeats == [{"server": "pgserver1", "count": len(beats), "last_ts_ms": newest}]
    assert result.to_json_dict()["heartbeats"] == result.heartbeats
    text = render(MetricsSnapshot.from_result(result, "hb")).decode()
    samples = [(s.labels, s.value) for fam in text_string_to_metric_families(text) for s in fam.samples
               if s.name == "cdc_last_heartbeat_timestamp_seconds"]
    assert samples == [({"server": "pgserver1"}, newest / 1000)]


def test_faults_are_found_exactly_beside_heartbeats(scan, tmp_path):
    traffic = generate("mysql", events=600, seed=31, faults=True, heartbeats=True)
    write_capture(traffic, tmp_path / "f.jsonl")
    assert sum(r.topic.startswith("__debezium-heartbeat.") for r in traffic.records) > 5
    result = scan([tmp_path / "f.jsonl"])

    def key(d: dict) -> tuple:
        return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])

    assert sorted(map(key, result.findings)) == sorted(map(key, label_dicts(traffic)))
    assert result.heartbeats[0]["server"] == traffic.flavour.server
    assert serialize(next(r for r in traffic.records if r.topic.startswith("__debezium")), True)[0] is not None
