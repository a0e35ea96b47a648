"""A large-sample scan: `python -m benchmarks.large [--events 2000000] [--driver-memory 1g]`.

Generates (once, into --workdir) a mixed-flavour capture and runs `cdc-monitor scan` over it as a
whole process, reporting wall time, records/s and peak RSS per process (the Python driver, the
JVM, which in local mode is Spark's driver and executor at once, and Python workers). Results go
to large-<N>.json in --workdir.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks import measure
from benchmarks.__main__ import PY, count_lines, generate


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.large", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--workdir", default="benchmarks/.work")
    ap.add_argument("--driver-memory", default=None, help="spark.driver.memory for the scan (default: cdc-monitor's)")
    opts = ap.parse_args()
    work = Path(opts.workdir)
    folder = work / f"capture-{opts.events}"
    paths = generate(folder, opts.events)
    records = count_lines(paths)
    size_mb = sum(Path(p).stat().st_size for p in paths) / 1e6
    report = work / f"report-large-{opts.events}.json"
    args = [PY, "-m", "cdc_monitor", "scan", str(folder), "--output", "json", "--report-file", str(report), "--quiet"]
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as cfg:
        if opts.driver_memory:
            cfg.write(f'[spark]\n"spark.driver.memory" = "{opts.driver_memory}"\n')
    r = measure.run([*args, "--config", cfg.name])
    Path(cfg.name).unlink()
    if r.returncode not in (0, 1):
        sys.exit(f"scan failed ({r.returncode}): {r.stderr[-2000:]}")
    out = {"events": opts.events, "records": records, "mb": round(size_mb, 1), "seconds": r.seconds,
           "records_per_s": round(records / r.seconds), "peak_total_mb": r.peak_total_mb, "peak_mb": r.peak_mb,
           "driver_memory": opts.driver_memory or "default",
           "timings": json.loads(report.read_text())["timings_seconds"]}
    (work / f"large-{opts.events}.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
