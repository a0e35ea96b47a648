"""OpenLineage events of scan, gate and reconcile (docs/openlineage.md): every event validates
against the spec's JSON Schemas for the version the client declares (vendored in
tests/openlineage_schemas), datasets are named as the naming spec names them, the three transports
deliver, and a failing endpoint changes nothing but a warning and a metric (exit 2 only with
--openlineage-required). Events are built from hand-made outcomes; one test runs a real scan."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from openlineage.client.serde import Serde

from cdc_monitor.checks.lag import INVALID_SOURCE_TS, LAG_SPIKE
from cdc_monitor.checks.ordering import POSITION_REGRESSION
from cdc_monitor.checks.registry_schemas import UNDECODABLE_AVRO
from cdc_monitor.checks.transactions import COUNT_MISMATCH, MISSING_END
from cdc_monitor.errors import InputError, UsageError
from cdc_monitor.lineage.events import RunInfo, fail_events, gate_events, reconcile_events, scan_events
from cdc_monitor.lineage.settings import CLIENT, lineage_settings
from cdc_monitor.pipeline import ScanResult
from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile
from cdc_monitor.verbs import gate as gate_verb
from cdc_monitor.verbs import scan as scan_verb
from cdc_monitor.vocabulary import ReconcileState, Severity
from tests.support.openlineage import recording_server, registry, validate

BROKERS = "broker-1.example.com:9093,broker-2.example.com:9093"
ORDERS, CUSTOMERS, TXN = "pg1.public.orders", "pg1.public.customers", "pg1.transaction"


@pytest.fixture(scope="module")
def schemas():
    return registry()


def _count(rule, table, topics, n=1):
    return {"check": rule.check, "rule": rule.name, "severity": rule.severity, "server": "pg1", "table": table,
            "count": n, "topics": topics}


def scan_result(inputs=None) -> ScanResult:
    """A window of three topics: position regressions (error) and a lag spike (warning) on orders,
    a missing END (error) on the transaction topic, nothing on customers."""
    counts = [_count(POSITION_REGRESSION, "public.orders", [ORDERS], 2), _count(LAG_SPIKE, "public.orders", [ORDERS]),
              _count(MISSING_END, None, [TXN])]
    by_rule: dict[str, dict[str, int]] = {}
    for c in counts:
        by_rule.setdefault(c["severity"], {})[c["rule"]] = c["count"]
    parts = [{"topic": t, "partition": 0, "first_offset": 10, "last_offset": 10 + n - 1, "records": n}
             for t, n in ((CUSTOMERS, 40), (ORDERS, 60), (TXN, 20))]
    return ScanResult(
        window={"start_ms": 1_767_225_600_000, "end_ms": 1_767_225_900_000, "partitions": parts},
        summary={"records": 120}, events_by_table=[{"server": "pg1", "table": "public.orders", "op": "c", "count": 50}],
        transactions={"by_server": {"pg1": {"complete": 9}}}, findings_by_rule=by_rule, finding_counts=counts,
        topic_counts=[
            {"topic": CUSTOMERS, "records": 40, "tombstones": 3, "transaction_markers": 0, "data_events": 37,
             "op_null": 0, "transaction_null": 2},
            {"topic": ORDERS, "records": 60, "tombstones": 5, "transaction_markers": 0, "data_events": 55,
             "op_null": 1, "transaction_null": 0},
            {"topic": TXN, "records": 20, "tombstones": 0, "transaction_markers": 20, "data_events": 0,
             "op_null": 0, "transaction_null": 0}],
        inputs=inputs or {"kind": "kafka", "bootstrap_servers": BROKERS}, finished_at=1_767_226_000.0)


def scan_outcome(fail_on: str = Severity.ERROR.value, inputs=None) -> scan_verb.Outcome:
    result = scan_result(inputs)
    return scan_verb.Outcome(result, fail_on, result.worst_count(fail_on), 3.0)


def info(verb="scan", **kw) -> RunInfo:
    return RunInfo(run_id="01890f0e-8b7a-7c3e-9f6a-0a1b2c3d4e5f", verb=verb, started_at=1_767_225_990.0, **kw)


def as_json(events) -> list[dict]:
    return [Serde.to_dict(e) for e in events]


def assertions(event: dict, name: str) -> dict[str, dict]:
    ds = next(d for d in event["inputs"] if d["name"] == name)
    return {a["assertion"] + (f"@{a['column']}" if a.get("column") else ""): a
            for a in ds["inputFacets"]["dataQualityAssertions"]["assertions"]}


def test_the_vendored_schemas_are_the_versions_the_client_declares(schemas):
    """What the client writes in schemaURL and each facet's _schemaURL is what tests/openlineage_schemas holds."""
    from openlineage.client.event_v2 import RunEvent
    from openlineage.client.facet_v2 import (
        data_quality_assertions_dataset,
        data_quality_metrics_input_dataset,
        error_message_run,
        job_type_job,
        nominal_time_run,
        processing_engine_run,
        tags_run,
    )

    declared = [RunEvent._get_schema(), data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet._get_schema(),
                data_quality_metrics_input_dataset.DataQualityMetricsInputDatasetFacet._get_schema(),
                error_message_run.ErrorMessageRunFacet._get_schema(), job_type_job.JobTypeJobFacet._get_schema(),
                nominal_time_run.NominalTimeRunFacet._get_schema(),
                processing_engine_run.ProcessingEngineRunFacet._get_schema(), tags_run.TagsRunFacet._get_schema()]
    for url in declared:
        base = url.split("#", 1)[0]
        assert schemas.contents(base)["$id"] == base
        assert schemas.resolver().lookup(url).contents, url
    assert (Path(__file__).parent / "openlineage_schemas" / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_scan_events_validate_and_carry_each_topics_assertions_and_metrics(schemas):
    events = as_json(scan_events(info(reports={"html": "file:///tmp/report.html"}), scan_outcome(), 1_767_226_000.5))
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    for e in events:
        validate(e, schemas)
    start, done = events
    assert start["run"]["runId"] == done["run"]["runId"] and start["eventTime"] == "2026-01-01T00:06:30.000Z"
    assert done["job"] == start["job"] and done["job"]["namespace"] == "cdc-monitor" and done["job"]["name"] == "scan.pg1"
    assert [(d["namespace"], d["name"]) for d in done["inputs"]] == [
        ("kafka://broker-1.example.com:9093", t) for t in (CUSTOMERS, ORDERS, TXN)]

    orders, customers, txn = assertions(done, ORDERS), assertions(done, CUSTOMERS), assertions(done, TXN)
    assert orders[POSITION_REGRESSION.name]["success"] is False
    assert orders[LAG_SPIKE.name]["success"] is True  # a warning: below --fail-on error
    assert orders[LAG_SPIKE.name]["severity"] == Severity.WARNING
    assert orders[f"{INVALID_SOURCE_TS.name}@source.ts_ms"]["success"] is True
    assert all(a["success"] for a in customers.values())
    assert txn[MISSING_END.name]["success"] is False
    assert LAG_SPIKE.name not in txn and MISSING_END.name in customers  # transaction rules: the window holds markers
    assert UNDECODABLE_AVRO.name not in orders  # no Schema Registry
    assert f"{COUNT_MISMATCH.name}@event_count" in txn

    metrics = next(d for d in done["inputs"] if d["name"] == ORDERS)["inputFacets"]["dataQualityMetrics"]
    assert metrics["rowCount"] == 60
    assert metrics["columnMetrics"] == {"value": {"nullCount": 5}, "op": {"nullCount": 1}, "transaction": {"nullCount": 0}}
    txn_metrics = next(d for d in done["inputs"] if d["name"] == TXN)["inputFacets"]["dataQualityMetrics"]
    assert txn_metrics["columnMetrics"] == {"value": {"nullCount": 0}}

    run = done["run"]["facets"]
    assert run["nominalTime"] == {**run["nominalTime"], "nominalStartTime": "2026-01-01T00:00:00.000Z",
                                  "nominalEndTime": "2026-01-01T00:05:00.000Z"}
    assert run["cdcMonitor_window"]["partitions"][1] == {"topic": ORDERS, "partition": 0, "firstOffset": 10,
                                                          "lastOffset": 69, "records": 60}
    assert run["cdcMonitor_reports"]["reports"] == [{"kind": "html", "url": "file:///tmp/report.html"}]
    assert run["cdcMonitor_verdict"] == {**run["cdcMonitor_verdict"], "verb": "scan", "exitCode": 1, "failOn": "error"}


def test_fail_on_decides_success(schemas):
    done = as_json(scan_events(info(), scan_outcome(Severity.WARNING.value), 1_767_226_001.0))[1]
    assert assertions(done, ORDERS)[LAG_SPIKE.name]["success"] is False
    never = as_json(scan_events(info(), scan_outcome("never"), 1_767_226_001.0))[1]
    assert all(a["success"] for ds in never["inputs"] for a in ds["inputFacets"]["dataQualityAssertions"]["assertions"])


def test_a_capture_inputs_namespace(schemas, tmp_path):
    """kcat captures name no broker: file:// and the capture's path, or the configured namespace."""
    inputs = {"kind": "capture", "files": [str(tmp_path / "a" / "x.jsonl"), str(tmp_path / "a" / "y.jsonl")]}
    done = as_json(scan_events(info(), scan_outcome(inputs=inputs), 1_767_226_001.0))[1]
    assert {d["namespace"] for d in done["inputs"]} == {(tmp_path / "a").as_uri()}
    joined = as_json(scan_events(info(capture_namespace="kafka://broker:9092"), scan_outcome(inputs=inputs), 1.0e9))[1]
    assert {d["namespace"] for d in joined["inputs"]} == {"kafka://broker:9092"}
    assert "duplicate_capture_record" in assertions(joined, ORDERS)  # a capture's own rule, judged on captures only


def test_dataset_names_are_the_naming_specs():
    """The names OpenLineage's naming spec gives (as its client's naming module implements it) for
    the same broker and topic, and the same PostgreSQL table."""
    from openlineage.client.naming.dataset import Kafka, Postgres

    from cdc_monitor.lineage.naming import jdbc_dataset, kafka_namespace

    spec = Kafka(bootstrap_server_host="broker-1.example.com", port="9093", topic=ORDERS)
    events = scan_events(info(), scan_outcome(), 1_767_226_000.0)
    assert (events[1].inputs[1].namespace, events[1].inputs[1].name) == (spec.get_namespace(), spec.get_name())
    assert kafka_namespace("SASL_SSL://broker-1.example.com:9093") == spec.get_namespace()
    assert kafka_namespace("broker-1.example.com") == Kafka("broker-1.example.com", "9092", ORDERS).get_namespace()
    table = Postgres(host="db.example.com", port="5433", database="inventory", schema="public", table="orders")
    assert jdbc_dataset("jdbc:postgresql://db.example.com:5433/inventory?ssl=true", "postgresql", "public.orders") == (
        table.get_namespace(), table.get_name())
    assert jdbc_dataset("jdbc:postgresql://db.example.com/inventory", "postgresql", "public.orders")[0] == \
        "postgres://db.example.com:5432"


def reconcile_outcome() -> ReconcileOutcome:
    rows = {ReconcileState.MATCH: 97, ReconcileState.MISSING: 1, ReconcileState.EXTRA: 0, ReconcileState.DIFFERS: 2,
            ReconcileState.IN_FLIGHT: 0}
    table = TableReconcile(table="public.orders", source_rows=100, topic_rows=99, rows=rows,
                           columns_differing={"price": 2}, unavailable_values=0, source_checksum="a", topic_checksum="b",
                           samples={}, key_columns=("id",), topics=(ORDERS,))
    return ReconcileOutcome(tables=[table], source={"url": "jdbc:postgresql://db.example.com:5433/inventory",
                                                    "dialect": "postgresql"},
                            inputs={"kind": "kafka", "bootstrap_servers": BROKERS}, records=300)


def test_reconcile_events_add_the_source_table_and_its_counts(schemas):
    events = as_json(reconcile_events(info("reconcile"), reconcile_outcome(), 1_767_226_000.0))
    for e in events:
        validate(e, schemas)
    done = events[1]
    assert done["job"]["name"] == "reconcile.pg1"
    assert [(d["namespace"], d["name"]) for d in done["inputs"]] == [
        ("kafka://broker-1.example.com:9093", ORDERS), ("postgres://db.example.com:5433", "inventory.public.orders")]
    table = done["inputs"][1]["inputFacets"]
    assert table["dataQualityMetrics"]["rowCount"] == 100
    assert table["cdcMonitor_reconcile"]["rows"] == {"match": 97, "missing": 1, "extra": 0, "differs": 2, "in_flight": 0}
    got = assertions(done, "inventory.public.orders")
    assert (got["missing"]["success"], got["extra"]["success"], got["differs"]["success"]) == (False, True, False)
    assert got["differs@price"]["actual"] == "2"
    assert done["run"]["facets"]["cdcMonitor_verdict"]["exitCode"] == 1


def test_gate_and_fail_events_validate(schemas):
    from cdc_monitor.gate.evaluate import GateResult

    scanned = scan_outcome()
    gate = as_json(gate_events(info("gate"), gate_verb.Outcome(GateResult(), 5.0, scanned), 1_767_226_000.0))
    failed = as_json(fail_events(info("reconcile", job="nightly"), InputError("no records read from x: check it"), 2e9))
    for e in (*gate, *failed):
        validate(e, schemas)
    assert gate[1]["job"]["name"] == "gate.pg1" and len(gate[1]["inputs"]) == 3
    assert [e["eventType"] for e in failed] == ["START", "FAIL"] and failed[1]["job"]["name"] == "nightly"
    assert failed[1]["run"]["facets"]["errorMessage"]["message"] == "no records read from x: check it"
    assert failed[1]["run"]["facets"]["cdcMonitor_verdict"]["exitCode"] == 2


def test_settings_flags_config_and_environment(monkeypatch, tmp_path):
    from cdc_monitor.config import load_config

    assert lineage_settings({}, None, env={}) is None
    assert lineage_settings({}, None, env={"OPENLINEAGE_URL": "http://m:5000"}).target == CLIENT
    assert lineage_settings({}, "console", env={"OPENLINEAGE_DISABLED": "true"}) is None  # as the client honours it
    config = tmp_path / "c.toml"
    config.write_text('[openlineage]\nurl = "console"\nnamespace = "team"\njob = "orders-quality"\nrequired = true\n')
    s = lineage_settings(load_config(str(config), env={}).openlineage, "file:out.jsonl", env={})
    assert (s.target, s.file_path, s.namespace, s.job, s.required) == ("file:out.jsonl", "out.jsonl", "team", "orders-quality", True)
    for bad in ("marquez:5000", "file:", "ftp://x"):
        with pytest.raises(UsageError, match="--openlineage"):
            lineage_settings({}, bad, env={})
    with pytest.raises(UsageError, match="--openlineage-required"):
        lineage_settings({}, None, required=True, env={})
    config.write_text('[openlineage]\nurl = "console"\ntransport = "http"\n')
    with pytest.raises(UsageError, match=r"unknown \[openlineage\] setting\(s\) transport"):
        load_config(str(config), env={})


def test_the_documented_example_is_a_valid_event(schemas):
    """docs/openlineage.md's example is what the code wrote (reformatted only): it still validates."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "openlineage.md").read_text()
    example = json.loads(page.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert example["eventType"] == "COMPLETE" and example["inputs"][0]["namespace"] == "kafka://broker:9092"
    validate(example, schemas)


def _run(target, verb="scan", required=False, **table):
    from cdc_monitor.lineage.run import LineageRun

    warnings: list[str] = []
    return LineageRun(lineage_settings(table, target, required, env={}), verb, warnings.append), warnings


def test_http_transport_posts_each_event_to_the_endpoint(schemas, monkeypatch):
    monkeypatch.setenv("OPENLINEAGE_API_KEY", "secret-key")
    with recording_server() as (url, recorded):
        run, warnings = _run(url)
        run.complete(scan_outcome(), html="/tmp/r.html")
        other, _ = _run(url, verb="reconcile", endpoint="custom/lineage")
        other.complete(reconcile_outcome())
    assert warnings == [] and run.metrics() == {"delivered": 2, "failed": 0}
    assert [r["path"] for r in recorded.requests] == ["/api/v1/lineage"] * 2 + ["/custom/lineage"] * 2
    for r in recorded.requests:
        assert r["headers"]["Content-Type"] == "application/json"
        assert r["headers"]["Authorization"] == "Bearer secret-key"
        validate(r["body"], schemas)
    bodies = [r["body"] for r in recorded.requests[:2]]
    assert [b["eventType"] for b in bodies] == ["START", "COMPLETE"] and bodies[0]["run"]["runId"] == bodies[1]["run"]["runId"]
    assert bodies[1]["run"]["facets"]["cdcMonitor_reports"]["reports"][0]["url"] == "file:///tmp/r.html"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_is_one_warning_and_a_metric():
    run, warnings = _run(f"http://127.0.0.1:{_closed_port()}")
    run.complete(scan_outcome())
    assert run.metrics() == {"delivered": 0, "failed": 2}
    assert len(warnings) == 1 and "2 of 2 OpenLineage event(s) not delivered" in warnings[0]
    run.require("1 finding(s)")  # not required: the run's result stands
    with recording_server(status=500) as (url, recorded):
        refused, refusals = _run(url, required=True)
        refused.complete(scan_outcome())
    assert refused.metrics() == {"delivered": 0, "failed": 2} and refusals == [] and len(recorded.requests) == 3  # 2 retries
    with pytest.raises(InputError, match="cannot deliver OpenLineage events"):
        refused.require("1 finding(s)")


def test_console_transport_writes_each_event_to_stderr(schemas, capsys):
    run, _ = _run("console")
    run.complete(scan_outcome())
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 2
    for line in lines:
        validate(json.loads(line), schemas)


def _cli(args, monkeypatch, outcome=None, error=None):
    """The CLI with the scan verb stubbed (its outcome, or its error): flags to exit code, no Spark."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    def run(settings, log, live=False):
        if error is not None:
            raise error
        return outcome

    monkeypatch.setattr(scan_verb, "run", run)
    return CliRunner().invoke(cli, ["scan", "capture.jsonl", *args])


def test_cli_a_failing_endpoint_changes_nothing_but_a_warning_unless_required(monkeypatch, tmp_path):
    down = f"http://127.0.0.1:{_closed_port()}"
    common = ["--output", "json", "--report-file", str(tmp_path / "r.json"), "--textfile", str(tmp_path / "m.prom"), "--quiet"]
    lenient = _cli([*common, "--openlineage", down], monkeypatch, scan_outcome())
    assert lenient.exit_code == 1, lenient.output  # the scan's own code
    [warned] = lenient.stderr.splitlines()  # nothing else on stderr: no log lines of the client's or urllib3's
    assert warned.startswith("cdc-monitor: warning: 2 of 2 OpenLineage event(s) not delivered") and "Connection refused" in warned
    assert 'cdc_monitor_openlineage_events{job="cdc-monitor",result="failed"} 2.0' in (tmp_path / "m.prom").read_text()
    strict = _cli([*common, "--openlineage", down, "--openlineage-required"], monkeypatch, scan_outcome())
    assert strict.exit_code == 2
    assert strict.stderr.strip().splitlines()[-1].startswith("cdc-monitor: error: cannot deliver OpenLineage events")
    assert (tmp_path / "r.json").is_file() and "result=\"failed\"} 2.0" in (tmp_path / "m.prom").read_text()


def test_cli_a_run_that_cannot_run_sends_start_and_fail(schemas, monkeypatch, tmp_path):
    events = tmp_path / "events.jsonl"
    run = _cli(["--openlineage", f"file:{events}"], monkeypatch, error=InputError("no records read from capture.jsonl"))
    assert run.exit_code == 2
    sent = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["eventType"] for e in sent] == ["START", "FAIL"] and sent[1]["job"]["name"] == "scan"
    for e in sent:
        validate(e, schemas)


