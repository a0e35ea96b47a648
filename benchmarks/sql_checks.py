"""The checks written as SQL text against their DataFrame versions, in one process, alternating:
``python -m benchmarks.sql_checks --baseline DIR CAPTURE...``.

``DIR`` is a checkout from before the conversion (``git worktree add /tmp/base 6db1e9b``): its
ordering, lag-spike, stall, sequence, snapshot-restart and schema-change modules are loaded from
there by path, beside this checkout's. Each round plans both over the same checkpointed events (and
the union of their findings), stopped before any job; the first rows of both are compared once.
Prints the median and best seconds per way (the first 4 rounds left out) and whether the rows agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from types import ModuleType

BASELINE = ("ordering", "stalls", "lag", "snapshots", "schema_changes", "source_block")


def _load(folder: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"baseline_{name}", f"{folder}/cdc_monitor/checks/{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--rounds", type=int, default=14)
    ap.add_argument("captures", nargs="+")
    args = ap.parse_args()
    from cdc_monitor.checks import ordering, source_block, stalls, table_pass
    from cdc_monitor.checks.context import CheckContext
    from cdc_monitor.checks.findings import FINDING_COLUMNS
    from cdc_monitor.checks.sql import findings_frame
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.decoding import decode_records
    from cdc_monitor.engine.cache import FrameCache
    from cdc_monitor.engine.facts import window_facts
    from cdc_monitor.engine.union import union_all
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.sources.capture import read_capture

    old = {name: _load(args.baseline, name) for name in BASELINE}
    spark = get_spark()
    caps = capabilities(spark)
    cfg, cache = ScanConfig(), FrameCache()
    events = cache.materialize(decode_records(read_capture(spark, args.captures).records, cfg.roles, session=caps))
    ctx = CheckContext(caps, window_facts(events), cfg, cache)
    lag_args = (cfg.lag_threshold_ms, cfg.table_lag_threshold_ms)

    def dataframes():
        return union_all([*old["ordering"].ordering_findings(events, ctx), old["schema_changes"].schema_change_findings(events),
                          old["snapshots"].snapshot_restarted_findings(events), old["lag"].lag_spike_findings(events, *lag_args),
                          old["stalls"].stall_findings(events, cfg.stall_threshold_ms),
                          old["source_block"].sequence_findings(events)], FINDING_COLUMNS)

    def sql():
        relations = {"events": events}
        table = [table_pass.table_sql(table_pass.TableRules(*lag_args, ddl_servers=ctx.facts.ddl_servers)),
                 stalls.stall_sql(cfg.stall_threshold_ms), source_block.sequence_sql()]
        return union_all([findings_frame([ordering.ordering_sql(ctx)], relations, caps),
                          findings_frame(table, relations, caps)], FINDING_COLUMNS)

    seconds: dict[str, list[float]] = {"dataframe": [], "sql": []}
    rows = {}
    for r in range(args.rounds):
        for name, plan in (("dataframe", dataframes), ("sql", sql)):
            started = time.perf_counter()
            frame = plan()
            seconds[name].append(time.perf_counter() - started)
            if r == 0:
                rows[name] = sorted(map(str, frame.collect()))
    for name, s in seconds.items():
        print(f"{name:10s} median {statistics.median(s[4:]):.3f} s  best {min(s[4:]):.3f} s")
    print(f"same findings: {rows['dataframe'] == rows['sql']} ({len(rows['sql'])} rows)")


if __name__ == "__main__":
    main()
