"""Spark running out of memory is one fix-it line naming the setting to raise and the window's size,
not a Py4J call id (runtime/failures.py, called by the CLI's error handler); so is a cluster that
cannot run a Python worker or load a class (also called by watch's retry loop)."""

from __future__ import annotations

import sys

from cdc_monitor.errors import EXIT_CANNOT_RUN
from cdc_monitor.runtime import failures


class _Conf:
    def __init__(self, values: dict[str, str]):
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    def __init__(self, **values: str):
        self.conf = _Conf(values)


# what PySpark raises when a task runs out of heap: the JVM's error deep in a Py4J error's text
PY4J_OOM = ("An error occurred while calling o999.collectToPython.\n: org.apache.spark.SparkException: Job aborted due "
            "to stage failure: Task 0 in stage 15.0 failed 1 times, most recent failure: Lost task 0.0 in stage 15.0 "
            "(TID 19) (localhost executor driver): java.lang.OutOfMemoryError: Java heap space\n\tat java.base/...")


def test_a_task_out_of_heap_names_the_driver_memory_in_local_mode():
    failures.note_window(600_000)
    err = failures.explain(RuntimeError(PY4J_OOM), _Session(**{"spark.master": "local[2]", "spark.driver.memory": "512m"}))
    assert err is not None and err.exit_code == EXIT_CANNOT_RUN
    text = str(err)
    assert "\n" not in text and "o999" not in text
    assert '"spark.driver.memory"' in text and "now 512m" in text and "600,000 records" in text
    assert "java.lang.OutOfMemoryError" in text


def test_on_a_cluster_it_names_the_executor_memory():
    err = failures.explain(RuntimeError(PY4J_OOM), _Session(**{"spark.master": "spark://host:7077"}))
    assert err is not None
    assert '"spark.executor.memory"' in str(err) and "spark.driver.memory" not in str(err)


def test_other_failures_are_not_explained_as_memory():
    assert failures.explain(RuntimeError("An error occurred while calling o12.count: FileNotFoundException"),
                            _Session()) is None


# ---- a cluster that cannot run the project's code (Spark's own texts, as they reach the driver) ----

# the driver plans the Kafka reader in a worker of the executors' interpreter (scan: a Py4J error)
PLANNER_CRASHED = ("An error occurred while calling o314.localCheckpoint.\n: org.apache.spark.SparkException: Python "
                   "worker exited unexpectedly (crashed). Consider setting 'spark.sql.execution.pyspark.udf.faulthandler"
                   ".enabled' or'spark.python.worker.faulthandler.enabled' configuration to 'true' for the better Python "
                   "traceback.\n\tat org.apache.spark.sql.execution.python.PythonPlannerRunner.runInPython(...)")
# watch: the streaming query's exception
STREAM_NO_CONNECT = ("Python worker failed to connect back.\n=== Streaming Query ===\nIdentifier: [id = dd5c, runId = "
                     "d411]\nCurrent Committed Offsets: {}\nCurrent Available Offsets: {}\n\nCurrent State: INITIALIZING")
TASK = ("An error occurred while calling o88.collectToPython.\n: org.apache.spark.SparkException: Job aborted due to stage "
        "failure: Task 1 in stage 2.0 failed 4 times, most recent failure: Lost task 1.3 in stage 2.0 (TID 11) "
        "(10.1.2.3 executor 1): ")
NO_KAFKA_CLIENT = TASK + ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n  File "
                          "\"/x/cdc_monitor/sources/kafka/client.py\", line 9, in <module>\n"
                          "ModuleNotFoundError: No module named 'confluent_kafka'\n")
BROKER_DOWN = TASK + ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                      "cimpl.KafkaException: KafkaError{code=_TRANSPORT,val=-195,str=\"Failed to get metadata: "
                      "Local: Broker transport failure\"}\n")


