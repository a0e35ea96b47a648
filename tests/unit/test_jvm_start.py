"""The driver JVM's start options: the class archive when one was written, C1 and the serial
collector for small inputs, one archive writer at a time."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cdc_monitor.runtime import jvm


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CDC_MONITOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CDC_MONITOR_JVM_CACHE", raising=False)
    return tmp_path


def test_no_archive_no_sharing_option(cache):
    start = jvm.DriverStart()
    assert "SharedArchiveFile" not in start.java_options and "ArchiveClassesAtExit" not in start.java_options
    assert start.java_options.startswith("-Xlog:disable")  # JVM log lines never reach stdout
    assert start.dump_to is None  # an ordinary run never writes the archive by itself


def test_archive_is_mapped_when_present(cache):
    archive = jvm.archive_path()
    archive.write_bytes(b"x")
    assert archive.parent == cache
    assert f"-XX:SharedArchiveFile={archive}" in jvm.DriverStart().java_options


def test_archive_key_follows_extra_jars(cache):
    assert jvm.archive_path() != jvm.archive_path({"spark.jars": "/opt/spark-sql-kafka.jar"})


def test_off_ignores_the_archive(cache, monkeypatch):
    jvm.archive_path().write_bytes(b"x")
    monkeypatch.setenv("CDC_MONITOR_JVM_CACHE", "off")
    assert "SharedArchiveFile" not in jvm.DriverStart().java_options


def test_small_input_options(cache):
    assert jvm.SMALL_INPUT in jvm.DriverStart(small_input=True).java_options
    assert jvm.SMALL_INPUT not in jvm.DriverStart(small_input=False).java_options


def test_one_writer_at_a_time(cache):
    first = jvm.DriverStart(force_dump=True)
    assert first.dump_to is not None and f"-XX:ArchiveClassesAtExit={first.dump_to}" in first.java_options
    assert first.dump_to.name.endswith(f".{os.getpid()}.part")  # renamed only once its JVM exited cleanly
    second = jvm.DriverStart(force_dump=True)  # the lock's holder (this process) is alive
    assert second.dump_to is None


def test_stale_lock_is_taken_over(cache):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = jvm.archive_path().with_suffix(".lock")
    lock.write_text(dead.stdout.strip())
    assert jvm.DriverStart(force_dump=True).dump_to is not None
    assert lock.read_text() == str(os.getpid())


def _aged(path, seconds_ago):
    path.write_bytes(b"x")
    when = time.time() - seconds_ago
    os.utime(path, (when, when))
    return path


def _dead_pid():
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout.strip()


def test_the_cache_keeps_the_most_recently_used_archives_and_no_dead_writers_parts(cache):
    archives = [_aged(cache / f"spark-driver-{i:016x}.jsa", 100 * i) for i in range(6)]  # [0] newest
    new = _aged(cache / "spark-driver-ffffffffffffffff.jsa", 10_000)  # just published (an old mtime)
    dead_part = _aged(cache / f"spark-driver-0000000000000009.{_dead_pid()}.part", 50)
    own_part = _aged(cache / f"spark-driver-0000000000000008.{os.getpid()}.part", 50)  # a writer still at work
    others = [_aged(cache / name, 99_999) for name in ("cdc_monitor-0.1.0-abc.zip", "spark-driver-1.lock")]
    removed = jvm.prune(jvm.ARCHIVES, jvm.ARCHIVE_PARTS, jvm.KEPT_ARCHIVES, current=new)
    kept = sorted(p.name for p in cache.glob("spark-driver-*.jsa"))
    assert kept == sorted([new.name, *(a.name for a in archives[:jvm.KEPT_ARCHIVES - 1])])
    assert set(removed) == {*archives[jvm.KEPT_ARCHIVES - 1:], dead_part}
    assert own_part.exists() and all(p.exists() for p in others)


def test_a_mapped_archive_counts_as_used(cache):
    archive = _aged(jvm.archive_path(), 10_000)
    assert f"-XX:SharedArchiveFile={archive}" in jvm.DriverStart().java_options
    assert archive.stat().st_mtime > time.time() - 60


def test_a_new_package_zip_removes_the_oldest(cache):
    from cdc_monitor.runtime.session import package_zip

    old = [_aged(cache / f"cdc_monitor-0.0.{i}-{i:012x}.zip", 100 * (i + 1)) for i in range(jvm.KEPT_ZIPS + 2)]
    dead_part = _aged(cache / f"cdc_monitor-0.0.9-000000000009.zip.{_dead_pid()}.part", 50)
    zip_path = package_zip()
    assert zip_path.is_file() and zip_path not in old
    kept = set(cache.glob("cdc_monitor-*.zip"))
    assert kept == {zip_path, *old[:jvm.KEPT_ZIPS - 1]} and not dead_part.exists()
    again = _aged(zip_path, 10_000)  # built before: used again, not rebuilt, and counted as used now
    assert package_zip() == again and again.stat().st_mtime > time.time() - 60


def test_archive_key_follows_a_jar_built_again(cache, tmp_path):
    """The operator jar rebuilt (another size or time) is another classpath: the JVM would refuse the
    old archive, so it has another key and warm-up --if-missing writes it again."""
    jar = tmp_path / "op.jar"
    jar.write_bytes(b"one")
    before = jvm.archive_path({"spark.jars": str(jar)})
    assert jvm.archive_path({"spark.jars": str(jar)}) == before
    jar.write_bytes(b"two, longer")
    assert jvm.archive_path({"spark.jars": str(jar)}) != before


def test_warm_up_if_missing_keeps_an_archive_already_written(cache, monkeypatch):
    from cdc_monitor.verbs import warm_up

    archive = jvm.archive_path()
    archive.write_bytes(b"x")
    monkeypatch.setattr(warm_up.subprocess, "run", lambda *a, **k: pytest.fail("spark-submit ran"))
    out = warm_up.run(warm_up.Settings(if_missing=True))
    assert (out.archive, out.written) == (archive, False) and archive.read_bytes() == b"x"
