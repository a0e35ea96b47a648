"""Packaging: the wheel built from this checkout holds every module and data file, installs into
a fresh virtual environment, and runs from there (not from the checkout)."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    dist, src = tmp_path / "dist", tmp_path / "src"  # built from a copy: setuptools writes build/ beside the sources
    shutil.copytree(ROOT / "cdc_monitor", src / "cdc_monitor", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=300)
    (wheel,) = dist.glob("cdc_monitor-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "cdc_monitor").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert sources - shipped == set()  # every module, and the data files (the vendored Chart.js, py.typed)
    assert "cdc_monitor/sinks/vendor/chart.umd.min.js" in shipped

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=120)
    py = env / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    # the dependencies (pyspark, ...) are this suite's: seen through a .pth, without the checkout itself
    env_site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    (env_site / "suite-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    where = subprocess.run([str(py), "-c", "import cdc_monitor; print(cdc_monitor.__file__)"], capture_output=True, text=True,
                           cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(env_site)), where
    helped = subprocess.run([str(env / "bin" / "cdc-monitor"), "scan", "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert helped.returncode == 0 and "Exit codes" in helped.stdout, helped.stderr
    made = subprocess.run([str(env / "bin" / "cdc-monitor"), "generate", "--flavour", "mysql", "--events", "20",
                           "--output", str(tmp_path / "c.jsonl")], capture_output=True, text=True, cwd=tmp_path)
    assert made.returncode == 0 and (tmp_path / "c.jsonl").stat().st_size > 0, made.stderr
    # a report page from the installed package: its data files are found where pip put them
    page = subprocess.run([str(py), "-c", (
        "from cdc_monitor.pipeline import ScanResult; from cdc_monitor.sinks.html_report import render_html; "
        "print(len(render_html(ScanResult(window={}, summary=dict(records=0, data_events=0, tombstones=0, "
        "transaction_markers=0, invalid_records=0), events_by_table=[]))))")], capture_output=True, text=True, cwd=tmp_path)
    assert page.returncode == 0 and int(page.stdout) > 200_000, page.stderr  # Chart.js inlined
