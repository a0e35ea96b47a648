"""Where a session starts: SparkSession defaults that work on a laptop or CI box (every one can be
overridden), and the session's capabilities, decided once (``SessionCaps``).

Local mode binds to loopback, turns the UI off and keeps shuffles small. On a cluster, pass
``--master``/``--conf`` (or set ``CDC_MONITOR_SPARK_MASTER``) and these defaults step aside.

What a session can do (classic or Spark Connect, the JVM door to the operators
jar, generated code for large windows, where Spark's progress comes from) is one value made here
(``capabilities``), handed to the engine, the checks, history, progress and watch: nothing else asks
the session what it is. The runtime modules import one way: settings <- jvm <- connect <- session
<- progress and the rest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.runtime.connect import connect_session, register_on_server
from cdc_monitor.runtime.jvm import (
    DriverStart,
    cache_dir,
    operator_class,
    operator_jar_problem,
    package_zip,
    register_java_function,
    with_operator_jar,
)
from cdc_monitor.runtime.settings import (
    CLUSTER_DEFAULTS,
    LOCAL_DEFAULTS,
    SESSION_DEFAULTS,
    SMALL_ON_A_CLUSTER,
    SMALL_PLANS_ON_A_CLUSTER,
    generated_code,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType


@dataclass(frozen=True)
class SessionCaps:
    """What a session can do, decided once where it starts (``capabilities``). The engine, the checks,
    history, progress and watch are handed it; they never ask the session what it is."""

    spark: SparkSession
    connect: bool  # a Spark Connect client (runtime/connect.py): no JVM in this process

    @property
    def jvm(self) -> bool:
        """The driver's JVM is this process's (classic): py4j is the door to the operators jar's classes
        (the passes' streams, watch's operator) and to a frame's partitions."""
        return not self.connect

    @property
    def status_tracker(self) -> bool:
        """Spark's jobs and tasks are read from the driver's status tracker (classic: the scan's jobs
        counted, the live line's tasks); a Connect session's come from its progress handler, and no
        job is counted (runtime/progress.py, engine/jobs.py)."""
        return not self.connect

    def register_java_function(self, name: str, java_class: str, returns: DataType | str, what: str) -> None:
        """A UDF of the operators jar registered as ``name`` (idempotent): on a Connect server
        without the jar, the jar is sent as an artifact first; a fix-it error names ``what`` needs it."""
        register = register_on_server if self.connect else register_java_function
        register(self.spark, name, java_class, returns, what)

    def operator_class(self, java_class: str) -> Any:
        """``java_class`` of the operators jar in the driver's JVM (a classic session's: ``jvm``)."""
        return operator_class(self.spark, java_class)

    @staticmethod
    def jar_problem(needs: str) -> str | None:
        """Why ``needs`` (a class of the operators jar) cannot run on this pyspark (None: it can)."""
        return operator_jar_problem(needs)

    def generated_code(self, on: bool) -> AbstractContextManager[None]:
        """Within the block, plans use generated code when ``on`` (a large window) and the session
        runs interpreted (settings.generated_code); a Connect session's settings are its server's."""
        return generated_code(self.spark, on and not self.connect)


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` (a session) is a Spark Connect client's (by its class's module: importing
    pyspark's Connect client, gRPC and all, would cost a classic run its time)."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def capabilities(spark: SparkSession) -> SessionCaps:
    """What ``spark`` can do (``SessionCaps``): asked here, once per run, and handed down."""
    return SessionCaps(spark, is_connect(spark))


def _check_java() -> None:
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise EnvironmentProblem(
        "Java was not found: install a JDK 17 or 21 (e.g. `apt-get install openjdk-17-jre-headless`) "
        "or set JAVA_HOME"
    )


def _driver_start(settings: dict[str, str], small_input: bool) -> DriverStart | None:
    """JVM options for a driver this process is about to launch (none when a JVM already runs:
    an active session, or a process spark-submit started)."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    start = DriverStart(small_input=small_input, settings=settings)
    own = settings.get("spark.driver.extraJavaOptions", "")
    settings["spark.driver.extraJavaOptions"] = f"{start.java_options} {own}".strip()  # the user's flags win
    return start


KEPT_JVM_LOGS = 10


def jvm_log_dir() -> Path:
    return cache_dir() / "logs"


def _driver_log() -> Path | None:
    """A log file for the driver JVM this process is about to start (None: leave its output on the
    terminal, as ``CDC_MONITOR_DEBUG=1`` asks or when no cache folder is writable). The newest
    logs are kept in ``<cache>/logs``; errors name the file."""
    if os.environ.get("CDC_MONITOR_DEBUG"):
        return None
    folder = jvm_log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in sorted(folder.glob("driver-*.log"))[:-KEPT_JVM_LOGS]:
            old.unlink(missing_ok=True)
        log = folder / f"driver-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
        log.touch()
    except OSError:
        return None
    os.environ["CDC_MONITOR_JVM_LOG"] = str(log)
    return log


@contextlib.contextmanager
def _stderr_to(log: Path | None) -> Iterator[None]:
    """While the driver JVM starts, this process's standard error is ``log``: the JVM inherits it
    (its launcher's warnings, log4j's lines), and the user's terminal shows cdc-monitor's own
    lines only. Plain file descriptors: the JVM is PySpark's child process."""
    if log is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with log.open("ab") as out:
            os.dup2(out.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None,
              small_input: bool = False, micro_batches: bool = False, remote: str | None = None) -> SparkSession:
    """Return the active session or build one with local defaults overridden by ``conf``.
    ``small_input``: the run's input is known to be small; ``micro_batches``: a streaming query
    of small batches (watch); ``remote``: a Spark Connect server's URL instead (runtime/connect.py:
    no JVM in this process, so no Java needed)."""
    if remote:
        return connect_session(remote, SESSION_DEFAULTS | (SMALL_PLANS_ON_A_CLUSTER if small_input else {}), conf or {})
    os.environ.pop("SPARK_REMOTE", None)  # a classic session: pyspark would build a Connect one from it
    _check_java()
    master = master or os.environ.get("CDC_MONITOR_SPARK_MASTER") or "local[*]"
    local = master.startswith("local")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers (the Kafka data source's readers) run this interpreter, with our packages.
        # On a cluster they run the executors' own Python (spark.pyspark.python, PYSPARK_PYTHON or
        # python3 there) and receive this package from the driver (ship_package).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("cdc-monitor").master(master)
    settings = dict(LOCAL_DEFAULTS) if local else dict(CLUSTER_DEFAULTS)
    if small_input and not local:
        settings |= SMALL_ON_A_CLUSTER
    elif micro_batches and not local:
        settings |= SMALL_PLANS_ON_A_CLUSTER
    settings.update(conf or {})
    # watch's JVM operator (cdc_monitor/java): on the driver's classpath and shipped to executors
    settings["spark.jars"] = with_operator_jar(settings.get("spark.jars"))
    if settings.get("spark.pyspark.python"):
        # PySpark tells executors which Python to run from this variable (the setting itself is
        # read only by spark-submit), so the config file's choice must reach it
        os.environ["PYSPARK_PYTHON"] = settings["spark.pyspark.python"]
    start = _driver_start(settings, small_input)
    log = _driver_log() if start is not None else None
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _stderr_to(log):
        spark = builder.getOrCreate()
    if not local:
        spark.sparkContext.addPyFile(str(package_zip()))
    # Spark's warnings go to the driver's log file where it has one, and are kept off a terminal
    spark.sparkContext.setLogLevel(os.environ.get("CDC_MONITOR_SPARK_LOG_LEVEL", "WARN" if log else "FATAL"))
    return spark
