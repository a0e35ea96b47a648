"""The driver JVM's start-up: a class-data-sharing archive of the classes a scan loads, and the JIT
choice for small inputs.

A cold scan spends seconds loading and verifying Spark's classes and interpreting Catalyst before
the JIT catches up (measured on 2 cores, an 861-record capture: 19.7-20.2 s whole process; with the
archive 16.7 s; with the archive and the C1-only JIT 13.2-13.7 s). So:

- **Class-data sharing (AppCDS).** ``cdc-monitor warm-up`` scans a small generated capture in a
  JVM that writes the classes it loaded to an archive at its exit (``-XX:ArchiveClassesAtExit``);
  every later run maps it (``-XX:SharedArchiveFile``). Writing it costs ~15 s more than a scan,
  so no ordinary run writes it by itself: a CI runner that starts fresh would pay that on every
  gate and never profit; run ``warm-up`` once per machine or bake it into the image. The archive
  is keyed by the Java binary, the pyspark install and extra jars, lives in
  ``$CDC_MONITOR_CACHE_DIR`` (default ``~/.cache/cdc-monitor``), is written under a lock to a
  temporary name and renamed only after its JVM exited cleanly (a truncated archive crashes the JVM
  that maps it). ``CDC_MONITOR_JVM_CACHE=off`` ignores it. Writing one removes all but the
  ``KEPT_ARCHIVES`` most recently used (each Java or pyspark upgrade, virtualenv or CI clone
  writes its own: they piled up by the gigabyte).
- **C1 and the serial collector for small inputs.** ``-XX:TieredStopAtLevel=1`` compiles quickly
  and optimises less: it wins on a few thousand records and loses on large windows (100k events:
  65 s instead of 50 s); the serial collector skips G1's set-up and concurrent threads (12.4 s
  instead of 14.3 s with the archive and C1). Both only when the input is known to be small
  before Spark starts.

JVM log lines go to stderr (errors only), never into a report on stdout: an archive another JDK wrote
is skipped silently.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

current: DriverStart | None = None  # the start of this process's driver, when it writes the archive
LOGGING = "-Xlog:disable -Xlog:all=error:stderr"
SMALL_INPUT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
CLASSPATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
# watch's JVM operator (cdc_monitor/java, built by scripts/build_jar.sh): every session has it in spark.jars
OPERATOR_JAR = Path(__file__).resolve().parent / "java" / "cdc-monitor-operators.jar"
DUMP_TIMEOUT_S = 300
# The cache keeps the most recently used few of each kind it writes: an archive (~170 MB) per Java,
# pyspark install and jars (a Java or pyspark upgrade, another virtualenv, a CI clone each write
# one), a package zip per version of the sources. Older ones are removed when a new one is written.
KEPT_ARCHIVES = 3
KEPT_ZIPS = 5
ARCHIVES, ARCHIVE_PARTS = "spark-driver-*.jsa", "spark-driver-*.part"
ZIPS, ZIP_PARTS = "cdc_monitor-*.zip", "cdc_monitor-*.zip.*.part"


def with_operator_jar(jars: str | None) -> str:
    """A session's ``spark.jars``: the user's jars, then the operator jar."""
    return ",".join(j for j in (jars, str(OPERATOR_JAR)) if j)


def enabled() -> bool:
    return os.environ.get("CDC_MONITOR_JVM_CACHE", "auto").strip().lower() not in ("off", "0", "false", "no")


def cache_dir() -> Path:
    if os.environ.get("CDC_MONITOR_CACHE_DIR"):
        return Path(os.environ["CDC_MONITOR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cdc-monitor"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else (shutil.which("java") or "java")
    return os.path.realpath(java)


def archive_path(settings: Mapping[str, str] | None = None) -> Path:
    """Where the archive for this Java, this pyspark and the session's extra jars lives (without
    ``settings``: a session's defaults, the operator jar)."""
    import pyspark

    java = _java()
    jars = "|".join((settings or {"spark.jars": with_operator_jar(None)}).get(k, "") for k in CLASSPATH_SETTINGS)
    stamp = f"{java}|{_mtime(java)}|{pyspark.__version__}|{os.path.dirname(pyspark.__file__)}|{jars}"
    return cache_dir() / f"spark-driver-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.jsa"


def _mtime(path: str) -> int:
    try:
        return int(os.stat(path).st_mtime)
    except OSError:
        return 0


