"""Structural cost of a scan: the number of Spark jobs it runs, counted by the status tracker
and reported in the JSON report's ``timings_seconds.spark_jobs``. Not a timing: the count is
the same on any machine. The budget is 12 whatever the input (a scan runs 5 today: two
checkpoints, the window census, the schema shapes, one collect of everything else; one more
when a capture has unreadable lines)."""

from __future__ import annotations

from cdc_monitor.generator import generate
from cdc_monitor.generator.capture import write_capture

BUDGET = 12


def test_a_scan_runs_at_most_12_spark_jobs(tmp_path, scan):
    clean, faulty = tmp_path / "clean.jsonl", tmp_path / "faulty.jsonl"
    write_capture(generate("mysql", events=120, seed=5), clean)
    write_capture(generate("sqlserver", events=120, seed=5, faults=True), faulty)
    with faulty.open("a") as fh:  # and an unreadable capture line: the most a scan does
        fh.write("not a kcat record\n")
    results = [scan([path]) for path in (clean, faulty)]
    assert results[1].summary["unreadable_lines"] == 1 and results[1].findings
    jobs = [r.timings["spark_jobs"] for r in results]
    assert all(0 < n <= BUDGET for n in jobs), jobs
