"""The session's Spark standalone cluster (tests/conftest.py: a master and two workers, executors
in JVMs of their own) really lacks cdc-monitor in its executors' Python, so the cluster runs
elsewhere prove the driver ships it: a Kafka scan (tests/test_kafka_source.py), the gate
(tests/test_gate.py) and a watch restarted onto the cluster (tests/test_broker_faults.py), each equal to
local mode."""

from __future__ import annotations

import subprocess


def test_executors_python_has_no_cdc_monitor(spark_cluster, tmp_path):
    python = str(spark_cluster["python"])
    assert subprocess.run([python, "-c", "import confluent_kafka, pyarrow"], cwd=tmp_path).returncode == 0
    missing = subprocess.run([python, "-c", "import cdc_monitor"], capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode != 0 and "No module named 'cdc_monitor'" in missing.stderr
