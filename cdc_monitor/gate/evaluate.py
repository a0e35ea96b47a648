"""``gate``: scan once, run every suite on its frame, report outcomes; exit 0 pass / 1 fail."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_monitor.gate.frames import aggregate_frames, events_frame
from cdc_monitor.gate.gx_runner import GateRunner, Outcome
from cdc_monitor.gate.suites import Suite
from cdc_monitor.runtime.progress import live_steps, spark_tasks
from cdc_monitor.runtime.session import capabilities

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult


@dataclass
class GateResult:
    outcomes: list[Outcome] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success]

    def to_json_dict(self) -> dict[str, Any]:
        return {"tool": "cdc-monitor", "gate": "passed" if not self.failed else "failed",
                "expectations": len(self.outcomes), "failed": len(self.failed), "timings_seconds": self.timings,
                "outcomes": [{"suite": o.suite, "frame": o.frame, "expectation": o.expectation,
                              "kwargs": {k: v for k, v in o.kwargs.items() if k != "batch_id"}, "success": o.success,
                              "result": o.result, "exception": o.exception} for o in self.outcomes]}


def run_gate(result: ScanResult, suites: Sequence[Suite], runner: GateRunner,
             progress: Callable[[str], None] | None = None, live: bool = False) -> GateResult:
    """Every suite on its frame (``runner`` made and prepared before the scan, so bad suites fail
    early); ``live``: the running suite on a live line (a terminal's: runtime/progress.py)."""
    out = GateResult()
    started = time.time()
    frames: dict[str, Any] = dict(aggregate_frames(result))
    if any(s.frame == "events" for s in suites):
        assert result.events_frame is not None, "run_scan(keep_events=True) is needed for events suites"
        frames["events"] = events_frame(result.events_frame)
    spark = result.events_frame.sparkSession if result.events_frame is not None else None
    shown = live and spark is not None and bool(suites)
    with live_steps(shown, _step(suites[0]) if suites else "", lambda: spark_tasks(capabilities(spark))) as steps:  # type: ignore[arg-type]
        for suite in suites:
            steps.step(_step(suite))
            t0 = time.time()
            outcomes = runner.run(suite, frames[suite.frame])
            out.outcomes.extend(outcomes)
            out.timings[f"suite_{suite.name}"] = round(time.time() - t0, 3)
            if progress:
                bad = sum(not o.success for o in outcomes)
                progress(f"suite {suite.name} ({suite.frame}): {len(outcomes) - bad}/{len(outcomes)} passed "
                         f"in {time.time() - t0:.1f}s")
    out.timings["gx_total"] = round(time.time() - started, 3)
    return out


def _step(suite: Suite) -> str:
    return f"suite {suite.name} ({suite.frame})"
