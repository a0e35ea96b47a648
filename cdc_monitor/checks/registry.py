"""Runs every check over the cached events frame and gathers their small aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.cache import NO_CACHE, FrameCache
from cdc_monitor.checks.decode import decode_rules
from cdc_monitor.checks.findings import record_findings
from cdc_monitor.checks.lag import lag_rules, lag_spike_findings, lag_table
from cdc_monitor.checks.ordering import ordering_findings
from cdc_monitor.checks.schema import embedded_schema_findings, envelope_rules, topic_findings
from cdc_monitor.checks.transactions import transaction_check

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.config import ScanConfig


@dataclass
class CheckedResult:
    findings: list[DataFrame] = field(default_factory=list)
    lag: list[dict[str, Any]] = field(default_factory=list)
    transactions: DataFrame | None = None


def run_checks(events: DataFrame, partitions: DataFrame, config: ScanConfig, cache: FrameCache = NO_CACHE,
               texts: DataFrame | None = None) -> CheckedResult:
    """``texts``: the events with their raw texts, when ``events`` was narrowed by ``without_texts``."""
    tx = transaction_check(events, partitions, cache)
    findings = [
        # decode, lag and envelope rules need only the record itself: one pass for all of them
        record_findings(events, [*decode_rules(), *lag_rules(), *envelope_rules()]),
        lag_spike_findings(events, config.lag_threshold_ms, config.table_lag_threshold_ms),
        *tx.findings,
        topic_findings(events),
        *embedded_schema_findings(events if texts is None else texts),
        *ordering_findings(events, partitions, cache),
    ]
    lag = [r.asDict() for r in lag_table(events).orderBy("server", "topic", "table").collect()]
    return CheckedResult(findings=findings, lag=lag, transactions=tx.transactions)
