"""Debian's prometheus package in tests: promtool, and Prometheus/Pushgateway servers on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.broker import free_port


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install Debian's prometheus and prometheus-pushgateway packages "
                           "(scripts/test.sh does)")
    return path


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


class Server:
    """A loopback server process, stopped by its process group."""

    def __init__(self, argv: list[str], port: int, ready_path: str, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited with {self.proc.returncode}; see {log}")
            try:
                get(self.url + ready_path, timeout=1)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{argv[0]} did not get ready on {self.url}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def start_pushgateway(root: Path) -> Server:
    port = free_port()
    return Server([binary("prometheus-pushgateway"), f"--web.listen-address=127.0.0.1:{port}"], port, "/-/ready",
                  root / "pushgateway.log")


def start_prometheus(root: Path, targets: list[str], rule_files: list[str]) -> Server:
    port = free_port()
    config = root / "prometheus.yml"
    scrape = [{"job_name": f"t{i}", "honor_labels": True, "scrape_interval": "1s", "static_configs": [{"targets": [t]}]}
              for i, t in enumerate(targets)]
    config.write_text(json.dumps({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                                  "rule_files": rule_files, "scrape_configs": scrape}))
    return Server([binary("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={root / 'data'}",
                   f"--web.listen-address=127.0.0.1:{port}"], port, "/-/ready", root / "prometheus.log")


def query(prom: Server, expr: str) -> dict:
    """Prometheus' HTTP API answer for an instant query (status, data or error)."""
    url = prom.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        return json.loads(get(url))
    except urllib.error.HTTPError as err:  # 400 for a bad expression: the body says why
        return json.loads(err.read())
