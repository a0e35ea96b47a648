"""The committed operator jar for the installed pyspark is what its Java sources build to
(scripts/build_jar.sh is reproducible): a change to the sources without a rebuilt jar fails here,
not in a user's watch. A jar built for another Spark minor is refused before Spark starts.

Without a JDK (javac) the rebuild test fails rather than skips: a skip would pass a stale jar green
on a JRE-only machine, the very case it exists to catch. scripts/test.sh installs a JDK."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from cdc_monitor.runtime import jvm
from cdc_monitor.runtime.jvm import operator_jar

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_jar_is_built_from_the_java_sources(tmp_path):
    if shutil.which("javac") is None or shutil.which("jar") is None:
        pytest.fail("no JDK (javac, jar) on PATH: this test rebuilds the operator jar from cdc_monitor/java/*.java; "
                    "install one (apt-get install openjdk-17-jdk-headless, or bash scripts/test.sh as root)")
    built = tmp_path / "operators.jar"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "build_jar.sh"), str(built)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with zipfile.ZipFile(built) as fresh, zipfile.ZipFile(operator_jar()) as committed:
        assert sorted(fresh.namelist()) == sorted(committed.namelist()), "run bash scripts/build_jar.sh and commit the jar"
        for name in fresh.namelist():
            assert fresh.read(name) == committed.read(name), f"{name} differs: run bash scripts/build_jar.sh and commit the jar"


def test_the_jar_records_the_spark_minor_it_was_built_against():
    import pyspark

    assert jvm.jar_spark_minor(operator_jar()) == ".".join(pyspark.__version__.split(".")[:2])
    assert jvm.operator_jar_problem() is None
    assert str(operator_jar()) in jvm.with_operator_jar("a.jar").split(",")


def test_a_jar_built_for_another_spark_is_refused_with_the_fix(tmp_path, monkeypatch):
    folder = tmp_path / "java"
    folder.mkdir()
    with zipfile.ZipFile(folder / operator_jar().name, "w") as zf:
        zf.writestr(jvm.JAR_STAMP, "spark.minor=3.9\n")
    monkeypatch.setattr(jvm, "JAR_FOLDER", folder)
    problem = jvm.operator_jar_problem()
    assert problem is not None and "built against Spark 3.9" in problem and "scripts/build_jar.sh" in problem
    assert jvm.with_operator_jar("a.jar") == "a.jar"
    # the decoder lives in that jar: a scan refuses too, before Spark starts, with the same fix
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    capture = tmp_path / "c.jsonl"
    capture.write_text('{"topic": "t", "partition": 0, "offset": 0, "key": null, "payload": "{}", "ts": 1}\n')
    got = CliRunner().invoke(cli, ["scan", str(capture)])
    assert got.exit_code == 2 and "cdc-monitor's decoder" in got.output and "scripts/build_jar.sh" in got.output
    assert "starting Spark" not in got.output
    (folder / operator_jar().name).unlink()
    assert "has no cdc-monitor-operators-spark" in (jvm.operator_jar_problem() or "")
