"""``gate``: a scan, then Great Expectations suites over its results (a CI data-quality gate)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cdc_monitor.errors import EXIT_FINDINGS, EXIT_OK
from cdc_monitor.verbs import scan

if TYPE_CHECKING:
    from cdc_monitor.gate.evaluate import GateResult
    from cdc_monitor.gate.suites import Suite


@dataclass(frozen=True)
class Settings:
    scan: scan.Settings
    suites: tuple[Suite, ...]
    data_docs: str | None = None  # a folder for Great Expectations' Data Docs (HTML)


@dataclass
class Outcome:
    result: GateResult
    seconds: float  # the whole run, Spark's start-up included
    scan: scan.Outcome | None = None  # the scan the expectations read (its events released)

    @property
    def verdict(self) -> str:
        return f"{len(self.result.failed)} of {len(self.result.outcomes)} expectation(s) failed"

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.result.failed else EXIT_OK


def run(settings: Settings, log: Callable[[str], None] = lambda line: None, live: bool = False) -> Outcome:
    """Unknown expectations and unusable inputs stop the run before the scan (and before Spark).
    ``live``: the running step on a live line (a terminal's: runtime/progress.py)."""
    started = time.time()
    scan_settings = replace(settings.scan, keep_events=True)  # the expectations read the window's events
    source_input = scan.prepare(scan_settings)
    log("cdc-monitor: loading Great Expectations ...")
    from cdc_monitor.gate.evaluate import run_gate
    from cdc_monitor.gate.gx_runner import GateRunner

    runner = GateRunner(settings.data_docs)
    runner.prepare(list(settings.suites))  # unknown expectations: exit 2 before the scan
    scanned_outcome = scan.scan_prepared(scan_settings, source_input, started, log, live)
    scanned = scanned_outcome.result
    try:
        result = run_gate(scanned, list(settings.suites), runner, progress=lambda line: log(f"cdc-monitor: {line}"),
                          live=live)
    finally:
        scanned.release()
    result.timings = {"scan": scanned.duration_seconds, **result.timings}
    return Outcome(result, round(time.time() - started, 3), scanned_outcome)
