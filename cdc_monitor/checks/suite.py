"""The one runner: every check over a window, its findings tagged by scope. ``scan`` takes them
all; ``watch`` runs the same checks and filters by scope (per-record rules are judged on the new
records only, per-key and per-table ones where they land on a new record, per-transaction ones
when the transaction becomes final)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdc_monitor.checks.lag import lag_table
from cdc_monitor.checks.ordering import ordering_sql
from cdc_monitor.checks.schema import topic_findings
from cdc_monitor.checks.source_block import sequence_sql
from cdc_monitor.checks.sql import findings_frame
from cdc_monitor.checks.stalls import stall_sql
from cdc_monitor.checks.table_pass import TableRules, table_sql
from cdc_monitor.checks.transactions import transaction_check
from cdc_monitor.checks.verdicts import verdict_findings
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


def run_checks(events: DataFrame, ctx: CheckContext, *, fresh: DataFrame | None = None,
               lag_scope: str | None = None, key_found: DataFrame | None = None) -> CheckedResult:
    """Every check over ``events`` (the window, with what watch carries from earlier batches).

    ``fresh``: the records per-record and per-topic rules judge (watch: the batch's new records;
    default all). ``lag_scope``: a SQL predicate, the records lag spikes run over (watch: new ones and the tails
    carried so a spike across batches counts once; default all). Nothing here runs a Spark job: the
    window evaluation collects every frame (per-record rules: the decoder's verdicts). ``key_found``:
    the key pass's findings where its walks ran already (watch: in its stateful operator; checks/ordering.py's
    ``_JUDGED`` reads them), instead of the key pass over ``events``."""
    facts, config = ctx.facts, ctx.config
    fresh = events if fresh is None else fresh
    # a check whose input the window does not hold (``facts``) is not planned: it would find nothing
    tx = transaction_check(events, ctx) if facts.has_transactions else None
    relations = {"events": events}
    # the table pass, and the per-server checks written as SQL: one statement (checks/sql.py)
    table_rules = TableRules(config.lag_threshold_ms, config.table_lag_threshold_ms, lag_scope or "true",
                             snapshots=facts.has_snapshot_events,
                             ddl_servers=facts.ddl_servers if facts.has_schema_changes else None,
                             since=facts.lookup_sql("first_change", "concat_ws('|', server, `table`)"))
    per_table = [table_sql(table_rules, not ctx.placement.one_partition), stall_sql(config.stall_threshold_ms),
                 *([sequence_sql()] if facts.has_sequences else [])]
    by_scope = {
        # what the record alone shows, judged by the decoder while it read the record
        "record": [verdict_findings(fresh)] if facts.has_verdicts else [],
        "key": [findings_frame([ordering_sql(ctx, judged=key_found is not None)],
                               {**relations, **({"key_found": key_found} if key_found is not None else {})}, ctx.session)],
        "transaction": tx.findings if tx is not None else [],
        "table": [*([topic_findings(fresh)] if facts.has_topic_flags else []), findings_frame(per_table, relations, ctx.session)],
    }
    return CheckedResult(by_scope=by_scope, lag=lag_table(fresh), transactions=tx.transactions if tx is not None else None)
