"""A scan against what bounds it: the floor, the plain PySpark job a data engineer would write, a bare
PySpark process, a warm read; and the suite's time beside a bare PySpark process."""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import statistics
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from benchmarks.harness import (
    HERE,
    PY,
    bare,
    best,
    capture,
    child,
    measurement,
    option,
    ratio,
    records,
    rounds,
    run,
    scan,
    table,
    trees,
)

VALUE = "payload struct<op string, ts_ms long, source struct<ts_ms long>>"
PLAIN = HERE / "benchmarks" / "plain_spark.py"
PHASES = ("read_decode", "window", "checks_plan_and_aggregates", "findings")


def floor_job(spark, paths: list[str]) -> int:  # type: ignore[no-untyped-def]
    """The least a scan's Spark job can do: cdc-monitor's reader, every value parsed for three fields
    (Spark's JSON reader still tokenizes every byte), one aggregate per topic (count, p99 lag)."""
    from pyspark.sql import functions as F

    from cdc_monitor.sources.capture import read_capture

    value = F.from_json(F.col("value").cast("string"), VALUE).alias("v")
    lag = F.col("v.payload.ts_ms") - F.col("v.payload.source.ts_ms")
    rows = read_capture(spark, paths).records.select("topic", value).groupBy("topic").agg(
        F.count("*").alias("n"), F.percentile_approx(lag, 0.99).alias("p99")).collect()
    return sum(r["n"] for r in rows)


def floor_child(paths: list[str]) -> None:
    """A floor process: cdc-monitor's session, then one floor job."""
    from cdc_monitor.runtime.session import get_spark

    spark = get_spark()
    started = time.perf_counter()
    n = floor_job(spark, paths)
    print(json.dumps({"records": n, "job_seconds": round(time.perf_counter() - started, 2)}))


def _scan(paths: list[str], tree) -> dict:  # type: ignore[no-untyped-def]
    got = scan(paths, tree)
    t = got["report"]["timings_seconds"]
    return {**got, "records": got["report"]["summary"]["records"], "timings": {k: t.get(k) for k in (*PHASES, "spark_jobs")}}


def _sizes(opts: Namespace, plain: bool, scans: bool = True) -> None:
    """Whole processes at each size, alternating, best of --rounds; then what the records from the
    smallest size to each larger one add, against the floor's (start-up, paid once by all, cancels out)."""
    named = trees(opts) if scans else {}
    found: dict[int, dict[str, dict]] = {}
    for events in opts.events:
        paths = _capture(opts, events)
        contenders = {**({} if scans else {"bare PySpark": bare}), "floor": lambda p=paths: _floor(p)}
        if plain:
            contenders["plain PySpark job"] = lambda p=paths: {"seconds": run([PY, "-P", str(PLAIN), *p]).seconds}
        for name, tree in named.items():
            contenders[name] = lambda p=paths, t=tree: _scan(p, t)
        got = rounds(contenders, opts.rounds, f"{events:,} events: ")
        found[events] = {name: best(rs) for name, rs in got.items()}
        n = records(paths)
        for name in named:
            assert found[events][name]["records"] == n, (name, found[events][name]["records"], n)
    names = [k for k in found[opts.events[0]] if k not in ("floor", "bare PySpark")]
    bare_cols = [] if scans else ["bare PySpark (s)", "floor / bare"]
    table(f"whole processes, best of {opts.rounds} alternating rounds, generated {opts.flavour} captures"
          f"{' without schemas' if opts.no_schemas else ''}",
          ["events", "records", *bare_cols, "floor (s)", "floor job (s)", *(h for k in names for h in (f"{k} (s)", f"{k} / floor"))],
          [[e, records(_capture(opts, e)),
            *([] if scans else [b["bare PySpark"]["seconds"], ratio(b["floor"]["seconds"], b["bare PySpark"]["seconds"])]),
            b["floor"]["seconds"], b["floor"]["job_seconds"],
            *(v for k in names for v in (b[k]["seconds"], ratio(b[k]["seconds"], b["floor"]["seconds"])))]
           for e, b in found.items()])
    if plain and scans:
        table("scan / plain PySpark job", ["events", *named], [[e, *(ratio(b[k]["seconds"], b["plain PySpark job"]["seconds"])
                                                                     for k in named)] for e, b in found.items()])
    if scans:
        table("the scan's steps (s), its best run", ["events", "tree", *PHASES, "jobs"],
              [[e, k, *b[k]["timings"].values()] for e, b in found.items() for k in named])
    if len(opts.events) > 1:
        small = opts.events[0]
        table(f"the margin: what the records from {small:,} events add, against the floor's",
              ["to", "floor adds (s)", *(h for k in names for h in (f"{k} adds (s)", f"{k} / floor's"))],
              [[large, round(found[large]["floor"]["seconds"] - found[small]["floor"]["seconds"], 1),
                *(v for k in names for v in _margin(found, small, large, k))] for large in opts.events[1:]])


