"""The engine's floor: the least any Spark job over a capture costs here, beside plain Python.

`python -m benchmarks.floor [--events N] [--runs K]` generates (or reuses) the harness's capture
and measures, side by side in one run:

- the plain-Python baseline of the four checks (`benchmarks/plain_python.py`), one process;
- a *floor* process: cdc-monitor's own Spark session and capture reader, then the smallest job
  that touches every record as a scan must: the kcat line parsed, the value parsed with a
  partial schema (op, ts_ms, source.ts_ms) and one aggregate per topic (count, p99 lag). No
  check, no findings, no report. Its first run is what a `scan` process pays (cold JVM), later
  runs what a long-lived session would pay (warm);
- optionally (`--scan`) the full scan pipeline in the same session, right after;
- or (`--whole`) whole processes, alternating `--runs` times: a floor process (its session and one
  floor job) and a `cdc-monitor scan` process over the same capture; the ratio scan / floor is the
  issue's target for a large scan (<= 2x);
- or (`--margin 100000,600000`) the same whole processes at several sizes, and the cost the records
  a larger window adds against the floor's (start-up, paid once by both, cancels out).

A scan cannot be faster than its floor; the issue's target for 100k events (>= 2x the plain
Python rate, net of start-up) is set against it in the output.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks import measure

PY = sys.executable
VALUE = "payload struct<op string, ts_ms long, source struct<ts_ms long>>"


def floor_job(spark, paths: list[str]) -> int:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    from cdc_monitor.sources.capture import read_capture

    records = read_capture(spark, paths).records
    value = F.from_json(F.col("value").cast("string"), VALUE).alias("v")
    lag = F.col("v.payload.ts_ms") - F.col("v.payload.source.ts_ms")
    rows = records.select("topic", value).groupBy("topic").agg(
        F.count("*").alias("n"), F.percentile_approx(lag, 0.99).alias("p99")).collect()
    return sum(r["n"] for r in rows)


def child(paths: list[str], runs: int, with_scan: bool) -> None:
    started = time.perf_counter()
    from cdc_monitor.runtime.session import get_spark

    spark = get_spark()
    out: dict = {"session_seconds": round(time.perf_counter() - started, 2), "floor_seconds": []}
    for _ in range(runs):
        t = time.perf_counter()
        out["records"] = floor_job(spark, paths)
        out["floor_seconds"].append(round(time.perf_counter() - t, 2))
    if with_scan:
        from cdc_monitor.pipeline import run_scan
        from cdc_monitor.sources.capture import read_capture

        t = time.perf_counter()
        run_scan(read_capture(spark, paths)).release()
        out["scan_seconds_after"] = round(time.perf_counter() - t, 2)
    print(json.dumps(out))


def whole(paths: list[str], records: int, runs: int, work: Path, baseline: str | None = None) -> None:
    """Whole floor and scan processes over one capture, alternating; best and median of each. With
    ``baseline`` (another checkout of cdc-monitor, e.g. a ``git worktree`` of an earlier revision),
    its scan too, in the same rounds: before and after side by side."""
    import os
    import statistics

    scans = {"scan": None, **({"scan (baseline)": baseline} if baseline else {})}
    times: dict[str, list[float]] = {"floor": [], **{name: [] for name in scans}}
    findings: dict[str, dict] = {}
    report = work / "floor-whole-report.json"
    for i in range(runs):
        r = measure.run([PY, "-m", "benchmarks.floor", "--runs", "1", "--child", *paths])
        assert r.returncode == 0, r.stderr[-2000:]
        times["floor"].append(r.seconds)
        line = [f"run {i + 1}: floor {r.seconds:.1f} s"]
        for name, tree in scans.items():
            # the baseline's package: its checkout first on the path (run from there: ``-m`` puts the
            # working directory first)
            env = None if tree is None else {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            s = measure.run([PY, "-m", "cdc_monitor", "scan", *[str(Path(p).resolve()) for p in paths], "--output", "json",
                             "--report-file", str(report.resolve()), "--quiet", "--fail-on", "never"],
                            env=env, cwd=None if tree is None else str(Path(tree).resolve()))
            assert s.returncode == 0, s.stderr[-2000:]
            times[name].append(s.seconds)
            doc = json.loads(report.read_text())
            assert doc["summary"]["records"] == records, (doc["summary"]["records"], records)
            findings[name] = doc["summary"]["findings_by_check"]
            t = doc["timings_seconds"]
            line.append(f"{name} {s.seconds:.1f} s (findings job {t.get('findings')} s, jobs {t.get('spark_jobs')}, "
                        f"stages {t.get('spark_stages')})")
        print(", ".join(line), file=sys.stderr)
    if baseline:
        assert findings["scan"] == findings["scan (baseline)"], findings
    print(f"\n{records:,} records, whole processes, {runs} alternating runs\n")
    print("| process | best (s) | median (s) | / floor (best) |")
    print("| --- | ---: | ---: | ---: |")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.1f} | {statistics.median(ts):.1f} | {min(ts) / min(times['floor']):.2f}x |")
    print(f"\nscan / floor: best {min(times['scan']) / min(times['floor']):.2f}x, "
          f"median {statistics.median(times['scan']) / statistics.median(times['floor']):.2f}x")


def margin(sizes: list[int], runs: int, work: Path, baseline: str | None = None) -> None:
    """The cost of the records a larger window adds (issue 69's target): at each size, whole floor and
    scan processes (and ``baseline``'s scan), best of ``runs``; then (scan(large) - scan(small)) /
    (floor(large) - floor(small)) for each pair of sizes. Start-up, paid once by both, cancels out."""
    import os

    from benchmarks.__main__ import count_lines, generate

    trees = {"scan": None, **({"scan (baseline)": baseline} if baseline else {})}
    best: dict[int, dict[str, float]] = {}
    for events in sizes:
        paths = generate(work / f"capture-{events}", events)
        records = count_lines(paths)
        report = work / "floor-margin-report.json"
        got: dict[str, list[float]] = {"floor": [], **{name: [] for name in trees}}
        for _ in range(runs):
            r = measure.run([PY, "-m", "benchmarks.floor", "--runs", "1", "--child", *paths])
            assert r.returncode == 0, r.stderr[-2000:]
            got["floor"].append(r.seconds)
            for name, tree in trees.items():
                env = None if tree is None else {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
                s = measure.run([PY, "-m", "cdc_monitor", "scan", *[str(Path(p).resolve()) for p in paths], "--output",
                                 "json", "--report-file", str(report.resolve()), "--quiet", "--fail-on", "never"],
                                env=env, cwd=None if tree is None else str(Path(tree).resolve()))
                assert s.returncode == 0, s.stderr[-2000:]
                doc = json.loads(report.read_text())
                assert doc["summary"]["records"] == records, (doc["summary"]["records"], records)
                got[name].append(s.seconds)
                print(f"{events:,} events: {name} {s.seconds:.1f} s, peak {s.peak_total_mb:.0f} MB, "
                      f"timings {json.dumps(doc['timings_seconds'])}", file=sys.stderr)
        best[events] = {name: min(ts) for name, ts in got.items()}
        print(f"{events:,} events: best {json.dumps(best[events])}", file=sys.stderr)
    print("\n| events | floor (s) | " + " | ".join(f"{n} (s) | {n} / floor" for n in trees) + " |")
    print("| ---: | ---: | " + " | ".join("---: | ---:" for _ in trees) + " |")
    for events, b in best.items():
        print(f"| {events:,} | {b['floor']:.1f} | " + " | ".join(
            f"{b[n]:.1f} | {b[n] / b['floor']:.2f}x" for n in trees) + " |")
    print("\n| from | to | floor adds (s) | " + " | ".join(f"{n} adds (s) | at the margin" for n in trees) + " |")
    print("| ---: | ---: | ---: | " + " | ".join("---: | ---:" for _ in trees) + " |")
    for i, small in enumerate(sizes):
        for large in sizes[i + 1:]:
            floor_adds = best[large]["floor"] - best[small]["floor"]
            cells = []
            for n in trees:
                adds = best[large][n] - best[small][n]
                cells.append(f"{adds:.1f} | {adds / floor_adds:.2f}x")
            print(f"| {small:,} | {large:,} | {floor_adds:.1f} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--runs", type=int, default=3, help="floor jobs in one session (first cold)")
    ap.add_argument("--scan", action="store_true", help="also run the scan pipeline in that session")
    ap.add_argument("--whole", action="store_true", help="whole floor and scan processes, alternating")
    ap.add_argument("--baseline", help="with --whole: also scan with this checkout (an earlier revision's worktree)")
    ap.add_argument("--margin", help="sizes, comma-separated (e.g. 100000,600000): the cost a scan adds per "
                    "record beyond the smallest, against the floor's (whole processes, best of --runs)")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child is not None:
        child(opts.child, opts.runs, opts.scan)
        return
    if opts.margin:
        margin([int(x) for x in opts.margin.split(",")], opts.runs, Path(opts.workdir), opts.baseline)
        return
    from benchmarks.__main__ import count_lines, generate

    paths = generate(Path(opts.workdir) / f"capture-{opts.events}", opts.events)
    records = count_lines(paths)
    if opts.whole:
        whole(paths, records, opts.runs, Path(opts.workdir), opts.baseline)
        return
    plain = json.loads(measure.run([PY, "-m", "benchmarks.plain_python", *paths]).stdout)["seconds"]
    r = measure.run([PY, "-m", "benchmarks.floor", "--runs", str(opts.runs), *(["--scan"] if opts.scan else []),
                     "--child", *paths])
    assert r.returncode == 0, r.stderr[-2000:]
    f = json.loads(r.stdout.strip().splitlines()[-1])
    assert f["records"] == records, (f["records"], records)
    cold, warm = f["floor_seconds"][0], min(f["floor_seconds"][1:] or f["floor_seconds"])
    print(f"\n{opts.events:,} events = {records:,} records; target (>= 2x plain Python, net of start-up): "
          f"<= {plain / 2:.2f} s\n")
    print("| run | seconds | records/s | vs plain Python |")
    print("| --- | ---: | ---: | ---: |")
    rows = [("plain Python, one process", plain), ("floor job, first in its process (cold)", cold)]
    if len(f["floor_seconds"]) > 1:
        rows.append(("floor job, warm session (best of later runs)", warm))
    if "scan_seconds_after" in f:
        rows.append(("scan pipeline, same session after the floor jobs", f["scan_seconds_after"]))
    for name, secs in rows:
        print(f"| {name} | {secs} | {records / secs:,.0f} | {plain / secs:.2f}x |")
    print(f"\nsession start {f['session_seconds']} s; whole floor process {r.seconds:.1f} s; "
          f"floor runs {f['floor_seconds']}")


if __name__ == "__main__":
    main()
