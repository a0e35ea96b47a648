"""Spark jobs counted per scan: the structural cost budgeted in tests/test_job_budget.py."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class JobCounter:
    """Counts the Spark jobs a scan runs (a structural cost, whatever the machine): the scan's jobs
    run in a job group of their own, whose job ids the status tracker lists at the end."""

    def __init__(self, spark: SparkSession):
        self.sc = spark.sparkContext
        self.group = f"cdc-monitor-scan-{uuid.uuid4().hex[:12]}"
        self.sc.setJobGroup(self.group, "cdc-monitor scan", interruptOnCancel=False)

    def stop(self) -> int:
        n = len(self.sc.statusTracker().getJobIdsForGroup(self.group))
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        return n
