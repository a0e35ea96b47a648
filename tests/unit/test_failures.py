"""Spark running out of memory is one fix-it line naming the setting to raise and the window's size,
not a Py4J call id (runtime/failures.py, called by the CLI's error handler)."""

from __future__ import annotations

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
