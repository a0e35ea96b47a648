"""Accuracy of the anomaly rules (checks/anomalies.py) on the generator's seasonal traffic
(generator/seasonal.py): 4 weeks of 5-minute intervals for 20 tables with labelled outages,
spikes, silences and lag creeps, judged interval by interval as a scan every 5 minutes with
``--history`` would judge them (the same functions, the history as rows: no Spark).

``python -m benchmarks anomalies [--grid]``: recall (labelled table-intervals found by their rule;
anomalies with at least one interval found), false alarms per 1,000 judged table-intervals, and
table-intervals without a verdict (too little history). ``--grid`` tries sensitivities, baseline
lengths and floors (how the defaults in config.py were chosen). Targets: recall >= 0.95, false
alarms <= 1 per 1,000 (docs/history.md, docs/performance.md).
"""

from __future__ import annotations

import itertools
import json
import time
from argparse import Namespace
from typing import Any

from benchmarks.harness import measurement, option
from cdc_monitor.checks.anomalies import judge_window
from cdc_monitor.checks.baseline import BaselineSettings, HistoryIndex
from cdc_monitor.history.store import lookback_ms

RECALL_TARGET, FALSE_ALARMS_TARGET = 0.95, 1.0


def evaluate(model: Any, settings: BaselineSettings, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each interval judged against the history before it, then added to it."""
    started = time.time()
    labels = {(lab["server"], lab["table"], lab["interval_start_ms"]): lab["rule"] for lab in model.labels()}
    index = HistoryIndex(model.interval_ms, settings, lookback_ms(model.interval_ms, settings.intervals))
    found: dict[tuple, set[str]] = {}
    judged_intervals = no_verdict = 0
    by_time: dict[int, list[dict[str, Any]]] = {}
    for r in rows if rows is not None else model.history_rows():
        by_time.setdefault(r["interval_start_ms"], []).append(r)
    for t in sorted(by_time):
        batch = by_time[t]
        j = judge_window(batch, index, t)  # no heartbeats: a server shows life by its other tables only
        judged_intervals += len(batch) - len(j.no_verdict)
        no_verdict += len(j.no_verdict)
        for f in j.findings:
            found.setdefault((f["server"], f["table"], f["interval_start_ms"]), set()).add(f["rule"])
        for r in batch:
            index.add(r)
    hits = sum(1 for k, rule in labels.items() if rule in found.get(k, ()))
    false = sum(1 for k, rules in found.items() for rule in rules if labels.get(k) != rule)
    per_anomaly = [any(a.rule in found.get((a.server, a.table, a.start_ms + i * model.interval_ms), ())
                       for i in range(a.intervals)) for a in model.anomalies]
    by_kind: dict[str, list[int]] = {}
    for a in model.anomalies:
        k = by_kind.setdefault(a.kind, [0, 0])
        k[1] += a.intervals
        k[0] += sum(a.rule in found.get((a.server, a.table, a.start_ms + i * model.interval_ms), ()) for i in range(a.intervals))
    return {
        "sensitivity": settings.sensitivity, "baseline_intervals": settings.intervals,
        "min_intervals": settings.min_intervals, "floor": settings.floor,
        "table_intervals": judged_intervals + no_verdict, "judged": judged_intervals, "no_verdict": no_verdict,
        "labelled_intervals": len(labels), "recall": round(hits / len(labels), 4),
        "anomalies": len(per_anomaly), "anomalies_found": sum(per_anomaly),
        "recall_by_kind": {k: round(h / n, 4) for k, (h, n) in by_kind.items()},
        "false_alarms": false, "false_alarms_per_1000": round(1000 * false / max(1, judged_intervals), 3),
        "seconds": round(time.time() - started, 1),
    }


def meets(r: dict[str, Any]) -> bool:
    return r["recall"] >= RECALL_TARGET and r["false_alarms_per_1000"] <= FALSE_ALARMS_TARGET


@measurement("anomalies", option("--grid", action="store_true", help="try sensitivities, baseline lengths and floors"),
             option("--seed", type=int, default=11), events="0")
def anomalies(opts: Namespace) -> None:
    """Recall and false alarms of the anomaly rules on the generator's seasonal traffic (no Spark)."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator.seasonal import SeasonalModel

    model = SeasonalModel(seed=opts.seed)
    rows = list(model.history_rows())
    if opts.grid:
        results = [evaluate(model, BaselineSettings(k, n, m, f), rows)
                   for k, n, m, f in itertools.product((4.0, 5.0, 6.0, 8.0), (12, 24, 36), (8,), (0.05, 0.1, 0.2))]
    else:
        results = [evaluate(model, BaselineSettings.of(ScanConfig()), rows)]
    for r in results:
        print(json.dumps(r | {"meets_targets": meets(r)}))
