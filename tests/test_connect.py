"""scan, gate and reconcile over a real Spark Connect server (``--remote``), each report equal to
local mode's, from client processes that have no Java: a ``java`` that records any start is the
only one on their PATH, and none may start (tests/support/connect_server.py).

The server starts without the operator jar, and its Python workers have no cdc-monitor: the
client ships both as session artifacts. One client process runs every scan (a Connect client
and the suite's classic session cannot share a process); gate and reconcile run as the CLI.

What this module proves is the feeding: the same scan over a Connect session equals local mode's.
The seed documents (Oracle, MySQL, SQL Server with transaction metadata, dtle, BMDB), one generated
flavour's faulty capture (MongoDB: its documents as JSON text, the one format the seeds lack), the
gate's MySQL capture and a Kafka window of faulty PostgreSQL traffic (with transaction markers) feed
the decoder and the checks' judges over Connect; reconcile below, the decoder's texts mode. That each
flavour's faults are found exactly is the classic session's proof (tests/test_accuracy.py: every
flavour, with and without schemas): the checks are the same code on both sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_monitor.pipeline import RUN_FIELDS
from cdc_monitor.runtime.connect import SKIPPED
from tests.support.captures import seed_capture, seed_cases
from tests.support.connect_server import java_started, without_java

ROOT = Path(__file__).resolve().parent.parent
FLAVOUR = "mongodb"  # the generated flavour scanned over Connect (the gate's capture is MySQL's)
KAFKA_SERVER = "connect1"  # the Kafka window's topics: no other test writes them


def client(env: dict[str, str], *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """A client process of this checkout, run from its root (its package wins over an installed one)."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def data(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in RUN_FIELDS}


@pytest.fixture(scope="module")
def world(tmp_path_factory, kafka_broker):
    """The seed capture, faulty captures of MongoDB (scanned) and MySQL (the gate's), and a Kafka
    window of faulty PostgreSQL traffic."""
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.generator.produce import produce_traffic
    from cdc_monitor.sources.kafka.options import KafkaOptions

    root = tmp_path_factory.mktemp("connect-world")
    captures = {"seeds": seed_capture(root / "seeds.jsonl")}
    for flavour, seed in ((FLAVOUR, 66), ("mysql", 60)):
        traffic = generate(flavour, events=500, seed=seed, faults=True)
        captures[flavour] = write_capture(traffic, root / f"{flavour}.jsonl")["capture"]
    traffic = generate("postgresql", events=300, seed=67, faults=True, fault_repeats=1, server=KAFKA_SERVER)
    produce_traffic(traffic, KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker}))
    kafka = {"bootstrap_servers": kafka_broker, "topics": rf"{KAFKA_SERVER}\..*"}
    return {"root": root, "captures": {k: Path(v) for k, v in captures.items()}, "kafka": kafka}


@pytest.fixture(scope="module")
def remote_reports(world, connect_server, tmp_path_factory):
    """Every scan of the world over Connect, in one client process without Java."""
    home = tmp_path_factory.mktemp("connect-client")
    jobs = [{"name": name, "paths": [str(world["captures"][name])]} for name in ("seeds", FLAVOUR)]
    jobs.append({"name": "kafka", "kafka": world["kafka"]})
    (home / "jobs.json").write_text(json.dumps(jobs))
    out = home / "reports"
    out.mkdir()
    env = without_java(home)
    proc = client(env, "-m", "tests.support.connect_client", connect_server, str(home / "jobs.json"), str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"reports": {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}, "home": home}


def test_the_client_ran_without_java_and_started_no_jvm(remote_reports):
    assert set(remote_reports["reports"]) == {"seeds", FLAVOUR, "kafka"}
    assert java_started(remote_reports["home"]) == []


@pytest.mark.parametrize("name", ["seeds", FLAVOUR])
def test_capture_report_over_connect_equals_local_mode(remote_reports, world, scan, name):
    from cdc_monitor.sinks.report import render_json

    remote = remote_reports["reports"][name]
    local = json.loads(render_json(scan([world["captures"][name]])))
    assert data(remote) == data(local)
    assert remote["session"] == {"connect": True, "skipped": SKIPPED}  # what the report lacks, named
    assert "spark_jobs" not in remote["timings_seconds"] and "spark_jobs" in local["timings_seconds"]
    assert remote["summary"]["records"] > 0 and (name == "seeds" or remote["findings"])


