"""``warm-up``: write the JVM class archive every later Spark start maps (seconds off each run).

Spark's own ``spark-submit`` runs a scan of a small generated faulty capture
(``cdc_monitor/warm_scan.py``) in a driver JVM that writes the archive at its exit; this process
waits for that JVM, so the archive is complete when it is published. The cache is tidied too
(older archives and package zips beyond those kept)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cdc_monitor.errors import UsageError
from cdc_monitor.runtime.jvm import (
    DUMP_TIMEOUT_S,
    KEPT_ZIPS,
    ZIP_PARTS,
    ZIPS,
    DriverStart,
    archive_path,
    prune,
    with_operator_jar,
)
from cdc_monitor.runtime.settings import LOCAL_DEFAULTS


@dataclass(frozen=True)
class Settings:
    # (where the archive goes: CDC_MONITOR_CACHE_DIR; CDC_MONITOR_JVM_CACHE=off disables it)
    if_missing: bool = False  # keep the archive of this Java, pyspark and jars if there is one


@dataclass
class Outcome:
    archive: Path
    seconds: float
    removed: list[Path] = field(default_factory=list)  # older cache files tidied away
    written: bool = True  # False: --if-missing found it written


def run(settings: Settings | None = None) -> Outcome:
    import pyspark

    started = time.time()
    jars = with_operator_jar(None)
    if settings is not None and settings.if_missing and (existing := archive_path({"spark.jars": jars})).is_file():
        return Outcome(existing, round(time.time() - started, 1), written=False)
    start = DriverStart(small_input=True, settings={"spark.jars": jars}, force_dump=True)
    archive = None
    if start.dump_to is not None:
        submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
        script = Path(__file__).resolve().parent.parent / "warm_scan.py"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        env.pop("SPARK_HOME", None)  # pyspark's own Spark, whose classes the archive is keyed by
        with tempfile.TemporaryDirectory(prefix="cdc-monitor-warm-up-") as tmp:
            log = Path(tmp) / "spark-submit.log"
            with log.open("wb") as out:
                rc = subprocess.run([str(submit), "--master", "local[2]", "--driver-memory", LOCAL_DEFAULTS["spark.driver.memory"],
                                     "--driver-java-options", start.java_options, "--jars", jars,
                                     str(script), tmp], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    timeout=DUMP_TIMEOUT_S, check=False).returncode
            archive = start.publish(rc)
    removed = start.removed + prune(ZIPS, ZIP_PARTS, KEPT_ZIPS)
    if archive is None:
        raise UsageError("no JVM class archive was written: another run is writing it, or the cache folder "
                         "(CDC_MONITOR_CACHE_DIR, default ~/.cache/cdc-monitor) is not writable")
    return Outcome(archive, round(time.time() - started, 1), removed)
