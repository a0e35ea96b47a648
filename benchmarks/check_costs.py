"""Cost of each check on its own, over the materialized events of a capture (one Spark session).
Usage: python -m benchmarks.check_costs CAPTURE..."""

from __future__ import annotations

import json
import sys
import time


def main(paths: list[str]) -> dict[str, float]:
    from cdc_monitor.checks.context import CheckContext
    from cdc_monitor.checks.lag import lag_table
    from cdc_monitor.checks.ordering import ordering_findings
    from cdc_monitor.checks.table_pass import TableRules, table_findings
    from cdc_monitor.checks.transactions import transaction_check
    from cdc_monitor.checks.verdicts import verdict_findings
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.decoding import decode_records
    from cdc_monitor.engine.cache import FrameCache
    from cdc_monitor.engine.facts import window_facts
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    caps = capabilities(spark)
    cfg = ScanConfig()
    costs: dict[str, float] = {}
    t0 = time.perf_counter()
    cache = FrameCache()
    events = cache.materialize(decode_records(read_capture(spark, paths).records, cfg.roles, session=caps))
    costs["read_decode_materialize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    facts = window_facts(events)
    costs["window"] = time.perf_counter() - t0

    def timed(name, frames):
        started = time.perf_counter()
        for f in frames:
            f.count()
        costs[name] = round(time.perf_counter() - started, 2)

    timed("record_verdicts", [verdict_findings(events)])  # every per-record rule, judged by the decoder
    timed("table_pass", [table_findings(events, TableRules(cfg.lag_threshold_ms, cfg.table_lag_threshold_ms,
                                                           ddl_servers=facts.ddl_servers), caps)])
    started = time.perf_counter()
    lag_table(events).collect()
    costs["lag_table"] = round(time.perf_counter() - started, 2)
    timed("transactions", transaction_check(events, CheckContext(caps, facts, cfg, FrameCache())).findings)
    timed("ordering", [ordering_findings(events, CheckContext(caps, facts, cfg, FrameCache()))])
    return {k: round(v, 2) for k, v in costs.items()}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
