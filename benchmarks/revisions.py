"""Two revisions of cdc-monitor scanning the same capture, side by side, alternating:
``python -m benchmarks.revisions --baseline DIR [--events N] [--runs R] [--faults]``.

``DIR`` is another checkout (``git worktree add /tmp/base <commit>``): the baseline's processes run
in it (``python -m`` puts the working directory first on the path, before ``PYTHONPATH``: run from
here, they would import this checkout's package) with it first on ``PYTHONPATH`` too, so both run in
this virtualenv with the same Spark and Java. Each run is a whole ``cdc-monitor scan`` process; the table gives per
revision the whole-process and pipeline seconds (best and median), the Spark jobs and stages, and
the ratio current / baseline. The capture is made by this checkout's generator (clean traffic of
four flavours, with schemas; ``--faults`` injects every fault).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from benchmarks import measure

PY = sys.executable
FLAVOURS = ("mysql", "postgresql", "sqlserver", "oracle")


def capture(folder: Path, events: int, faults: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for flavour in FLAVOURS:
        path = folder / f"{flavour}.jsonl"
        if not path.exists():
            r = measure.run([PY, "-m", "cdc_monitor", "generate", "--flavour", flavour, "--events",
                             str(events // len(FLAVOURS)), "--seed", "2", "--output", str(path),
                             *(["--faults"] if faults else [])])
            assert r.returncode == 0, r.stderr
    return folder


def scan(folder: Path, report: Path, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    folder, report = folder.resolve(), report.resolve()
    r = measure.run([PY, "-m", "cdc_monitor", "scan", str(folder), "--output", "json", "--report-file", str(report),
                     "--quiet", "--fail-on", "never"], env=env, cwd=pythonpath)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(report.read_text())
    t = doc["timings_seconds"]
    return {"seconds": r.seconds, "pipeline": sum(v for k, v in t.items() if k not in ("spark_jobs", "spark_stages")),
            "jobs": t.get("spark_jobs"), "stages": t.get("spark_stages"), "records": doc["summary"]["records"],
            "findings": sum(doc["summary"]["findings_by_severity"].values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="a checkout of the baseline revision")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--faults", action="store_true")
    ap.add_argument("--workdir", default="benchmarks/.work/revisions")
    args = ap.parse_args()
    work = Path(args.workdir)
    folder = capture(work / f"capture-{args.events}{'-faults' if args.faults else ''}", args.events, args.faults)
    runs: dict[str, list[dict]] = {"baseline": [], "current": []}
    for i in range(args.runs):
        for name, path in (("baseline", str(Path(args.baseline).resolve())), ("current", None)):
            runs[name].append(scan(folder, work / f"{name}-{i}.json", path))
            print(f"run {i + 1} {name}: {runs[name][-1]}", file=sys.stderr)
    rows = {}
    for name, rs in runs.items():
        rows[name] = {"best_s": min(r["seconds"] for r in rs), "median_s": statistics.median(r["seconds"] for r in rs),
                      "pipeline_best_s": round(min(r["pipeline"] for r in rs), 2), "jobs": rs[0]["jobs"],
                      "stages": rs[0]["stages"], "records": rs[0]["records"], "findings": rs[0]["findings"]}
    print("| revision | whole process best / median (s) | pipeline best (s) | Spark jobs | stages | records | findings |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['best_s']:.1f} / {r['median_s']:.1f} | {r['pipeline_best_s']:.1f} | {r['jobs']} | {r['stages']} "
              f"| {r['records']} | {r['findings']} |")
    ratio = rows["current"]["pipeline_best_s"] / rows["baseline"]["pipeline_best_s"]
    print(f"\ncurrent / baseline, pipeline best: {ratio:.2f}x")
    (work / "results.json").write_text(json.dumps({"args": vars(args), "runs": runs, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
