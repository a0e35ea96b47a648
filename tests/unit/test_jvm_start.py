"""The driver JVM's start options: the class archive when one was written, C1 and the serial
collector for small inputs, one archive writer at a time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cdc_monitor import jvm


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
