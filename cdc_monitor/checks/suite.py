"""The one runner: every check over a window, its findings tagged by scope. ``scan`` takes them
all; ``watch`` runs the same checks and filters by scope (per-record rules are judged on the new
records only, per-key and per-table ones where they land on a new record, per-transaction ones
when the transaction becomes final)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdc_monitor.checks.decode import decode_rules
from cdc_monitor.checks.findings import record_findings
from cdc_monitor.checks.lag import lag_rules, lag_spike_sql, lag_table
from cdc_monitor.checks.ordering import ordering_sql
from cdc_monitor.checks.registry_schemas import avro_rules
from cdc_monitor.checks.schema import embedded_schema_findings, envelope_rules, topic_findings
from cdc_monitor.checks.schema_changes import schema_change_sql
from cdc_monitor.checks.snapshots import snapshot_restarted_sql, snapshot_rules
from cdc_monitor.checks.source_block import sequence_sql, source_block_rules
from cdc_monitor.checks.sql import findings_frame
from cdc_monitor.checks.stalls import stall_sql
from cdc_monitor.checks.transactions import marker_rules, transaction_check
from cdc_monitor.vocabulary import SCOPES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.checks.context import CheckContext


@dataclass
class CheckedResult:
    """The checks' frames, not yet computed (the pipeline collects them in one job)."""

    by_scope: dict[str, list[DataFrame]] = field(default_factory=lambda: {s: [] for s in SCOPES})
    lag: DataFrame | None = None  # the lag table
    transactions: DataFrame | None = None  # one row per transaction: status and problem flags (None: the window has none)

    @property
    def findings(self) -> list[DataFrame]:
        return [f for scope in SCOPES for f in self.by_scope[scope]]


def run_checks(events: DataFrame, ctx: CheckContext, texts: DataFrame | None = None, *,
               fresh: DataFrame | None = None, lag_scope: DataFrame | None = None) -> CheckedResult:
    """Every check over ``events`` (the window, with what watch carries from earlier batches).

    ``texts``: the events with their raw texts, when ``events`` was narrowed by ``without_texts``.
    ``fresh``: the records per-record and per-topic rules judge (watch: the batch's new records;
    default all). ``lag_scope``: the records lag spikes run over (watch: new ones and the tails
    carried so a spike across batches counts once; default all). Only the embedded-schema check
    runs a Spark job here (its distinct shapes are judged on the driver), and only when the window
    has keys or values with schemas and ``ctx.shapes`` (those verdicts) are not given."""
    facts, config = ctx.facts, ctx.config
    fresh = events if fresh is None else fresh
    # a check whose input the window does not hold (``facts``) is not planned: it would find nothing
    tx = transaction_check(events, ctx) if facts.has_transactions else None
    relations = {"events": events, "lag_scope": events if lag_scope is None else lag_scope}
    # the per-table checks written as SQL: one statement (checks/sql.py)
    per_table = [*([schema_change_sql()] if facts.has_schema_changes else []),
                 *([snapshot_restarted_sql()] if facts.has_snapshot_events else []),
                 lag_spike_sql(config.lag_threshold_ms, config.table_lag_threshold_ms),
                 stall_sql(config.stall_threshold_ms), sequence_sql()]
    by_scope = {
        # decode, lag and envelope rules need only the record itself: one pass for all of them
        "record": [record_findings(fresh, [*decode_rules(), *avro_rules(), *lag_rules(), *envelope_rules(),
                                         *snapshot_rules(), *marker_rules(),
                                         *source_block_rules()]),
                   *(embedded_schema_findings(fresh if texts is None else texts, ctx.shapes)
                     if facts.has_embedded_schemas else [])],
        "key": [findings_frame([ordering_sql(ctx)], relations, ctx.placement)],
        "transaction": tx.findings if tx is not None else [],
        "table": [topic_findings(fresh), findings_frame(per_table, relations, ctx.placement)],
    }
    return CheckedResult(by_scope=by_scope, lag=lag_table(fresh), transactions=tx.transactions if tx is not None else None)
