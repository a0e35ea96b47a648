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

The operators jar (cdc_monitor/java) per Spark minor, its classes reached through a classic session's
JVM, and this package as a zip for a cluster's Python workers (``package_zip``) live here too: the
session (session.py) and Spark Connect's artifacts (connect.py) read them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.runtime.settings import SMALL_INPUT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType

LOGGING = "-Xlog:disable -Xlog:all=error:stderr"
CLASSPATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
# watch's JVM operator (cdc_monitor/java, built by scripts/build_jar.sh), one jar per Spark minor:
# every session has the installed pyspark's in spark.jars
JAR_FOLDER = Path(__file__).resolve().parent.parent / "java"
JAR_STAMP = "cdcmonitor/build.properties"
DUMP_TIMEOUT_S = 300
# The cache keeps the most recently used few of each kind it writes: an archive (~170 MB) per Java,
# pyspark install and jars (a Java or pyspark upgrade, another virtualenv, a CI clone each write
# one), a package zip per version of the sources. Older ones are removed when a new one is written.
KEPT_ARCHIVES = 3
KEPT_ZIPS = 5
ARCHIVES, ARCHIVE_PARTS = "spark-driver-*.jsa", "spark-driver-*.part"
ZIPS, ZIP_PARTS = "cdc_monitor-*.zip", "cdc_monitor-*.zip.*.part"


def spark_minor() -> str:
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


def operator_jar() -> Path:
    """The operator jar built for the installed pyspark's minor version (it may be missing)."""
    return JAR_FOLDER / f"cdc-monitor-operators-spark{spark_minor()}.jar"


def jar_spark_minor(jar: Path) -> str | None:
    """The Spark minor ``jar`` was built against, as it records it (None: no readable record)."""
    import zipfile

    try:
        with zipfile.ZipFile(jar) as zf:
            lines = zf.read(JAR_STAMP).decode().splitlines()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    return next((line.split("=", 1)[1].strip() for line in lines if line.startswith("spark.minor=")), None)


def operator_jar_problem(needs: str = "watch's JVM operator") -> str | None:
    """Why ``needs`` (watch's operator, the decoder: a class of the operators jar) cannot run on this
    pyspark, as a fix-it message (None: it can)."""
    jar, minor = operator_jar(), spark_minor()
    built = jar_spark_minor(jar) if jar.is_file() else None
    if built == minor:
        return None
    have = sorted(p.name for p in JAR_FOLDER.glob("cdc-monitor-operators-spark*.jar"))
    what = f"{jar.name} was built against Spark {built}" if jar.is_file() else f"this cdc-monitor has no {jar.name}"
    return (f"{needs} needs a jar built for the installed pyspark {minor}, but {what} "
            f"(it has {', '.join(have) or 'none'}): install a pyspark this cdc-monitor supports (see its README), "
            "or build the jar for this one from the sources: bash scripts/build_jar.sh (needs a JDK)")


def class_missing(exc: BaseException) -> bool:
    """Whether ``exc`` (a UDF's registration failing) says its class is not on the session's classpath."""
    return any(s in str(exc) for s in ("ClassNotFound", "Can not load class", "CANNOT_LOAD"))


def register_java_function(spark: SparkSession, name: str, java_class: str, returns: DataType | str, what: str) -> None:
    """A UDF of the operator jar registered in a classic ``spark`` as ``name`` (Spark's public
    ``registerJavaFunction``; idempotent). A session without the jar on its classpath is a fix-it
    error naming ``what`` needs it (a Spark Connect session's: connect.register_on_server)."""
    try:
        spark.udf.registerJavaFunction(name, java_class, returns)
    except Exception as exc:  # the class is not on the session's classpath
        if not class_missing(exc):
            raise
        raise EnvironmentProblem(
            f"{what} ({java_class}) is not on this Spark session's classpath: start the session with "
            f"cdc_monitor.runtime.session.get_spark (it adds {operator_jar()} to spark.jars), or pass that jar "
            "with --jars to spark-submit") from None


def operator_class(spark: Any, java_class: str) -> Any:
    """``java_class`` of the operators jar in ``spark``'s JVM (a classic session), through py4j; a
    one-line fix-it ``EnvironmentProblem`` when the jar is not on the driver's classpath (py4j then
    gives a package, not a class)."""
    from py4j.java_gateway import JavaPackage

    found: Any = spark._jvm
    for part in java_class.split("."):
        found = getattr(found, part)
    if isinstance(found, JavaPackage):
        raise EnvironmentProblem(operator_jar_problem() or (
            f"{java_class} is not on the Spark driver's classpath: start Spark through cdc-monitor "
            f"(it adds {operator_jar()} to spark.jars), or pass that jar with --jars to spark-submit"))
    return found


def with_operator_jar(jars: str | None) -> str:
    """A session's ``spark.jars``: the user's jars, then the operator jar for this pyspark (when
    there is one built for it: without, everything but watch runs)."""
    own = str(operator_jar()) if operator_jar_problem() is None else None
    return ",".join(j for j in (jars, own) if j)


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
    jars = "|".join(_stamped((settings or {"spark.jars": with_operator_jar(None)}).get(k, "")) for k in CLASSPATH_SETTINGS)
    stamp = f"{java}|{_mtime(java)}|{pyspark.__version__}|{os.path.dirname(pyspark.__file__)}|{jars}"
    return cache_dir() / f"spark-driver-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.jsa"


def _stamped(paths: str) -> str:
    """A classpath setting with each local jar's time and size: a jar built again (the operator jar
    after a change to cdc_monitor/java) is another classpath, whose archive the JVM would refuse."""
    out = []
    for p in paths.split(","):
        try:
            st = os.stat(p)
            out.append(f"{p}@{int(st.st_mtime)}:{st.st_size}")
        except OSError:
            out.append(p)  # (not a local file: a Maven coordinate, a URL)
    return ",".join(out)


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

    def publish(self, exit_code: int) -> Path | None:
        """After the JVM that wrote the archive exited: publish it if that JVM exited cleanly
        (a truncated archive crashes the JVM that maps it). Returns the archive's path when one was."""
        if self.dump_to is None or self.archive is None:
            return None
        dump_to, self.dump_to = self.dump_to, None
        published = None
        try:
            if exit_code == 0 and dump_to.is_file() and dump_to.stat().st_size > 0:
                os.replace(dump_to, self.archive)
                published = self.archive
                self.removed = prune(ARCHIVES, ARCHIVE_PARTS, KEPT_ARCHIVES, current=published)
        finally:
            with contextlib.suppress(OSError):
                dump_to.unlink()
            if self.lock is not None:
                with contextlib.suppress(OSError):
                    self.lock.unlink()
        return published


def package_zip() -> Path:
    """This cdc_monitor package as a zip for executors' Python workers (``addPyFile``), so a
    cluster runs exactly the driver's code whatever is installed there; built once per version
    of the sources, in the cache folder."""
    import zipfile

    import cdc_monitor

    root = Path(cdc_monitor.__file__).resolve().parent
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for p in files:
        stat = p.stat()
        digest.update(f"{p.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    target = cache_dir() / f"cdc_monitor-{cdc_monitor.__version__}-{digest.hexdigest()[:12]}.zip"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in files:
                zf.write(p, str(Path("cdc_monitor") / p.relative_to(root)))
        os.replace(partial, target)
        prune(ZIPS, ZIP_PARTS, KEPT_ZIPS, current=target)
    else:
        touch(target)
    return target
