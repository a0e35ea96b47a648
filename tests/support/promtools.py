"""Debian's prometheus package in tests: promtool, and Prometheus/Pushgateway servers on loopback."""

from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.broker import free_port
from tests.support.process import ServerProcess


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install Debian's prometheus and prometheus-pushgateway packages "
                           "(scripts/test.sh does)")
    return path


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


class Server(ServerProcess):
    """A loopback HTTP server process, ready when ``ready_path`` answers."""

    def __init__(self, argv: list[str], port: int, ready_path: str, log: Path) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        super().__init__(argv, log, lambda: get(self.url + ready_path, timeout=1), argv[0])


def start_pushgateway(root: Path) -> Server:
    port = free_port()
    return Server([binary("prometheus-pushgateway"), f"--web.listen-address=127.0.0.1:{port}"], port, "/-/ready",
                  root / "pushgateway.log")


def start_prometheus(root: Path, targets: list[str], rule_files: list[str], scrape_extra: list[dict] | None = None) -> Server:
    """``scrape_extra``: per target, more of its scrape configuration (scheme, basic_auth, tls_config...)."""
    port = free_port()
    config = root / "prometheus.yml"
    extra = scrape_extra or [{} for _ in targets]
    scrape = [{"job_name": f"t{i}", "honor_labels": True, "scrape_interval": "1s", "static_configs": [{"targets": [t]}], **x}
              for i, (t, x) in enumerate(zip(targets, extra, strict=True))]
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
