"""The rule catalogue, gathered from the check modules that declare and judge each rule.

Reports, metrics, the generator's labels and watch read it from here; a rule is added in one
check module (its declaration beside its logic) and nowhere else."""

from __future__ import annotations

from cdc_monitor.checks import decode, lag, ordering, schema, transactions
from cdc_monitor.vocabulary import Rule

CATALOGUE: dict[str, Rule] = {r.name: r for m in (decode, lag, transactions, schema, ordering) for r in m.RULES}
# rule -> (check, severity, meaning)
RULES: dict[str, tuple[str, str, str]] = {r.name: (r.check, r.severity, r.meaning) for r in CATALOGUE.values()}
ONCE_PER_TOPIC = schema.ONCE_PER_TOPIC

