"""Structural cost of a scan: the number of Spark jobs it runs, counted by the status tracker
and reported in the JSON report's ``timings_seconds.spark_jobs``. Not a timing: the count is
the same on any machine. The ceiling is today's (53 for a clean capture, 58 for a faulty one
on Spark 4.1); it only ever goes down (the engine redesign aims at 12 whatever the input)."""

from __future__ import annotations

from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import write_capture

CEILING = 60


def test_a_scan_reports_its_spark_jobs_within_the_ceiling(tmp_path, scan):
    clean, faulty = tmp_path / "clean.jsonl", tmp_path / "faulty.jsonl"
    write_capture(generate("mysql", events=120, seed=5), clean)
    write_capture(generate("sqlserver", events=120, seed=5, faults=True), faulty)
    jobs = [scan([path]).timings["spark_jobs"] for path in (clean, faulty)]
    assert all(0 < n <= CEILING for n in jobs), jobs
