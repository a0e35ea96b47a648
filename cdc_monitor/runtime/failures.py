"""Spark's failures told as what the user can change: the JVM ran out of memory, or a cluster cannot
run the project's code (``setup_problem``).

A Spark job that runs out of heap surfaces in Python as a Py4J error naming a call id
(``An error occurred while calling o999.collectToPython``), with the JVM's
``java.lang.OutOfMemoryError`` deep in its text. ``explain`` turns that into one line that names the
setting to raise and the size of the window being checked (``note_window`` records it once a verb
knows it), as a ``ResourceProblem`` (exit 2).

A cluster whose executors cannot run a Python worker (no such interpreter, one without the
dependencies, another Python version) or load a class (a jar that did not reach them) fails the
same way on every retry. Spark says so in its own words: "Python worker failed to connect back",
"Python worker exited unexpectedly", a worker's ``ModuleNotFoundError``, a ``ClassNotFoundException``,
with the task's host. When the failing worker is the driver's own (a Python data source is planned
in a worker the driver starts with the executors' interpreter setting) and Spark's text does not say
why, the interpreter is asked on this host, after the failure: one process that imports what the
Kafka reader needs. That is a ``SetupProblem`` (exit 2): ``watch`` stops on it instead of retrying."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys

from cdc_monitor.errors import EnvironmentProblem

_OOM = ("java.lang.OutOfMemoryError", "SparkOutOfMemoryError", "Java heap space", "GC overhead limit exceeded")
_window: dict[str, int] = {}


class ResourceProblem(EnvironmentProblem):
    """Spark lacked a resource it needs (memory) for the input given."""


class SetupProblem(EnvironmentProblem):
    """The cluster cannot run the project's code (its Python, a module, a jar): every retry fails the same way."""


# what the executors' Python imports for the bundled Kafka reader (cdc_monitor itself is shipped by the driver)
EXECUTOR_MODULES = ("pyarrow", "pandas", "confluent_kafka")
CLUSTER_DOCS = 'docs/deploy.md, "Running on a cluster"'
_WORKER_FAILED = ("Python worker failed to connect back", "Python worker exited unexpectedly")
_TASK_WORKER = "An exception was thrown from the Python worker"  # Spark's words for a task's Python exception
_TASK_HOST = re.compile(r"\(TID \d+\) \(([^\s()]+) executor ([^\s()]+)\)")
_NO_MODULE = re.compile(r"No module named '([^']+)'")
_NO_CLASS = re.compile(r"(?:ClassNotFoundException|NoClassDefFoundError):? ([\w.$/]+)")
_VERSION_MISMATCH = re.compile(r"Python in worker has different version:? (\d+\.\d+) than that in driver:? (\d+\.\d+)")
DRIVER_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def note_window(records: int) -> None:
    """The window being checked holds ``records`` records (named by an out-of-memory error)."""
    _window["records"] = records


def explain(err: BaseException, spark: object | None = None) -> EnvironmentProblem | None:
    """``err`` as a one-line fix-it error when Spark ran out of memory or the cluster cannot run the
    project's code; else None."""
    text = str(err)
    cause = next((marker for marker in _OOM if marker in text), None)
    if cause is None:
        return setup_problem(err)
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


def setup_problem(err: BaseException | None) -> SetupProblem | None:
    """``err`` as a one-line fix-it error when Spark could not run a Python worker or load a class
    (a failure every retry repeats); else None (a broker down, a bug: what a retry may cure)."""
    if err is None or isinstance(err, ImportError):  # (this process's own import: not a worker's)
        return None
    text = str(err)
    task = _TASK_HOST.search(text)
    if task:
        where = f"executor {task.group(2)} on host {task.group(1)}"
    elif _TASK_WORKER in text:  # a task's worker, its host not in PySpark's text (a scan's reader)
        where = "the executors"
    else:  # the driver's own worker (planning a Python data source)
        where = f"the driver (host {socket.gethostname()})"
    if missing := _NO_CLASS.search(text):
        return SetupProblem(f"{where} cannot load the class {missing.group(1)}: the jar holding it must be in "
                            '[spark] "spark.jars" (cdc-monitor adds its operator jar there; the executors fetch '
                            f"those jars from the driver, which they must reach) ({CLUSTER_DOCS})")
    python = os.environ.get("PYSPARK_PYTHON") or "python3"  # what PySpark's workers run (runtime/session.py sets it)
    if (module := _NO_MODULE.search(text)) and module.group(1).split(".")[0] == "cdc_monitor":
        if where.startswith("the driver"):  # the worker planning a stream gets no addPyFile package
            return SetupProblem(f"Spark's Python worker on {where}, planning the Kafka stream, cannot import cdc_monitor: "
                                f"install cdc-monitor in {python} on that host ({CLUSTER_DOCS})")
        return SetupProblem(f"Spark's Python worker on {where} did not receive the cdc_monitor package the driver "
                            f"ships (addPyFile): the executors must reach the driver ({CLUSTER_DOCS})")
    if module:
        why = f"{python} has no module '{module.group(1)}'"
    elif versions := _VERSION_MISMATCH.search(text):
        why = f"{python} is Python {versions.group(1)}, the driver {versions.group(2)}"
    elif any(marker in text for marker in _WORKER_FAILED) and where.startswith("the driver"):
        why = interpreter_lacks(python)  # the driver's own worker failed: ask its interpreter, here
    else:
        return None
    if why is None:
        return None  # a worker that crashed with the right interpreter: not a setup problem
    needs = ", ".join(m.replace("_", "-") for m in EXECUTOR_MODULES)
    return SetupProblem(f"Spark's Python worker cannot run on {where}: {why}. Set [spark] \"spark.pyspark.python\" "
                        f"in the --config file (or PYSPARK_PYTHON) to a Python {DRIVER_PYTHON} with {needs} on every node, "
                        f"or read with --kafka-reader spark ({CLUSTER_DOCS})")


def interpreter_lacks(python: str) -> str | None:
    """Why ``python`` cannot run the Kafka reader's worker on this host (missing, another version,
    a module it cannot import), or None. One interpreter start: only after a worker failed."""
    if shutil.which(python) is None:
        return f"{python} is not an interpreter on this host"
    probe = f"import sys; print('%d.%d' % sys.version_info[:2]); import {', '.join(EXECUTOR_MODULES)}"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} did not start ({err})"
    version = done.stdout.strip()
    if version and version != DRIVER_PYTHON:
        return f"{python} is Python {version}, the driver {DRIVER_PYTHON}"
    if done.returncode != 0:
        module = _NO_MODULE.search(done.stderr)
        lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
        return f"{python} has no module '{module.group(1)}'" if module else f"{python} failed: {lines[-1][:200]}"
    return None