def test_a_worker_that_crashes_on_the_driver_is_explained_by_asking_its_interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("PYSPARK_PYTHON", str(tmp_path / "no-such-python"))
    for text in (PLANNER_CRASHED, STREAM_NO_CONNECT):
        err = failures.setup_problem(RuntimeError(text))
        assert err is not None and err.exit_code == EXIT_CANNOT_RUN
        line = str(err)
        assert "\n" not in line and "o314" not in line
        assert "the driver (host " in line and f"{tmp_path / 'no-such-python'} is not an interpreter" in line
        assert '"spark.pyspark.python"' in line and "PYSPARK_PYTHON" in line and "--kafka-reader spark" in line
        assert failures.explain(RuntimeError(text)) is not None  # the CLI's handler says the same


def test_a_worker_crash_with_an_interpreter_that_has_everything_is_not_a_setup_problem(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # this one imports pyarrow, pandas, confluent_kafka
    assert failures.setup_problem(RuntimeError(PLANNER_CRASHED)) is None  # (watch retries it)


def test_an_executors_missing_module_names_the_host_and_the_module(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/env/bin/python")
    line = str(failures.setup_problem(RuntimeError(NO_KAFKA_CLIENT)))
    assert "executor 1 on host 10.1.2.3" in line and "/opt/env/bin/python has no module 'confluent_kafka'" in line
    assert "confluent-kafka" in line and '"spark.pyspark.python"' in line


# a scan's reader failing on the executors, as PySpark raises it (a PythonException: no task, no host)
READER_NO_KAFKA_CLIENT = (
    "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n  File \"./cdc_monitor-0.1.0"
    "-be75335e7efe.zip/cdc_monitor/sources/kafka/datasource.py\", line 71, in read\n    yield from read_range(self.opts,"
    " partition.rng)\n  File \"./cdc_monitor-0.1.0-be75335e7efe.zip/cdc_monitor/sources/kafka/reader.py\", line 70, in "
    "read_range\n    from confluent_kafka import KafkaError, TopicPartition\nModuleNotFoundError: No module named "
    "'confluent_kafka'")


def test_a_readers_missing_module_on_the_executors_is_not_blamed_on_the_driver(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/env/bin/python")
    line = str(failures.setup_problem(RuntimeError(READER_NO_KAFKA_CLIENT)))
    assert "cannot run on the executors: /opt/env/bin/python has no module 'confluent_kafka'" in line
    assert "the driver" not in line


def test_another_python_version_on_an_executor_is_named():
    text = TASK + ("org.apache.spark.api.python.PythonException: pyspark.errors.exceptions.base.PySparkRuntimeError: "
                   "[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.10 than that in driver: 3.11, "
                   "PySpark cannot run with different minor versions.")
    assert "is Python 3.10, the driver 3.11" in str(failures.setup_problem(RuntimeError(text)))


def test_a_class_missing_on_an_executor_names_the_jar_setting():
    text = TASK + "java.lang.ClassNotFoundException: cdcmonitor.Decoder\n\tat java.base/..."
    line = str(failures.setup_problem(RuntimeError(text)))
    assert "executor 1 on host 10.1.2.3 cannot load the class cdcmonitor.Decoder" in line and '"spark.jars"' in line


def test_the_package_the_driver_ships_missing_says_the_executors_must_reach_the_driver():
    text = TASK + "org.apache.spark.api.python.PythonException: ModuleNotFoundError: No module named 'cdc_monitor'"
    line = str(failures.setup_problem(RuntimeError(text)))
    assert "did not receive the cdc_monitor package" in line and "spark.pyspark.python" not in line


def test_the_driver_planning_a_stream_without_the_package_says_to_install_it_there(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/env/bin/python")
    text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to plan Python data source initialize source: Traceback (most recent "
            "call last):\n  File \".../pyspark/sql/streaming/python_streaming_source_runner.py\", line 227, in main\n"
            "ModuleNotFoundError: No module named 'cdc_monitor'\n SQLSTATE: 38000\n=== Streaming Query ===")
    line = str(failures.setup_problem(RuntimeError(text)))
    assert "the driver (host " in line and "install cdc-monitor in /opt/env/bin/python" in line
    assert "must reach the driver" not in line


def test_a_broker_failure_and_this_process_s_own_import_error_are_not_setup_problems():
    assert failures.setup_problem(RuntimeError(BROKER_DOWN)) is None  # watch keeps its back-off
    assert failures.setup_problem(ModuleNotFoundError("No module named 'great_expectations'")) is None
    assert failures.setup_problem(None) is None