def test_a_real_scan_emits_events_that_validate_and_name_its_topics(spark, schemas, tmp_path):
    """The one end-to-end run: the seed capture (real connectors' events, several servers) scanned
    through the CLI in this process (the suite's Spark session), events to a file."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli
    from tests.support.captures import seed_capture

    capture, events, report = seed_capture(tmp_path / "seeds.jsonl"), tmp_path / "events.jsonl", tmp_path / "report.html"
    config = tmp_path / "c.toml"
    config.write_text('[openlineage]\ncapture_namespace = "kafka://broker.example.com:9092"\n')
    run = CliRunner().invoke(cli, ["scan", str(capture), "--config", str(config), "--output", "html", "--report-file",
                                   str(report), "--openlineage", f"file:{events}", "--quiet"])
    assert run.exit_code == 1, run.output
    sent = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["eventType"] for e in sent] == ["START", "COMPLETE"]
    for e in sent:
        validate(e, schemas)
    topics = {json.loads(line)["topic"] for line in capture.read_text().splitlines()}
    done = sent[1]
    assert {(d["namespace"], d["name"]) for d in done["inputs"]} == {("kafka://broker.example.com:9092", t) for t in topics}
    servers = done["job"]["name"].removeprefix("scan.").split("+")  # the window's Debezium servers, sorted
    assert servers == sorted(servers) and {"dbserver1", "mysql-server-1"} <= set(servers)
    failing = {(d["name"], a["assertion"]) for d in done["inputs"]
               for a in d["inputFacets"]["dataQualityAssertions"]["assertions"] if not a["success"]}
    assert failing
    assert done["run"]["facets"]["cdcMonitor_reports"]["reports"] == [{"kind": "html", "url": report.as_uri()}]
    assert sum(d["inputFacets"]["dataQualityMetrics"]["rowCount"] for d in done["inputs"]) == \
        done["run"]["facets"]["cdcMonitor_window"]["records"] == len(topics and capture.read_text().splitlines())