def _capture(opts: Namespace, events: int) -> list[str]:
    return capture(opts.flavour, events, 2, *(["--no-schemas"] if opts.no_schemas else []))


def _floor(paths: list[str]) -> dict:
    r = child("benchmarks.scans:floor_child", paths)
    return {"seconds": r.seconds, "peak_mb": r.peak_mb, **r.json()}


def _margin(found: dict, small: int, large: int, name: str) -> tuple[float, str]:
    adds = found[large][name]["seconds"] - found[small][name]["seconds"]
    return round(adds, 1), ratio(adds, found[large]["floor"]["seconds"] - found[small]["floor"]["seconds"])


SIZES = (option("--flavour", default="mixed", help="the generator's flavour (mixed: four of them, events shared)"),
         option("--no-schemas", action="store_true", help="JSON without the converter's schemas"))


@measurement("floor", *SIZES, events="100000,600000")
def floor(opts: Namespace) -> None:
    """The floor: a bare PySpark process and a floor process (cdc-monitor's reader, one job parsing every
    value for three fields, one aggregate per topic) at each size; with two sizes, the floor's margin."""
    _sizes(opts, plain=False, scans=False)


@measurement("scan", *SIZES, events="100000,600000")
def scan_sizes(opts: Namespace) -> None:
    """Whole ``cdc-monitor scan`` processes against floor processes at each size, and the margin."""
    _sizes(opts, plain=False)


@measurement("plain", *SIZES, events="100000,600000")
def plain(opts: Namespace) -> None:
    """The plain PySpark job a data engineer would write instead (benchmarks/plain_spark.py) beside the
    scan and the floor, whole processes at each size."""
    _sizes(opts, plain=True)


@measurement("small", option("--remote", action="store_true", help="also over a warm Spark Connect server (the suite's)"),
             events="480")
def small(opts: Namespace) -> None:
    """A small capture (MySQL, seed 11), whole ``cdc-monitor scan`` processes against bare PySpark processes;
    ``--remote``: also ``scan --remote`` against a bare Connect client process, one warm server."""
    paths = capture("mysql", opts.events[0], 11)
    contenders = {"bare PySpark": bare, **{k: lambda t=t: scan(paths, t) for k, t in trees(opts).items()}}
    with contextlib.ExitStack() as stack:
        if opts.remote:
            from tests.support.connect_server import ConnectServer
            from tests.support.spark_cluster import worker_environment

            root = Path(tempfile.mkdtemp(prefix="cdc-connect-bench-"))
            server = ConnectServer(root / "server", worker_environment(root / "worker-env"))
            stack.callback(server.stop)
            client = ("from pyspark.sql import SparkSession; import sys; s = SparkSession.builder.remote(sys.argv[1])"
                      ".getOrCreate(); print(s.range(1000).selectExpr('sum(id)').first()[0]); s.stop()")
            scan(paths, None, "--remote", server.url)  # warm: the server's JIT, its first session
            contenders["bare Connect client"] = lambda: {"seconds": run([PY, "-P", "-c", client, server.url]).seconds}
            contenders |= {f"{k} --remote": lambda t=t: scan(paths, t, "--remote", server.url) for k, t in trees(opts).items()}
        got = rounds(contenders, opts.rounds)
    b = statistics.median(r["seconds"] for r in got["bare PySpark"])
    table(f"{records(paths):,} records, medians of {opts.rounds} alternating rounds", ["process", "median (s)", "/ bare PySpark"],
          [[k, statistics.median(r["seconds"] for r in rs), ratio(statistics.median(r["seconds"] for r in rs), b)]
           for k, rs in got.items()])


def warm_child(paths: list[str], scans: int) -> None:
    """Three scans to warm the session, then ``scans`` scans each followed by a warm read and count."""
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    for _ in range(3):
        run_scan(read_capture(spark, paths)).release()
    took: dict[str, list[float]] = {"scan": [], "read": [], "planning": [], "findings": []}
    for _ in range(scans):
        started = time.perf_counter()
        result = run_scan(read_capture(spark, paths))
        took["scan"].append(time.perf_counter() - started)
        took["planning"].append(result.timings["checks_plan_and_aggregates"])
        took["findings"].append(result.timings["findings"])
        result.release()
        started = time.perf_counter()
        spark.read.text(paths).count()
        took["read"].append(time.perf_counter() - started)
    print(json.dumps({k: round(statistics.median(v), 3) for k, v in took.items()}))


