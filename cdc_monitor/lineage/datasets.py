"""A run's input datasets, built from its outcome (no Spark): each topic read, with the
``dataQualityAssertions`` of the rules judged on it and the ``dataQualityMetrics`` the window's
census counted; for ``reconcile``, each source table with its reconciliation.

Rules judged on a topic: the decode rules on every topic; on a topic of change events the lag,
schema and ordering rules, and the transaction rules when the window holds transaction metadata
(a marker, or an event naming its transaction: when the scan plans that check); on a transaction
topic the transaction rules. The capture rule is judged on capture inputs only,
the Schema Registry's rules with a registry only, ``invalid_capture_line`` on no topic (its lines
have none), watch's ``source`` rules never by these verbs. A rule with a finding on a topic is
listed for it whatever its role. An assertion succeeds when the topic holds no finding of its
rule at or above ``--fail-on`` (the findings that make the exit code 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openlineage.client.event_v2 import InputDataset
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dqa
from openlineage.client.facet_v2 import data_quality_metrics_input_dataset as dqm

from cdc_monitor.checks import decode, lag, registry_schemas, schema, snapshots, source_block, transactions
from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.lineage.facets import PRODUCER, RECONCILE, ReconcileInputDatasetFacet
from cdc_monitor.lineage.naming import jdbc_dataset, topic_namespace
from cdc_monitor.vocabulary import MISMATCH_STATES, NEVER, SCAN_CHECKS, SEVERITY_RANK, ReconcileState, Rule

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult
    from cdc_monitor.reconcile.outcome import ReconcileOutcome, TableReconcile

ASSERTIONS = "dataQualityAssertions"
METRICS = "dataQualityMetrics"

# the field of a record a rule judges, where it judges one (the assertion's column)
RULE_COLUMNS = {
    lag.INVALID_SOURCE_TS.name: "source.ts_ms",
    lag.INVALID_EVENT_TS.name: "ts_ms",
    schema.OP_MISSING.name: "op",
    schema.INVALID_OP.name: "op",
    schema.MISSING_SOURCE_FIELD.name: "source",
    schema.KEY_PAYLOAD_MISMATCH.name: "key",
    schema.KEY_SCHEMA_NAME_MISMATCH.name: "key",
    snapshots.SNAPSHOT_OP_MISMATCH.name: "source.snapshot",
    source_block.INVALID_POSITION.name: "source",
    transactions.COUNT_MISMATCH.name: "event_count",
    transactions.COLLECTION_COUNT_MISMATCH.name: "data_collections",
    transactions.INVALID_MARKER_ID.name: "id",
    transactions.ORDER_GAP.name: "transaction",
    transactions.ORPHAN_EVENT.name: "transaction",
}
# the census's null counts as dataQualityMetrics columns (column, topic_counts key): of every
# record, its value (a tombstone); of the decoded change events, the envelope's op and transaction
RECORD_NULLS = (("value", "tombstones"),)
CHANGE_NULLS = (("op", "op_null"), ("transaction", "transaction_null"))

DECODE = decode.INVALID_JSON.check
TRANSACTIONS = transactions.MISSING_END.check
CHANGE_CHECKS = tuple(c for c in SCAN_CHECKS if c not in (DECODE, TRANSACTIONS))
NO_TOPIC = (decode.INVALID_CAPTURE_LINE.name,)
CAPTURE_ONLY = (decode.DUPLICATE_CAPTURE_RECORD.name,)
REGISTRY_ONLY = tuple(r.name for r in registry_schemas.RULES)
RECONCILE_MEANINGS = {
    ReconcileState.MISSING: "rows of the source table missing from the topic's latest state",
    ReconcileState.EXTRA: "rows in the topic's latest state that the source table does not hold",
    ReconcileState.DIFFERS: "rows on both sides whose column values differ",
}


def judged_rules(counts: dict[str, Any], kafka: bool, registry: bool, transactions_read: bool) -> list[Rule]:
    """The rules a scan judges on a topic with these ``counts`` (engine/census.py ``topic_counts``),
    in catalogue order."""
    checks = {DECODE}
    if counts.get("data_events"):
        checks.update(CHANGE_CHECKS)
        if transactions_read:
            checks.add(TRANSACTIONS)
    if counts.get("transaction_markers"):
        checks.add(TRANSACTIONS)
    return [r for r in CATALOGUE.values() if r.check in checks and r.name not in NO_TOPIC
            and not (kafka and r.name in CAPTURE_ONLY) and (registry or r.name not in REGISTRY_ONLY)]


def failing_rules(result: ScanResult, fail_on: str) -> dict[str, set[str]]:
    """Per topic, the rules with a finding on it at or above ``fail_on``."""
    out: dict[str, set[str]] = {}
    for c in result.finding_counts:
        if fail_on == NEVER or SEVERITY_RANK.get(c["severity"], 0) < SEVERITY_RANK[fail_on]:
            continue
        for topic in c.get("topics") or []:
            out.setdefault(topic, set()).add(c["rule"])
    return out


def _assertion(rule: Rule, success: bool) -> dqa.Assertion:
    return dqa.Assertion(assertion=rule.name, success=success, column=RULE_COLUMNS.get(rule.name),
                         severity=rule.severity, description=rule.meaning, params=None)


def _metrics(counts: dict[str, Any]) -> dqm.DataQualityMetricsInputDatasetFacet:
    nulls = RECORD_NULLS + (CHANGE_NULLS if counts.get("data_events") else ())
    columns = {column: dqm.ColumnMetrics(nullCount=int(counts.get(key, 0)), quantiles=None) for column, key in nulls}
    return dqm.DataQualityMetricsInputDatasetFacet(columnMetrics=columns, rowCount=int(counts.get("records", 0)),
                                                   producer=PRODUCER)


def topic_datasets(result: ScanResult, fail_on: str, capture_namespace: str | None = None) -> list[InputDataset]:
    """Each topic the window read, its assertions and metrics."""
    namespace = topic_namespace(result.inputs, capture_namespace)
    kafka = result.inputs.get("kind") == "kafka"
    registry = bool(result.inputs.get("schema_registry"))
    by_topic = {c["topic"]: c for c in result.topic_counts}
    for p in result.window.get("partitions", []):  # (a topic the census saw no record of: none today)
        by_topic.setdefault(p["topic"], {"topic": p["topic"], "records": p.get("records", 0)})
    transactions_read = any(c.get("transaction_markers") or c.get("data_events", 0) > c.get("transaction_null", 0)
                            for c in by_topic.values())
    failing = failing_rules(result, fail_on)
    found = {topic for c in result.finding_counts for topic in c.get("topics") or []}
    out = []
    for topic in sorted(by_topic):
        rules = judged_rules(by_topic[topic], kafka, registry, transactions_read)
        named = {r.name for r in rules}
        if topic in found:  # a finding on a topic is never left out, whatever its role
            extra = {c["rule"] for c in result.finding_counts if topic in (c.get("topics") or [])} - named
            rules += [CATALOGUE[name] for name in CATALOGUE if name in extra]
        bad = failing.get(topic, set())
        assertions = dqa.DataQualityAssertionsDatasetFacet(
            assertions=[_assertion(r, r.name not in bad) for r in rules], producer=PRODUCER)
        out.append(InputDataset(namespace=namespace, name=topic, facets={},
                                inputFacets={ASSERTIONS: assertions, METRICS: _metrics(by_topic[topic])}))
    return out


def _table_dataset(outcome: ReconcileOutcome, table: TableReconcile) -> InputDataset:
    namespace, name = jdbc_dataset(str(outcome.source.get("url", "")), str(outcome.source.get("dialect", "")),
                                   table.table)
    assertions = [dqa.Assertion(assertion=state.value, success=table.rows.get(state, 0) == 0, severity="error",
                                description=RECONCILE_MEANINGS[state], actual=str(table.rows.get(state, 0)),
                                expected="0", params=None)
                  for state in MISMATCH_STATES]
    assertions += [dqa.Assertion(assertion=ReconcileState.DIFFERS.value, column=column, success=False, severity="error",
                                 description=f"rows whose {column} differs between the source and the topic",
                                 actual=str(n), expected="0", params=None)
                   for column, n in sorted(table.columns_differing.items())]
    reconciled = ReconcileInputDatasetFacet(
        table=table.table, sourceRows=table.source_rows, topicRows=table.topic_rows,
        rows={state.value: n for state, n in table.rows.items()}, columnsDiffering=dict(table.columns_differing),
        unavailableValues=table.unavailable_values, checksumsEqual=table.source_checksum == table.topic_checksum,
        topics=list(table.topics) or None, producer=PRODUCER)
    return InputDataset(namespace=namespace, name=name, facets={}, inputFacets={
        ASSERTIONS: dqa.DataQualityAssertionsDatasetFacet(assertions=assertions, producer=PRODUCER),
        METRICS: dqm.DataQualityMetricsInputDatasetFacet(columnMetrics={}, rowCount=table.source_rows, producer=PRODUCER),
        RECONCILE: reconciled})


def reconcile_datasets(outcome: ReconcileOutcome, capture_namespace: str | None = None) -> list[InputDataset]:
    """The topics the reconciled tables came from, then each source table with its reconciliation."""
    namespace = topic_namespace(outcome.inputs, capture_namespace)
    topics = sorted({topic for t in outcome.tables for topic in t.topics})
    return ([InputDataset(namespace=namespace, name=topic, facets={}, inputFacets={}) for topic in topics]
            + [_table_dataset(outcome, t) for t in outcome.tables])
