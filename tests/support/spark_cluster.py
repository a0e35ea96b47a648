"""A real Spark standalone cluster on loopback: a master and two workers started from the
pip-installed pyspark (``spark-class``), each a JVM of its own, stopped by PID.

The workers' executors run Python from ``worker_python``: an environment with cdc-monitor's
third-party dependencies but without cdc-monitor itself, so a job only works if the driver ships
the package (what a real cluster needs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

from tests.support.broker import free_port
from tests.support.process import ServerProcess


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def worker_environment(root: Path) -> Path:
    """A virtualenv of this interpreter that sees this environment's site-packages as a plain path
    (so their ``.pth`` files, cdc-monitor's editable install among them, are not processed): the
    dependencies import, cdc_monitor does not. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "driver-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # every interpreter start of this environment leaves a line: proof the executors ran it
    Path(site, "sitecustomize.py").write_text(
        "import os\nwith open(os.path.join(os.path.dirname(__file__), 'starts.log'), 'a') as fh:\n"
        "    fh.write(f'{os.getpid()}\\n')\n")
    return python


def interpreter_starts(python: Path) -> int:
    """How many times the environment's interpreter has started (see worker_environment)."""
    log = next(python.parent.parent.glob("lib/python*/site-packages/starts.log"), None)
    return len(log.read_text().splitlines()) if log is not None else 0


class SparkStandalone:
    """``spark://127.0.0.1:<port>`` with two one-core workers."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.workers_wanted = workers
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        env |= {"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(root / "logs"),
                "SPARK_WORKER_DIR": str(root / "work"), "SPARK_NO_DAEMONIZE": "1"}
        env.pop("PYTHONPATH", None)
        spark_class = str(spark_home() / "bin" / "spark-class")
        self.processes: list[ServerProcess] = []
        try:
            self.processes.append(ServerProcess(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self.ui_port)], root / "master.log", self._master_up, "spark master", 60, env))
            for i in range(workers):
                self.processes.append(ServerProcess(
                    [spark_class, "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                     "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                     "--work-dir", str(root / f"work-{i}")], root / f"worker-{i}.log", lambda: None, f"spark worker {i}",
                    60, env))
            self._wait_for_workers()
        except Exception:
            self.stop()
            raise

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
            return json.load(r)

    def _master_up(self) -> None:
        self.state()

    def _wait_for_workers(self, timeout: float = 60) -> None:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            alive = [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= self.workers_wanted:
                return
            time.sleep(0.3)
        raise RuntimeError(f"{self.workers_wanted} workers did not register with {self.url} in {timeout}s")

    def stop(self) -> None:
        for p in reversed(self.processes):
            p.stop()
