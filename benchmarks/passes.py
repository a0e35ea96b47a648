"""The per-stage pass profile: CPU per record of every stage of a warm scan beside the floor job's.

``python -m benchmarks passes [--events N] [--baseline TREE] [--scans K]`` (or ``python -m benchmarks.passes``,
the same options) scans the mixed capture K times in one process (the first cold) with Spark's status
API on, then reads from that API every stage of the last scan's jobs (its executor CPU per record of the
window, shuffled rows, spills) and the findings job's stages reading the window's checkpoint (no shuffle
input), then runs the floor job (benchmarks/scans.py) in the same session and profiles it the same way.
With ``--baseline``, the same in a process of that checkout, right after.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from argparse import Namespace

from benchmarks.harness import capture, child, measurement, option, table, trees


def _get(url: str):  # type: ignore[no-untyped-def]
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def child_profile(paths: list[str], scans: int, port: int) -> None:
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
    from benchmarks.scans import floor_job

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


@measurement("passes", option("--scans", type=int, default=3, help="scans in one process (the first cold); the last is measured"),
             option("--port", type=int, default=4077, help="the Spark UI's port (its REST API)"))
def passes(opts: Namespace) -> None:
    """The per-stage pass profile: each stage's executor CPU per record of a warm scan, beside the floor job's."""
    paths = capture("mixed", opts.events[0])
    rows = {k: child("benchmarks.passes:child_profile", paths, opts.scans, opts.port, tree=t).json() for k, t in trees(opts).items()}
    n = rows["scan"]["records"]
    table(f"the findings job of the last of {opts.scans} scans in one process, {n:,} records",
          ["tree", "stages", "reading the checkpoint", "executor CPU (s)", "CPU per record (us)", "findings job, warm (s)"],
          [[k, r["stages"], r["stages_reading_checkpoint"], r["executor_cpu_s"], r["cpu_us_per_record"],
            r["scans"][-1]["findings"]] for k, r in rows.items()])
    for k, r in rows.items():
        table(f"per stage, the last scan ({k}) and the floor job: executor CPU per record of the window",
              ["job", "stage", "name", "tasks", "shuffle rows read", "spilled (MB)", "CPU (s)", "us / record"],
              [[st["job"], st["stage"], st["name"], st["tasks"], st["shuffle_read_rows"], round(st["spill_disk_bytes"] / 1e6),
                st["cpu_s"], st["cpu_us_per_record"]] for st in [*r["profile"], *({**f, "name": "floor: " + f["name"]}
                                                                                for f in r["floor"])]])


if __name__ == "__main__":
    from benchmarks.__main__ import main

    main(["passes", *sys.argv[1:]])
