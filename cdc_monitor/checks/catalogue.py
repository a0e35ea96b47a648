"""The rule catalogue, gathered from the check modules that declare and judge each rule.

Reports, metrics, the generator's labels and watch read it from here; a rule is added in one
check module (its declaration beside its logic) and nowhere else."""

from __future__ import annotations

from cdc_monitor.checks import (
    anomalies,
    decode,
    lag,
    ordering,
    registry_schemas,
    schema,
    schema_changes,
    snapshots,
    source_block,
    source_gaps,
    stalls,
    transactions,
)
from cdc_monitor.vocabulary import Rule

MODULES = (decode, registry_schemas, lag, stalls, transactions, schema, source_block, schema_changes, ordering, snapshots,
           source_gaps, anomalies)
CATALOGUE: dict[str, Rule] = {r.name: r for m in MODULES for r in m.RULES}
ONCE_PER_TOPIC = schema.ONCE_PER_TOPIC



def rules_markdown() -> str:
    """The catalogue as the table docs/rules.md holds (tests/unit/test_vocabulary.py keeps it current:
    ``python -c "from cdc_monitor.checks.catalogue import rules_markdown; print(rules_markdown())"``)."""
    rows = ["| rule | check | severity | judged per | meaning |", "| --- | --- | --- | --- | --- |"]
    for r in CATALOGUE.values():
        rows.append(f"| `{r.name}` | {r.check} | {r.severity} | {r.scope} | {r.meaning} |")
    return "\n".join(rows) + "\n"