def test_seed_goldens_over_connect(remote_reports):
    findings = remote_reports["reports"]["seeds"]["findings"]
    for case in seed_cases():
        assert sorted(f["rule"] for f in findings if f["offset"] == case["offset"]) == case["expected"]["findings"], case["name"]


def test_kafka_window_through_the_bundled_reader_over_connect_equals_local_mode(remote_reports, world, spark):
    """The bundled reader runs in the server's Python workers, which have cdc-monitor only as the
    client's artifact."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sinks.report import render_json
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    local = run_scan(prepare_input((), KafkaFlags(**world["kafka"])).read(spark), ScanConfig(max_findings=100_000))
    remote = remote_reports["reports"]["kafka"]
    assert data(remote) == data(json.loads(render_json(local)))
    assert remote["inputs"]["kind"] == "kafka" and remote["summary"]["transaction_markers"] > 0


def test_gate_over_connect_equals_local_mode(world, connect_server, spark, tmp_path):
    """The CLI as a CI runner without Java runs it, against the local gate in this process."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    capture, suites = str(world["captures"]["mysql"]), str(ROOT / "expectations")
    env = without_java(tmp_path / "client")
    proc = client(env, "-m", "cdc_monitor", "gate", capture, "--suite", suites, "--output", "json", "--quiet",
                  "--remote", connect_server)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert java_started(tmp_path / "client") == []
    local = CliRunner().invoke(cli, ["gate", capture, "--suite", suites, "--output", "json", "--quiet",
                                     "--report-file", str(tmp_path / "local.json")])
    assert local.exit_code == 1, local.output

    def results(report: dict) -> dict:
        return {k: v for k, v in report.items() if "timing" not in k and "seconds" not in k and k != "generated_at"}

    remote_report = json.loads(proc.stdout)
    assert results(remote_report) == results(json.loads((tmp_path / "local.json").read_text()))
    assert remote_report["failed"]


def test_reconcile_over_connect_equals_local_mode(connect_server, spark, tmp_path):
    """The JDBC driver jar reaches the server as a session artifact (it is on no classpath there)."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli
    from cdc_monitor.reconcile.connection import jdbc_settings
    from tests.support.pg_world import build
    from tests.support.postgres import PASSWORD, USER, Postgres

    pg = Postgres()
    try:
        (tmp_path / "shop").mkdir()
        capture = str(build(pg, tmp_path / "shop")["schemas"])
        password = tmp_path / "pw"
        password.write_text(PASSWORD + "\n")
        args = ["reconcile", capture, "--jdbc-url", pg.url, "--jdbc-user", USER, "--jdbc-password-file", str(password),
                "--output", "json", "--quiet"]
        proc = client(without_java(tmp_path / "client"), "-m", "cdc_monitor", *args, "--remote", connect_server)
        spark.sql(f"ADD JAR {jdbc_settings(pg.url, USER, str(password)).jar}")  # what reconcile puts on spark.jars
        local = CliRunner().invoke(cli, [*args, "--report-file", str(tmp_path / "local.json")])
    finally:
        pg.stop()
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert local.exit_code == 1, local.output

    def results(report: dict) -> dict:
        # (source.position: the database's WAL position when each run read it, which the runs between moved)
        return {k: ({n: x for n, x in v.items() if n != "position"} if k == "source" else v)
                for k, v in report.items() if "seconds" not in k and k != "generated_at"}

    remote_report = json.loads(proc.stdout)
    assert results(remote_report) == results(json.loads((tmp_path / "local.json").read_text()))
    assert remote_report["mismatches"] > 0 and remote_report["source"]["position"] > 0


def test_the_probe_tells_a_connect_server_from_a_kafka_broker(connect_server, kafka_broker):
    """The usual wrong port: the broker's address given as --remote. The real Connect server answers
    gRPC's HTTP/2 greeting; Apache Kafka's broker does not (it closes the connection), so the run
    stops in seconds with one line instead of the client's minutes of retries."""
    from cdc_monitor.errors import EnvironmentProblem
    from cdc_monitor.runtime.connect import probe

    probe(connect_server)
    with pytest.raises(EnvironmentProblem, match=f"the server at {kafka_broker} accepted the connection but is not a "
                                                  "Spark Connect server"):
        probe(f"sc://{kafka_broker}")
