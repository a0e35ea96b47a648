"""A real Spark Connect server on loopback, started from the pip-installed pyspark (``spark-submit
--class org.apache.spark.sql.connect.service.SparkConnectServer``, what ``sbin/start-connect-server.sh``
runs, in the foreground), stopped by PID.

It starts *without* cdc-monitor's operator jar on its classpath and its Python workers run an
environment without cdc-monitor (``spark_cluster.worker_environment``): a run over it works only
if the client ships both, the jar and the package, as session artifacts."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tests.support.broker import free_port
from tests.support.process import ServerProcess
from tests.support.spark_cluster import spark_home

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer:
    """``sc://127.0.0.1:<port>``: a local[2] Spark behind a Connect endpoint."""

    def __init__(self, root: Path, python: Path, cores: int = 2) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
        env |= {"SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(python)}
        env.pop("PYTHONPATH", None)
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": str(self.port),
                "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": str(cores),
                "spark.default.parallelism": str(cores), "spark.local.dir": str(root / "local")}
        argv = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", f"local[{cores}]",
                *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}"))]
        self.log = root / "connect-server.log"
        self.process = ServerProcess(argv, self.log, self._up, "spark connect server", 120, env)

    def _up(self) -> None:
        socket.create_connection(("127.0.0.1", self.port), timeout=1).close()

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def stop(self) -> None:
        self.process.stop()


JAVA_NAMES = ("java", "javac", "jar", "jshell", "keytool", "jps", "jstack", "jcmd")


def without_java(root: Path) -> dict[str, str]:
    """The environment of a client process on a machine without Java: every program of PATH but
    Java's (symlinks in ``root/bin``), no JAVA_HOME or SPARK_HOME, and a ``java`` that records each
    start in ``root/java-started`` and fails, so any JVM launch is seen (``java_started``)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for program in Path(folder).iterdir():
            target = bin_dir / program.name
            if program.name in JAVA_NAMES or target.exists() or target.is_symlink():
                continue
            target.symlink_to(program)
    tripwire = bin_dir / "java"
    tripwire.write_text(f'#!/bin/sh\necho "$@" >> "{root / "java-started"}"\nexit 1\n')
    tripwire.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "JAVA_"))}
    env["PATH"] = str(bin_dir)
    env.pop("PYTHONPATH", None)
    return env


def java_started(root: Path) -> list[str]:
    """The command lines ``java`` was started with in a ``without_java(root)`` environment."""
    log = root / "java-started"
    return log.read_text().splitlines() if log.is_file() else []
