"""Spark's failures told as what the user can change: the JVM ran out of memory.

A Spark job that runs out of heap surfaces in Python as a Py4J error naming a call id
(``An error occurred while calling o999.collectToPython``), with the JVM's
``java.lang.OutOfMemoryError`` deep in its text. ``explain`` turns that into one line that names the
setting to raise and the size of the window being checked (``note_window`` records it once a verb
knows it), as a ``ResourceProblem`` (exit 2)."""

from __future__ import annotations

from cdc_monitor.errors import EnvironmentProblem

_OOM = ("java.lang.OutOfMemoryError", "SparkOutOfMemoryError", "Java heap space", "GC overhead limit exceeded")
_window: dict[str, int] = {}


class ResourceProblem(EnvironmentProblem):
    """Spark lacked a resource it needs (memory) for the input given."""


def note_window(records: int) -> None:
    """The window being checked holds ``records`` records (named by an out-of-memory error)."""
    _window["records"] = records


def explain(err: BaseException, spark: object | None = None) -> ResourceProblem | None:
    """``err`` as a one-line fix-it error when Spark ran out of memory; else None."""
    text = str(err)
    cause = next((marker for marker in _OOM if marker in text), None)
    if cause is None:
        return None
    size = f"a window of {_window['records']:,} records" if "records" in _window else "this input"
    master, memory = _settings(spark)
    if master.startswith("local"):
        setting = f'[spark] "spark.driver.memory" in the --config file (now {memory or "1g"}; local mode: the driver runs the tasks)'
    else:
        setting = '[spark] "spark.executor.memory" (and "spark.executor.memoryOverhead") on the cluster'
    return ResourceProblem(f"Spark ran out of memory ({cause}) checking {size}: raise {setting}, or check a "
                           "shorter window (--since/--until, fewer topics)")


def _settings(spark: object | None) -> tuple[str, str | None]:
    """The session's master and driver memory, where they can still be read."""
    try:
        conf = spark.conf if spark is not None else None  # type: ignore[attr-defined]
        if conf is None:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            conf = active.conf if active is not None else None
        if conf is None:
            return "local", None
        return str(conf.get("spark.master", "local")), conf.get("spark.driver.memory", None)
    except Exception:  # the JVM may be gone after the failure
        return "local", None
