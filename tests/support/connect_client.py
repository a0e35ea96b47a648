"""A Spark Connect client process for tests/test_connect.py: ``python -m tests.support.connect_client
URL JOBS OUT`` runs each scan of the JSON list ``JOBS`` (``{"name", "paths"}`` or ``{"name", "kafka":
KafkaFlags fields}``) over the server at ``URL`` through ``verbs.scan`` (what ``cdc-monitor scan
--remote`` runs), one session for all, and writes each JSON report to ``OUT/<name>.json``. One process
for many scans: a Connect client and a classic session cannot share a process (pyspark's column
functions follow the process's mode)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cdc_monitor.config import ScanConfig
from cdc_monitor.sinks.report import render_json
from cdc_monitor.sources.inputs import KafkaFlags
from cdc_monitor.verbs import scan


def main(url: str, jobs: Path, out: Path) -> None:
    config = ScanConfig(max_findings=100_000, spark_remote=url)  # as the suite's local scans (conftest.scan)
    for job in json.loads(jobs.read_text()):
        outcome = scan.run(scan.Settings(tuple(job.get("paths", ())), KafkaFlags(**job.get("kafka", {})), config))
        (out / f"{job['name']}.json").write_text(render_json(outcome.result))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
