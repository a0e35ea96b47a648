"""The committed operator jar is what its Java sources build to (scripts/build_jar.sh is reproducible):
a change to the sources without a rebuilt jar fails here, not in a user's watch."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from cdc_monitor.jvm import OPERATOR_JAR

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac) to rebuild the jar")
def test_the_committed_jar_is_built_from_the_java_sources(tmp_path):
    built = tmp_path / "operators.jar"
    subprocess.run(["bash", str(ROOT / "scripts" / "build_jar.sh"), str(built)], check=True, capture_output=True, timeout=300)
    with zipfile.ZipFile(built) as fresh, zipfile.ZipFile(OPERATOR_JAR) as committed:
        assert sorted(fresh.namelist()) == sorted(committed.namelist())
        for name in fresh.namelist():
            assert fresh.read(name) == committed.read(name), f"{name} differs: run bash scripts/build_jar.sh and commit the jar"
