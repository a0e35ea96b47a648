"""The session's Spark standalone cluster (tests/conftest.py: a master and two workers, executors
in JVMs of their own) really lacks cdc-monitor in its executors' Python, so the cluster runs
elsewhere prove the driver ships it: a Kafka scan (tests/test_kafka_source.py), the gate
(tests/test_gate.py) and a watch restarted onto the cluster (tests/test_broker_faults.py), each equal to
local mode. Executors whose Python lacks the dependencies: scan and watch exit 2 with one fix-it
line, and watch then counts exactly with the right interpreter."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest


def test_executors_python_has_no_cdc_monitor(spark_cluster, tmp_path):
    python = str(spark_cluster["python"])
    assert subprocess.run([python, "-c", "import confluent_kafka, pyarrow"], cwd=tmp_path).returncode == 0
    missing = subprocess.run([python, "-c", "import cdc_monitor"], capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode != 0 and "No module named 'cdc_monitor'" in missing.stderr


# ---- executors whose Python cannot run the Kafka reader: one fix-it line and exit 2 (issue 85) ----

SERVER = "clusterpy1"  # no other test writes these topics
TOPICS = rf"{SERVER}\..*"


@pytest.fixture(scope="module")
def lacking(spark_cluster, kafka_broker, tmp_path_factory):
    """A bare virtualenv (no pyarrow, pandas, confluent-kafka) as the executors' Python, and a small
    window of traffic on the session's broker. Yields (CLI args, records produced)."""
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.produce import produce_traffic
    from cdc_monitor.sources.kafka.options import KafkaOptions

    root = tmp_path_factory.mktemp("lacking-python")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "env")], check=True)
    config = root / "cluster.toml"
    config.write_text(f'[spark]\n"spark.pyspark.python" = "{root / "env" / "bin" / "python"}"\n'
                      '"spark.executor.memory" = "768m"\n"spark.executor.cores" = "1"\n')
    traffic = generate("mysql", events=40, seed=85, server=SERVER)
    produce_traffic(traffic, KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker}))
    return ["--spark-master", spark_cluster["url"], "--config", str(config)], len(traffic.records)


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def records_counted(port: int) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    from tests.support.promtools import get

    return sum(s.value for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics").decode())
               for s in fam.samples if s.name == "cdc_records_total")


def one_fix_it_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("cdc-monitor: error:")]
    assert len(errors) == 1, stderr[-3000:]
    line = errors[0]
    assert '"spark.pyspark.python"' in line and "PYSPARK_PYTHON" in line and "--kafka-reader spark" in line, line
    assert "no module 'pyarrow'" in line and 'docs/deploy.md, "Running on a cluster"' in line, line
    return line


def test_scan_on_executors_lacking_the_dependencies_exits_2_with_one_fix_it_line(lacking, kafka_broker):
    """Spark's own error ("Python worker exited unexpectedly", raised while the driver plans the
    Kafka reader in a worker of that interpreter) becomes what to set; with the fixture's right
    interpreter the same scan counts exactly (test_kafka_source.py's cluster test)."""
    args, _ = lacking
    proc = run_cli("scan", "--bootstrap-servers", kafka_broker, "--topics", TOPICS, "--start", "2000-01-01T00:00:00Z",
                   "--quiet", *args)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Py4J" not in one_fix_it_line(proc.stderr)


def test_watch_on_executors_lacking_the_dependencies_stops_after_the_first_window_with_one_fix_it_line(
        lacking, spark_cluster, kafka_broker, tmp_path):
    """The first failing window stops watch with the line (no back-off loop). With
    CDC_MONITOR_WATCH_ON_CLUSTER=1 (tests/test_broker_faults.py's switch: a watch's first batch on the
    cluster costs minutes on a loaded machine, so it is off by default for the suite's time budget)
    the same checkpoint with the executors' Python set right then counts every record exactly once."""
    from tests.support.broker import free_port

    args, produced = lacking
    port = free_port()
    watch = ["watch", "--bootstrap-servers", kafka_broker, "--topics", TOPICS, "--starting-offsets", "earliest",
             "--checkpoint", str(tmp_path / "ckpt"), "--listen", f"127.0.0.1:{port}", "--interval", "1s", "--job", "py85"]
    proc = run_cli(*watch, *args)
    assert proc.returncode == 2, proc.stderr[-3000:]
    one_fix_it_line(proc.stderr)
    assert "retrying" not in proc.stderr
    if os.environ.get("CDC_MONITOR_WATCH_ON_CLUSTER") != "1":
        return
    log = tmp_path / "watch.log"
    good = subprocess.Popen([sys.executable, "-m", "cdc_monitor", *watch, *spark_cluster["args"]],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, counted = time.monotonic() + 300, -1.0
        while time.monotonic() < deadline and counted < produced:
            assert good.poll() is None, log.read_text()[-3000:]
            with contextlib.suppress(OSError):  # (not serving yet)
                counted = records_counted(port)
            time.sleep(0.5)
        assert counted == produced, log.read_text()[-3000:]
        time.sleep(2)  # nothing more arrives: counted once
        assert records_counted(port) == produced
        good.send_signal(signal.SIGTERM)
        assert good.wait(60) == 0
    finally:
        if good.poll() is None:
            os.killpg(good.pid, signal.SIGKILL)
            good.wait(30)
