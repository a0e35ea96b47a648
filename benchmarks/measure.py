"""Run a command and measure wall time and peak memory of its process tree (from /proc)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in task.read_text().split())
    return pids


def _rss_and_kind(pid: int) -> tuple[int, str]:
    try:
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except (OSError, IndexError, ValueError):
        return 0, ""
    kind = "jvm" if cmd.endswith("java") else "python" if "python" in cmd else "other"
    return rss_pages * PAGE, kind


@dataclass
class Measured:
    seconds: float
    returncode: int
    stdout: str
    stderr: str
    peak_total_mb: float = 0.0
    peak_mb: dict[str, float] = field(default_factory=dict)  # driver (root process), jvm, python workers


def run(cmd: list[str], env: dict[str, str] | None = None, interval: float = 0.2, cwd: str | None = None) -> Measured:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    peaks = {"driver": 0, "jvm": 0, "python_workers": 0, "total": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            sizes = {"driver": 0, "jvm": 0, "python_workers": 0}
            for pid in _tree(proc.pid):
                rss, kind = _rss_and_kind(pid)
                if pid == proc.pid:
                    sizes["driver"] += rss
                elif kind == "jvm":
                    sizes["jvm"] += rss
                elif kind == "python":
                    sizes["python_workers"] += rss
            for k, v in sizes.items():
                peaks[k] = max(peaks[k], v)
            peaks["total"] = max(peaks["total"], sum(sizes.values()))
            stop.wait(interval)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, err = proc.communicate()
    stop.set()
    thread.join()
    mb = {k: round(v / 2**20, 1) for k, v in peaks.items()}
    return Measured(round(time.perf_counter() - started, 2), proc.returncode, out, err, mb.pop("total"), mb)


def in_trees(script: str, args: list[str], baseline: str | None = None) -> dict[str, dict]:
    """``script`` (a benchmark file, run by its path: a baseline checkout may predate it) once with
    this checkout's package and once, with ``baseline``, with that checkout's (its folder first on
    the path), one process each; the JSON its last line of output prints, per tree."""
    import json
    import sys

    here = str(Path(__file__).resolve().parents[1])
    rows: dict[str, dict] = {}
    for name, tree in (("this tree", here), *((("baseline", baseline),) if baseline else ())):
        env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
        r = subprocess.run([sys.executable, script, *args], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        rows[name] = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{name}: {json.dumps(rows[name])}", file=sys.stderr)
    return rows
