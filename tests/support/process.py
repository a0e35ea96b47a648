"""A loopback server process for tests: started in its own session, ready when a probe succeeds,
stopped by its process group."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class ServerProcess:
    def __init__(self, argv: list[str], log: Path, ready: Callable[[], object], name: str, timeout: float = 30.0,
                 env: dict[str, str] | None = None) -> None:
        self.log = log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}; see {log}")
            try:
                ready()
                return
            except Exception:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{name} did not get ready within {timeout}s; see {log}")

    def kill(self) -> None:
        """SIGKILL, as a crash: no clean shutdown."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()