@measurement("warm", option("--scans", type=int, default=5, help="warm scans measured"), events="500")
def warm(opts: Namespace) -> None:
    """Warm scans of a small faulty MySQL capture in one session against a warm ``spark.read.text().count()``."""
    paths = capture("mysql", opts.events[0], 5, "--faults")
    got = {k: child("benchmarks.scans:warm_child", paths, opts.scans, tree=t).json() for k, t in trees(opts).items()}
    table(f"{records(paths):,} records, medians of {opts.scans} warm scans", ["tree", "scan (s)", "read + count (s)",
          "scan / read", "planning the checks (s)", "findings job (s)"],
          [[k, r["scan"], r["read"], ratio(r["scan"], r["read"]), r["planning"], r["findings"]] for k, r in got.items()])


@measurement("suite", option("--tests", default="", help="pytest's arguments (default: the whole suite)"),
             option("--workers", default="2", help="pytest-xdist workers, as scripts/test.sh"), events="0")
def suite(opts: Namespace) -> None:
    """The test suite's pytest run (as scripts/test.sh runs it, set-up excluded) beside a bare PySpark process."""
    base = bare()
    got = {k: run([PY, "-P", "-m", "pytest", "-q", "-n", opts.workers, "--dist", "loadgroup", "--durations=25",
                   *shlex.split(opts.tests)], t, check=False, cwd=t) for k, t in trees(opts, "pytest").items()}
    table("the suite beside a bare PySpark process (the same machine, one after the other)",
          ["process", "seconds", "/ bare PySpark", "exit", "result"],
          [["bare PySpark", base["seconds"], "1.00x", 0, ""],
           *[[k, r.seconds, ratio(r.seconds, base["seconds"]), r.code, (r.out.strip().splitlines() or [""])[-1][:80]]
             for k, r in got.items()]])


def history_seed(folder: str, intervals: int, scale: float) -> None:
    """The seasonal model's window (``intervals`` of real events from a Monday 10:00, two weeks in) and
    the history of the 8 days before it (one committed batch)."""
    from cdc_monitor.checks.baseline import DAY_MS
    from cdc_monitor.generator.seasonal import SeasonalModel, event_lines, scaled_rows
    from cdc_monitor.history.store import write_batch
    from cdc_monitor.runtime.session import get_spark

    model = SeasonalModel(days=15, anomalies_per_kind=0)
    now = model.start_ms + 14 * DAY_MS + 10 * 3_600_000
    Path(folder, "window.jsonl").write_text("\n".join(event_lines(model, now, intervals, scale=scale)) + "\n")
    rows = [r for r in scaled_rows(model, scale, now) if r["interval_start_ms"] >= now - 8 * DAY_MS]
    write_batch(get_spark(), str(Path(folder, "history-seed")), "seed", rows)
    print("{}")


@measurement("history", option("--intervals", type=int, default=3), option("--scale", type=float, default=1.0), events="0")
def history(opts: Namespace) -> None:
    """A scan with ``--history`` against one without, whole processes, alternating: 20 tables of the seasonal
    model, each ``--history`` run reading a fresh copy of an 8-day history and writing a new batch."""
    folder = HERE / "benchmarks" / ".work" / f"history-{opts.intervals}-{opts.scale}"
    if not (folder / "history-seed").exists():
        folder.mkdir(parents=True, exist_ok=True)
        child("benchmarks.scans:history_seed", str(folder), opts.intervals, opts.scale)
    window = [str(folder / "window.jsonl")]

    def with_history() -> dict:
        shutil.rmtree(folder / "history", ignore_errors=True)
        shutil.copytree(folder / "history-seed", folder / "history")
        got = scan(window, None, "--history", str(folder / "history"))
        assert got["report"]["history"]["rows_written"] > 0, got["report"]["history"]
        return got

    got = rounds({"without": lambda: scan(window), "with --history": with_history}, opts.rounds)
    pipeline = {k: statistics.median(sum(v for s, v in r["report"]["timings_seconds"].items() if not s.startswith("spark_"))
                                     for r in rs) for k, rs in got.items()}
    process = {k: statistics.median(r["seconds"] for r in rs) for k, rs in got.items()}
    table(f"{records(window):,} records, medians of {opts.rounds} alternating rounds", ["scan", "process (s)", "ratio",
          "pipeline (s)", "ratio"], [[k, process[k], ratio(process[k], process["without"]), pipeline[k],
                                      ratio(pipeline[k], pipeline["without"])] for k in got])
