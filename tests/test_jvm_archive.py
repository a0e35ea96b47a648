"""A real scan maps the JVM class archive ``cdc-monitor warm-up`` writes (most of Spark's classes
come from it instead of being loaded and verified from jars)."""

from __future__ import annotations

import json
import subprocess
import sys

from cdc_monitor import jvm
from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import write_capture


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def test_scan_maps_the_class_archive(tmp_path):
    archive = jvm.archive_path()
    if not archive.is_file():  # scripts/test.sh writes it before the suite; a bare pytest run writes it here
        proc = run("warm-up", timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert str(archive) in proc.stderr
    assert archive.is_file() and archive.stat().st_size > 10_000_000
    assert not list(archive.parent.glob(f"{archive.stem}*.part"))  # no half-written archive left behind
    capture = tmp_path / "c.jsonl"
    write_capture(generate("sqlserver", events=150, seed=4, faults=True), capture)
    loaded = tmp_path / "classes.log"
    config = tmp_path / "c.toml"
    config.write_text(f'[spark]\n"spark.driver.extraJavaOptions" = "-Xlog:class+load=info:file={loaded}"\n')
    proc = run("scan", str(capture), "--config", str(config), "--output", "json", "--quiet")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["summary"]["records"] > 150  # the report is on stdout, unharmed
    lines = loaded.read_text().splitlines()
    shared = sum("shared objects file (top)" in line for line in lines)  # the dynamic archive's classes
    from_jars = sum("source: jar:" in line or "source: file:" in line for line in lines)
    assert shared > 5000 and shared > 10 * from_jars, (shared, from_jars)
