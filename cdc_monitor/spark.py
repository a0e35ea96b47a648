"""SparkSession defaults that work on a laptop or CI box; every one can be overridden.

Local mode binds to loopback, turns the UI off and keeps shuffles small. On a cluster, pass
``--master``/``--conf`` (or set ``CDC_MONITOR_SPARK_MASTER``) and these defaults step aside.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdc_monitor.errors import EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdc_monitor.jvm import DriverStart

LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # One shuffle partition per core, planned up front: adaptive execution runs every shuffle
    # stage as a job of its own and broadcasts each small join side in another (a scan was ~58
    # jobs with it, 5 without; a 1.5k-record scan 8.4 s warm instead of 11.5 s, measured), and
    # with a partition per core there is nothing left for it to coalesce.
    "spark.sql.shuffle.partitions": str(os.cpu_count() or 2),
    "spark.default.parallelism": str(os.cpu_count() or 2),
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Interpreted expressions instead of generated code: a scan runs ~60 Spark jobs over little
    # data per core, and compiling their code cost more than it saved (measured on 2 cores:
    # 100k events 46.7 s vs 51.4 s, 25k 28.2 vs 31.9 s, a 1,776-record capture 22 vs 25 s).
    # On a cluster with more data per task codegen pays off, so this is a local-mode default.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# Needed wherever it runs: UTC times; JSON objects with a repeated key (seed 001's MySQL update
# repeats "name") parse as from_json does, last one wins, instead of failing as variants.
# A scan generates ~350 classes; Spark keeps 100 compiled, so every window (watch's micro-batches,
# repeated scans in one session) compiled them all again: ~5 s per window, measured.
CLUSTER_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.variant.allowDuplicateKeys": "true",
    "spark.sql.codegen.cache.maxEntries": "2000",
    # PySpark records the Python call site of every column function for error messages: two
    # extra JVM round trips per call, ~1 s of a small scan's planning (18k instead of 31k calls)
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}
LOCAL_DEFAULTS |= CLUSTER_DEFAULTS


def _check_java() -> None:
    if os.environ.get("JAVA_HOME") or shutil.which("java"):
        return
    raise EnvironmentProblem(
        "Java was not found: install a JDK 17 or 21 (e.g. `apt-get install openjdk-17-jre-headless`) "
        "or set JAVA_HOME"
    )


def _driver_start(settings: dict[str, str], small_input: bool, write_archive: bool) -> DriverStart | None:
    """JVM options for a driver this process is about to launch (none when a JVM already runs:
    an active session, or a process spark-submit started)."""
    from pyspark import SparkContext

    from cdc_monitor.jvm import DriverStart

    if SparkContext._active_spark_context is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    start = DriverStart(small_input=small_input, settings=settings, force_dump=write_archive)
    own = settings.get("spark.driver.extraJavaOptions", "")
    settings["spark.driver.extraJavaOptions"] = f"{start.java_options} {own}".strip()  # the user's flags win
    return start


def get_spark(master: str | None = None, conf: Mapping[str, str] | None = None,
              small_input: bool = False, write_archive: bool = False) -> SparkSession:
    """Return the active session or build one with local defaults overridden by ``conf``.
    ``small_input``: the run's input is known to be small; ``write_archive``: this driver writes
    the JVM's class archive at exit even if one exists (see cdc_monitor/jvm.py)."""
    _check_java()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # Python workers (the Kafka data source's readers) must run this interpreter, with our packages
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    master = master or os.environ.get("CDC_MONITOR_SPARK_MASTER") or "local[*]"
    builder = SparkSession.builder.appName("cdc-monitor").master(master)
    settings = dict(LOCAL_DEFAULTS) if master.startswith("local") else dict(CLUSTER_DEFAULTS)
    settings.update(conf or {})
    start = _driver_start(settings, small_input, write_archive)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if start is not None:
        start.register(spark)
    spark.sparkContext.setLogLevel(os.environ.get("CDC_MONITOR_SPARK_LOG_LEVEL", "FATAL"))
    return spark
