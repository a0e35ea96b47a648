"""What every measurement shares: the registry, the capture cache, the whole-process runner (wall
time and the process tree's peak RSS, with the measured tree's ``cdc_monitor`` first on the path),
the side-by-side rounds and the markdown table."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PY = sys.executable
HERE = Path(__file__).resolve().parents[1]  # this checkout: its benchmarks always, its cdc_monitor unless --baseline
PAGE = os.sysconf("SC_PAGE_SIZE")
FLAVOURS = ("mysql", "postgresql", "sqlserver", "oracle")
BARE = ("import os; os.environ.setdefault('SPARK_LOCAL_IP', '127.0.0.1');"
        "from pyspark.sql import SparkSession;"
        "s = SparkSession.builder.master('local[*]').config('spark.ui.enabled', 'false').getOrCreate();"
        "s.sparkContext.setLogLevel('FATAL'); print(s.range(1000).selectExpr('sum(id)').first()[0]); s.stop()")


# -- the registry: name -> function and its options ------------------------------------------------

@dataclass(frozen=True)
class Measurement:
    name: str
    run: Callable[[argparse.Namespace], None]
    options: tuple[tuple[tuple[str, ...], dict], ...]
    events: str  # the default of --events

    @property
    def help(self) -> str:
        return (self.run.__doc__ or "").strip()


REGISTRY: dict[str, Measurement] = {}


def option(*flags: str, **kw: object) -> tuple[tuple[str, ...], dict]:
    return flags, kw


def measurement(name: str, *options: tuple[tuple[str, ...], dict], events: str = "100000"):  # type: ignore[no-untyped-def]
    """Register ``fn(opts)`` as ``python -m benchmarks NAME``, with its own ``options`` beside the common ones."""
    def register(fn: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
        REGISTRY[name] = Measurement(name, fn, options, events)
        return fn
    return register


def trees(opts: argparse.Namespace, label: str = "scan") -> dict[str, Path]:
    """The checkouts measured: this one, and ``--baseline`` (an earlier revision's ``git worktree``)."""
    return {label: HERE, **({f"{label} (baseline)": Path(opts.baseline).resolve()} if opts.baseline else {})}


# -- the capture cache -----------------------------------------------------------------------------

def capture(flavour: str = "mixed", events: int = 100_000, seed: int = 2, *flags: str, work: Path | None = None) -> list[str]:
    """Generated captures (this checkout's generator), kept in ``benchmarks/.work`` by flavour, size, seed
    and generator flags; ``mixed``: the four flavours, ``events`` shared between them."""
    folder = (work or HERE / "benchmarks" / ".work") / "-".join([flavour, str(events), f"s{seed}", *(f.strip("-") for f in flags)])
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in FLAVOURS if flavour == "mixed" else (flavour,):
        path = folder / f"{f}.jsonl"
        if not path.exists():
            n = events // len(FLAVOURS) if flavour == "mixed" else events
            cdc(["generate", "--flavour", f, "--events", str(n), "--seed", str(seed), *flags, "--output", f"{path}.tmp"])
            Path(f"{path}.tmp").rename(path)
        paths.append(str(path))
    return paths


def records(paths: list[str]) -> int:
    return sum(1 for p in paths for line in open(p, "rb") if line.strip())


# -- the whole-process runner ----------------------------------------------------------------------

@dataclass
class Run:
    seconds: float
    code: int
    out: str
    err: str
    peak_mb: float = 0.0  # the process tree's
    by_kind: dict[str, float] = field(default_factory=dict)  # driver (the root), jvm, python workers

    def json(self) -> dict:
        """The JSON document on the last line of its output."""
        return json.loads(self.out.strip().splitlines()[-1])


def tree_of(root: int) -> list[int]:
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                todo.extend(int(c) for c in task.read_text().split())
    return pids


def cpu_seconds(root: int | None = None) -> float:
    """User and system CPU seconds of ``root``'s process tree so far (this process by default: in local
    mode the driver JVM, with the executors, and the Python workers are its children)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in tree_of(root or os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def rss(pid: int) -> tuple[int, str]:
    """Resident bytes of ``pid`` and its kind (jvm, python, other)."""
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except (OSError, IndexError, ValueError):
        return 0, ""
    return pages * PAGE, "jvm" if cmd.endswith("java") else "python" if "python" in cmd else "other"


def tree_mb(pid: int) -> float:
    return round(sum(rss(p)[0] for p in tree_of(pid)) / 2**20, 1)


def env_of(tree: Path | None) -> dict[str, str]:
    """The environment a process of ``tree`` runs in: its checkout first on the path (with ``-P``, before
    the working directory and the installed package)."""
    return {**os.environ, "PYTHONPATH": str(tree or HERE)}


def run(cmd: list[str], tree: Path | None = None, check: bool = True, cwd: Path | None = None) -> Run:
    """``cmd`` as a process of ``tree``: wall seconds and peak RSS of its process tree (sampled from /proc)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_of(tree), cwd=cwd)
    peaks = {"driver": 0, "jvm": 0, "python_workers": 0, "total": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            sizes = {"driver": 0, "jvm": 0, "python_workers": 0}
            for pid in tree_of(proc.pid):
                size, kind = rss(pid)
                sizes["driver" if pid == proc.pid else "jvm" if kind == "jvm" else "python_workers" if kind == "python"
                      else "driver"] += size
            for k, v in sizes.items():
                peaks[k] = max(peaks[k], v)
            peaks["total"] = max(peaks["total"], sum(sizes.values()))
            stop.wait(0.2)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    out, err = proc.communicate()
    stop.set()
    thread.join()
    mb = {k: round(v / 2**20, 1) for k, v in peaks.items()}
    got = Run(round(time.perf_counter() - started, 2), proc.returncode, out, err, mb.pop("total"), mb)
    if check and got.code != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... exited {got.code}:\n{err[-3000:]}")
    return got


def cdc(args: list[str], tree: Path | None = None, check: bool = True) -> Run:
    """A whole ``cdc-monitor`` process of ``tree``."""
    return run([PY, "-P", "-m", "cdc_monitor", *args], tree, check)


def scan(paths: list[str], tree: Path | None = None, *extra: str, check: bool = True) -> dict:
    """A whole ``cdc-monitor scan`` process: seconds, peak RSS, exit and the JSON report (or its last error line)."""
    report = Path(paths[0]).parent / f"report-{os.getpid()}.json"
    r = cdc(["scan", *(str(Path(p).resolve()) for p in paths), "--output", "json", "--report-file", str(report),
             "--quiet", "--fail-on", "never", *extra], tree, check)
    got = {"seconds": r.seconds, "peak_mb": r.peak_mb, "jvm_mb": r.by_kind.get("jvm", 0), "exit": r.code}
    if r.code != 0:
        return {**got, "error": (r.err.strip().splitlines() or [""])[-1][:160]}
    return {**got, "report": json.loads(report.read_text())}


def child(target: str, *args: object, tree: Path | None = None, check: bool = True) -> Run:
    """``module:function(*args)`` in a process of ``tree``: that checkout's ``cdc_monitor`` (and ``tests``),
    this checkout's ``benchmarks`` (a baseline may predate it). The function prints JSON last."""
    boot = ("import json, sys, cdc_monitor; sys.path.insert(0, sys.argv[1]); import benchmarks; sys.path.pop(0);"
            "import importlib; m, f = sys.argv[2].split(':'); getattr(importlib.import_module(m), f)(*json.loads(sys.argv[3]))")
    return run([PY, "-P", "-c", boot, str(HERE), target, json.dumps(list(args))], tree, check)


def bare() -> dict:
    """A bare PySpark process summing ``spark.range(1000)``: what any Spark program pays to start."""
    return {"seconds": run([PY, "-P", "-c", BARE]).seconds}


# -- side-by-side rounds and the table -------------------------------------------------------------

def rounds(contenders: dict[str, Callable[[], dict]], n: int, what: str = "") -> dict[str, list[dict]]:
    """Each contender once a round, in turn (a busy spell of the machine falls on all), ``n`` rounds;
    every result a dict with its ``seconds``."""
    got: dict[str, list[dict]] = {name: [] for name in contenders}
    for i in range(n):
        for name, fn in contenders.items():
            got[name].append(fn())
            log(f"{what}round {i + 1}/{n}: {name} {got[name][-1]['seconds']:.2f} s")
    return got


def best(results: list[dict]) -> dict:
    return min(results, key=lambda r: r["seconds"])


def median(results: list[dict], key: str = "seconds") -> float:
    return statistics.median(r[key] for r in results)


def ratio(a: float, b: float) -> str:
    return "-" if not b else f"{a / b:.3f}x" if abs(a / b) < 0.1 else f"{a / b:.2f}x"


def table(title: str, headers: list[str], rows: list[list[object]]) -> None:
    """A markdown table on stdout (what docs/performance.md keeps), its title above."""
    def cell(v: object) -> str:
        return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)

    print(f"\n{title}\n\n| " + " | ".join(headers) + " |\n|" + " --- |" * len(headers))
    for row in rows:
        print("| " + " | ".join(cell(v) for v in row) + " |")
    sys.stdout.flush()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
