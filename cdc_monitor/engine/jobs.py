"""Spark jobs counted per scan: the structural cost budgeted in tests/test_job_budget.py."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdc_monitor.runtime.session import SessionCaps


class JobCounter:
    """Counts the Spark jobs a scan runs (a structural cost, whatever the machine): the scan's jobs
    run in a job group of their own, whose job ids the status tracker lists at the end. A Spark
    Connect session has no status tracker: nothing is counted (runtime/connect.py SKIPPED)."""

    def __init__(self, session: SessionCaps):
        self.counting = session.status_tracker
        if not self.counting:
            return
        self.sc = session.spark.sparkContext
        self.group = f"cdc-monitor-scan-{uuid.uuid4().hex[:12]}"
        self.sc.setJobGroup(self.group, "cdc-monitor scan", interruptOnCancel=False)

    def stop(self) -> tuple[int, int] | None:
        """(jobs, stages): the stages of a job are its shuffle boundaries plus one; a window held in
        one partition (engine/cache.py) runs every job in one stage. None: not counted (Connect)."""
        if not self.counting:
            return None
        tracker = self.sc.statusTracker()
        ids = tracker.getJobIdsForGroup(self.group)
        infos = [tracker.getJobInfo(i) for i in ids]
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        return len(ids), sum(len(info.stageIds) for info in infos if info is not None)
