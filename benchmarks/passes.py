"""The checks across records, measured where they run: the findings job of a warm scan.

`python -m benchmarks.passes [--events N] [--baseline TREE] [--scans K]` scans the harness's capture
K times in one process (the first cold) with Spark's status API on, then reads the last scan's
findings job (its last job) from that API: its stages, the stages that read the window's checkpoint
(those with no shuffle input: they start from the checkpointed events), and their executor CPU,
per record. With ``--baseline`` (an earlier revision's checkout, e.g. a ``git worktree``), the same
in a process of that revision right after: before and after side by side.

The issue's targets: executor CPU of the findings job <= 30 us a record; <= 4 stages reading the
checkpoint. docs/performance.md keeps the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

from benchmarks import measure

PY = sys.executable


def _get(url: str):  # type: ignore[no-untyped-def]
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def child(paths: list[str], scans: int, port: int) -> None:
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark(conf={"spark.ui.enabled": "true", "spark.ui.port": str(port)})
    base = f"http://127.0.0.1:{port}/api/v1/applications"
    timings = []
    before = -1
    for _ in range(scans):
        app = _get(base)[0]["id"]
        before = max((j["jobId"] for j in _get(f"{base}/{app}/jobs")), default=-1)
        started = time.perf_counter()
        result = run_scan(read_capture(spark, paths))
        timings.append({"seconds": round(time.perf_counter() - started, 2), **result.timings})
        records = result.summary["records"]
        result.release()
    app = _get(base)[0]["id"]
    jobs = sorted(_get(f"{base}/{app}/jobs"), key=lambda j: j["jobId"])
    profile = _profile(base, app, [j for j in jobs if j["jobId"] > before], records)
    # the floor's job in the same session, right after (benchmarks/floor.py): its CPU per record
    from benchmarks.floor import floor_job

    last = jobs[-1]["jobId"]
    floor_job(spark, paths)
    floor = _profile(base, app, [j for j in _get(f"{base}/{app}/jobs") if j["jobId"] > last], records)
    findings_job = jobs[-1]
    stages = []
    for sid in findings_job["stageIds"]:
        for attempt in _get(f"{base}/{app}/stages/{sid}"):
            if attempt.get("status") == "COMPLETE":
                stages.append(attempt)
                break
    reading = [s for s in stages if s.get("shuffleReadBytes", 0) == 0]
    cpu_ns = sum(s.get("executorCpuTime", 0) for s in stages)
    print(json.dumps({
        "records": records, "scans": timings, "stages": len(stages), "stages_reading_checkpoint": len(reading),
        "executor_cpu_s": round(cpu_ns / 1e9, 2), "executor_run_s": round(sum(s.get("executorRunTime", 0) for s in stages) / 1e3, 2),
        "cpu_us_per_record": round(cpu_ns / 1e3 / records, 1),
        "reading_stages_cpu_s": sorted((round(s.get("executorCpuTime", 0) / 1e9, 2) for s in reading), reverse=True),
        "profile": profile, "floor": floor,
    }))


def _profile(base: str, app: str, jobs: list[dict], records: int) -> list[dict]:
    """Every stage of the last scan's jobs: its job, its name (the call that ran it), its input and
    shuffle rows, executor CPU in total and per record of the window (the per-stage profile)."""
    out = []
    for job in jobs:
        for sid in sorted(job["stageIds"]):
            for attempt in _get(f"{base}/{app}/stages/{sid}"):
                if attempt.get("status") != "COMPLETE":
                    continue
                cpu = attempt.get("executorCpuTime", 0)
                out.append({"job": job["jobId"], "stage": sid, "name": attempt.get("name", "")[:60],
                            "tasks": attempt.get("numCompleteTasks"), "input_rows": attempt.get("inputRecords", 0),
                            "shuffle_read_rows": attempt.get("shuffleReadRecords", 0),
                            "shuffle_write_bytes": attempt.get("shuffleWriteBytes", 0),
                            "spill_disk_bytes": attempt.get("diskBytesSpilled", 0),
                            "cpu_s": round(cpu / 1e9, 2), "cpu_us_per_record": round(cpu / 1e3 / max(records, 1), 1)})
                break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.passes", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--scans", type=int, default=3, help="scans in one process (the first cold); the last is measured")
    ap.add_argument("--baseline", help="also measure this checkout (an earlier revision's worktree)")
    ap.add_argument("--port", type=int, default=4077)
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child is not None:
        child(opts.child, opts.scans, opts.port)
        return
    from benchmarks.__main__ import generate

    paths = [str(Path(p).resolve()) for p in generate(Path(opts.workdir) / f"capture-{opts.events}", opts.events)]
    rows = measure.in_trees(__file__, ["--scans", str(opts.scans), "--port", str(opts.port), "--child", *paths],
                            opts.baseline)
    print(f"\nthe findings job of the last of {opts.scans} scans in one process, {rows['this tree']['records']:,} records\n")
    print("| tree | stages | reading the checkpoint | executor CPU (s) | CPU per record (us) | findings job, warm (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows.items():
        print(f"| {name} | {r['stages']} | {r['stages_reading_checkpoint']} | {r['executor_cpu_s']} | "
              f"{r['cpu_us_per_record']} | {r['scans'][-1]['findings']} |")
    for name, r in rows.items():
        print(f"\nper stage, the last scan ({name}): executor CPU per record of the window\n")
        print("| job | stage | name | tasks | shuffle rows read | spilled (MB) | CPU (s) | us / record |")
        print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for st in [*r["profile"], *({**f, "name": "floor: " + f["name"]} for f in r["floor"])]:
            print(f"| {st['job']} | {st['stage']} | {st['name']} | {st['tasks']} | {st['shuffle_read_rows']:,} | "
                  f"{st['spill_disk_bytes'] / 1e6:.0f} | {st['cpu_s']} | {st['cpu_us_per_record']} |")


if __name__ == "__main__":
    main()
