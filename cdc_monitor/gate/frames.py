"""The frames suites check: a Spark frame of events, pandas frames of the scan's aggregates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from cdc_monitor.checks.lag import INVALID_SOURCE_TS, decoded_data, judged_source_ts_valid, with_lag
from cdc_monitor.checks.transactions import COLLECTION_COUNT_MISMATCH, COUNT_MISMATCH, ORDER_GAP, ORPHAN_EVENT
from cdc_monitor.vocabulary import TX_STATUSES

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from cdc_monitor.pipeline import ScanResult

TX_COLUMNS = ["server", *TX_STATUSES, COUNT_MISMATCH.name, COLLECTION_COUNT_MISMATCH.name, ORDER_GAP.name, "orphan_events"]
FINDING_COLUMNS = ["check", "rule", "severity", "server", "table", "count"]
LAG_COLUMNS = ["server", "topic", "table", "count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "negative",
               INVALID_SOURCE_TS.name, "snapshot_excluded"]


def events_frame(events: DataFrame) -> DataFrame:
    """One row per decoded data event; lag only where it is defined (non-snapshot c/u/d); source_ts_valid
    where ``invalid_source_ts`` judges the source time (c/u/d and snapshot records, null elsewhere)."""
    lagged = with_lag(decoded_data(events))
    change = F.col("change_event")
    return lagged.select(
        "server", "table", "topic", "partition", "offset", "op",
        F.col("snapshot_event").alias("snapshot"), "ts_ms", "source_ts_ms",
        judged_source_ts_valid().alias("source_ts_valid"),
        F.when(change, F.col("lag_ms")).alias("lag_ms"), F.when(change, F.col("record_lag_ms")).alias("record_lag_ms"),
    )


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=columns)


def aggregate_frames(result: ScanResult) -> dict[str, pd.DataFrame]:
    orphans: dict[str, int] = {}
    for c in result.finding_counts:
        if c["rule"] == ORPHAN_EVENT.name:
            orphans[c["server"] or ""] = orphans.get(c["server"] or "", 0) + int(c["count"])
    tx_rows = [{"server": s, **counts, "orphan_events": orphans.get(s, 0)}
               for s, counts in sorted(result.transactions.get("by_server", {}).items())]
    return {
        "lag": _frame(result.lag, LAG_COLUMNS + [k for k in (result.lag[0] if result.lag else {})
                                                 if k not in LAG_COLUMNS and k != "le_counts"]),
        "transactions": _frame(tx_rows, TX_COLUMNS),
        "findings": _frame(result.finding_counts, FINDING_COLUMNS),
    }
