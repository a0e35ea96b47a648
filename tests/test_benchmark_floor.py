"""The floor benchmark (benchmarks/scans.py, `python -m benchmarks floor`) measures what it says: one Spark job over every
record of a capture, through cdc-monitor's own reader, each record counted once."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.scans import floor_job
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture


def test_the_floor_job_reads_every_record_in_one_spark_job(tmp_path, spark):
    paths = []
    for flavour in ("mysql", "postgresql"):
        path = tmp_path / f"{flavour}.jsonl"
        write_capture(generate(flavour, events=60, seed=7), path)
        paths.append(str(path))
    lines = [json.loads(line) for p in paths for line in Path(p).read_text(encoding="utf-8").splitlines() if line.strip()]
    tracker = spark.sparkContext.statusTracker()
    group = "floor-benchmark-test"
    spark.sparkContext.setJobGroup(group, "floor job")
    try:
        counted = floor_job(spark, paths)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert counted == len(lines) > 0
    assert len(tracker.getJobIdsForGroup(group)) == 1


def test_every_command_of_the_performance_page_is_a_registered_measurement_with_its_options():
    import re
    import shlex

    from benchmarks.__main__ import load, parser
    from benchmarks.harness import REGISTRY

    load()
    page = (Path(__file__).resolve().parents[1] / "docs" / "performance.md").read_text(encoding="utf-8")
    commands = [shlex.split(c)[3:] for c in re.findall(r"`(python -m benchmarks [a-z][^`]*)`", page)]
    assert len(commands) >= 15
    for name, *args in commands:
        assert name in REGISTRY, name
        parser(REGISTRY[name]).parse_args(args)  # (exits on an unknown option)
