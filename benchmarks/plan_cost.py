"""The driver's cost of planning one window's checks, with no Spark job in it:
``python -m benchmarks.plan_cost [--baseline DIR] [--events N] [--rounds R]``.

One process per revision (this checkout, and ``DIR``, another checkout, when given: ``git worktree
add /tmp/base <commit>``) decodes the same capture (a faulty MySQL stream with transactions and
schemas: every check planned), computes the window's facts once, then plans the window's evaluation
``R`` times: every check, the union of their findings and the one frame the window collects
(``engine/window.py``), stopped before the collect runs. Per revision: the median and best seconds
of a warm plan (the first round is left out) and the rounds. The processes take turns, one round
each, so a busy spell of the machine falls on both.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PY = sys.executable


class _Planned(Exception):
    """Raised where the window's evaluation would start its collect."""


def _serve(capture: str) -> None:
    """The per-revision process: reads a line per round from stdin, answers with the round's seconds."""
    from cdc_monitor.checks.context import CheckContext
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.decoding import decode_records
    from cdc_monitor.engine.cache import FrameCache
    from cdc_monitor.engine.facts import window_facts
    from cdc_monitor.engine.window import WholeWindow, WindowFrames, evaluate
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    caps = capabilities(spark)
    cfg = ScanConfig()
    cache = FrameCache()
    events = cache.materialize(decode_records(read_capture(spark, [capture]).records, cfg.roles, session=caps))
    facts = window_facts(events)
    scope = WholeWindow(cfg.max_findings, 60_000)

    def stop() -> None:
        raise _Planned

    print("ready", flush=True)
    for _ in sys.stdin:
        started = time.perf_counter()
        with contextlib.suppress(_Planned):
            evaluate(WindowFrames(events), CheckContext(caps, facts, cfg, cache), scope, planned=stop)
        print(round(time.perf_counter() - started, 3), flush=True)


def _start(capture: Path, pythonpath: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([PY, "-m", "benchmarks.plan_cost", "--serve", str(capture)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", "the revision's process failed"
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="a checkout of the baseline revision")
    ap.add_argument("--events", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--workdir", default="benchmarks/.work/plan_cost")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        _serve(args.serve)
        return
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    capture = work / f"mysql-{args.events}.jsonl"
    if not capture.exists():
        subprocess.run([PY, "-m", "cdc_monitor", "generate", "--flavour", "mysql", "--faults", "--events",
                        str(args.events), "--seed", "2", "--output", str(capture)], check=True, capture_output=True)
    revisions = {"current": None, **({"baseline": str(Path(args.baseline).resolve())} if args.baseline else {})}
    procs = {name: _start(capture, path) for name, path in revisions.items()}
    rounds: dict[str, list[float]] = {name: [] for name in procs}
    try:
        for _ in range(args.rounds):
            for name, proc in procs.items():
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("plan\n")
                proc.stdin.flush()
                rounds[name].append(float(proc.stdout.readline()))
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=120)
    result = {name: {"median_s": statistics.median(r[1:]), "best_s": min(r[1:]), "rounds": r} for name, r in rounds.items()}
    if "baseline" in result:
        result["current/baseline (median)"] = round(result["current"]["median_s"] / result["baseline"]["median_s"], 2)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
