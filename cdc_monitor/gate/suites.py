"""Expectation suites as stored in expectations/*.json (Great Expectations 1.x suite JSON).

Each suite names the result frame it checks in ``meta.cdc_monitor.frame``. Loading is pure
(no GX import): structure errors are reported with the file name, before any scan runs; GX
itself then rejects unknown expectation types, also as a usage error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_monitor.errors import UsageError

# frame -> what it holds; "events" is a Spark frame (one row per decoded data event), the others
# are small aggregates handed to GX as pandas frames
FRAMES = {
    "events": "server, table, topic, partition, offset, op, snapshot, ts_ms, source_ts_ms, source_ts_valid, lag_ms, "
              "record_lag_ms (lag_ms only for non-snapshot c/u/d events)",
    "lag": "one row per server/topic/table: count, p50_ms, p95_ms, p99_ms, max_ms, negative, invalid_source_ts, "
           "snapshot_excluded, record_*",
    "transactions": "one row per server: complete, open, unverifiable, missing_end, missing_begin, count_mismatch, "
                    "collection_count_mismatch, order_gap, orphan_events",
    "findings": "one row per check/rule/severity/server/table: count",
}


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    frame: str
    spec: dict[str, Any]  # the GX suite JSON, minus our meta


def load_suites(paths: list[str] | tuple[str, ...]) -> list[Suite]:
    """Suite files, and every *.json in folders given (``--suite expectations/``)."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise UsageError(f"suite folder {p} holds no *.json suites")
            files.extend(found)
        else:
            files.append(p)
    return [load_suite(f) for f in files]


def load_suite(path: str | Path) -> Suite:
    p = Path(path)
    try:
        spec = json.loads(p.read_text())
    except FileNotFoundError:
        raise UsageError(f"suite {p} does not exist: pass expectations/*.json files to --suite") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"suite {p} is not readable JSON ({err}): fix the file") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("expectations"), list) or not spec["expectations"]:
        raise UsageError(f"suite {p} has no 'expectations' list: see expectations/README.md for the format")
    frame = ((spec.get("meta") or {}).get("cdc_monitor") or {}).get("frame")
    if frame not in FRAMES:
        raise UsageError(f"suite {p}: meta.cdc_monitor.frame is {frame!r}; use one of {', '.join(FRAMES)}")
    for i, exp in enumerate(spec["expectations"]):
        if not isinstance(exp, dict) or not isinstance(exp.get("type"), str) or not isinstance(exp.get("kwargs", {}), dict):
            raise UsageError(f"suite {p}: expectation #{i + 1} needs a 'type' string and a 'kwargs' object")
        if "quantile" in exp["type"]:
            raise UsageError(f"suite {p}: {exp['type']} crashes Great Expectations' checkpoints (1.24): bound the "
                             "values with 'mostly', or use the lag frame's p50_ms/p95_ms/p99_ms columns")
    name = str(spec.get("name") or p.stem)
    return Suite(p, name, frame, {**spec, "name": name})