def touch(path: Path) -> None:
    """Mark a cached file as used now (what ``prune`` keeps is the most recently used)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def prune(pattern: str, parts: str, keep: int, current: Path | None = None) -> list[Path]:
    """Remove all but the ``keep`` most recently used cache files matching ``pattern`` (``current``,
    when given, is one of them and always stays), and the partial files matching ``parts``
    (``<name>.<pid>.part``) whose writer is gone. A process mapping a removed archive keeps its
    mapping; one about to start a JVM with it starts without class sharing. Returns what was removed."""
    folder = cache_dir()
    others = sorted((p for p in folder.glob(pattern) if p.is_file() and p != current),
                    key=lambda p: _mtime(str(p)), reverse=True)
    doomed = others[max(keep - (current is not None), 0):]
    for part in folder.glob(parts):
        pid = part.name.rsplit(".", 2)[-2]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            doomed.append(part)
    removed = []
    for path in doomed:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _take_lock(lock: Path) -> bool:
    """One writer per archive; a lock whose process is gone is stale."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _pid_alive(holder):
                return False
            with contextlib.suppress(OSError):
                lock.unlink()
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return True
    return False


class DriverStart:
    """The JVM options of one driver start and, when it writes the archive, the finishing step."""

    def __init__(self, small_input: bool = False, settings: Mapping[str, str] | None = None, force_dump: bool = False):
        self.options: list[str] = [LOGGING]
        self.dump_to: Path | None = None
        self.archive: Path | None = None
        self.lock: Path | None = None
        self.removed: list[Path] = []  # older archives the published one replaced in the cache
        if small_input:
            self.options.append(SMALL_INPUT)
        if not (enabled() or force_dump):
            return
        archive = archive_path(settings)
        self.archive = archive
        if not force_dump:
            if archive.is_file():
                self.options.append(f"-XX:SharedArchiveFile={archive}")
                touch(archive)
            return
        try:
            archive.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return  # no writable cache: warm-up reports that nothing was written
        lock = archive.with_suffix(".lock")
        if _take_lock(lock):
            self.lock = lock
            self.dump_to = archive.with_name(f"{archive.stem}.{os.getpid()}.part")
            self.options.append(f"-XX:ArchiveClassesAtExit={self.dump_to}")

    @property
    def java_options(self) -> str:
        return " ".join(self.options)

    def register(self, spark: SparkSession) -> None:
        """When this JVM writes the archive: finish it when the process exits."""
        global current
        if self.dump_to is not None:
            current = self
            atexit.register(self.finish, spark)

    def finish(self, spark: SparkSession) -> Path | None:
        """Stop Spark, let the JVM exit and write the archive, and publish it only if it did so
        cleanly. Returns the archive's path when one was published."""
        if self.dump_to is None or self.archive is None:
            return None
        dump_to, self.dump_to = self.dump_to, None
        proc = getattr(spark.sparkContext._gateway, "proc", None)
        published = None
        try:
            spark.stop()
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()  # the gateway exits on EOF; the archive is written at exit
                rc = proc.wait(timeout=DUMP_TIMEOUT_S)
                if rc == 0 and dump_to.is_file() and dump_to.stat().st_size > 0:
                    os.replace(dump_to, self.archive)
                    published = self.archive
                    self.removed = prune(ARCHIVES, ARCHIVE_PARTS, KEPT_ARCHIVES, current=published)
        except Exception:
            published = None
        finally:
            with contextlib.suppress(OSError):
                dump_to.unlink()
            if self.lock is not None:
                with contextlib.suppress(OSError):
                    self.lock.unlink()
        return published


def warm_up() -> tuple[Path | None, float, list[Path]]:
    """Write the archive now (``cdc-monitor warm-up``): scan a small generated faulty capture of
    one flavour in a JVM that writes the archive at its exit; tidy the cache (older archives and
    package zips beyond those kept). Returns (archive or None, seconds, the files removed)."""
    import tempfile
    import time

    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.capture import write_capture
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.capture import read_capture
    from cdc_monitor.spark import get_spark

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="cdc-monitor-warm-up-") as tmp:
        paths = []
        for flavour in ("postgresql",):
            path = Path(tmp) / f"{flavour}.jsonl"
            write_capture(generate(flavour, events=120, seed=3, faults=True), path)
            paths.append(str(path))
        spark = get_spark(small_input=True, write_archive=True)
        run_scan(read_capture(spark, paths), ScanConfig())
        archive = current.finish(spark) if current is not None else None
    removed = (current.removed if current is not None else []) + prune(ZIPS, ZIP_PARTS, KEPT_ZIPS)
    return archive, time.time() - started, removed
