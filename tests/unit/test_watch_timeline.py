"""benchmarks.watch_batch --timeline: a batch's Spark jobs placed in its wall time from Spark's event log."""

from __future__ import annotations

import json

from benchmarks.watch_batch import timelines


def test_jobs_sql_and_the_longest_stretch_without_a_job(tmp_path):
    events = [
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 10_500},
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 11_000},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 7, "time": 14_000},
        {"Event": "SparkListenerJobStart", "Job ID": 2, "Submission Time": 17_000},
        {"Event": "SparkListenerJobEnd", "Job ID": 2, "Completion Time": 18_000},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 7, "time": 18_000},
        {"Event": "SparkListenerJobStart", "Job ID": 3, "Submission Time": 30_000},  # another batch's
        {"Event": "SparkListenerJobEnd", "Job ID": 3, "Completion Time": 31_000},
    ]
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "events_1").write_text("\n".join(json.dumps(e) for e in events))
    (got,) = timelines(tmp_path, [(10.0, 19.0)])
    # jobs 10.5-11 and 17-18: the longest stretch without one is 11 -> 17
    assert got == {"jobs": 2, "jobs_s": 1.5, "sql_executions_s": 4.0, "longest_without_a_job_s": 6.0}
