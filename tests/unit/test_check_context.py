"""A check runs on a tiny hand-made frame with a ``CheckContext`` and nothing else: no engine, no
session argument, no facts computed (the default context knows none and leaves frames as they are)."""

from __future__ import annotations

import json
from datetime import UTC

from cdc_monitor.checks.context import CheckContext, WindowFacts
from cdc_monitor.checks.ordering import POSITION_REGRESSION, ordering_findings
from cdc_monitor.checks.transactions import MISSING_BEGIN, transaction_check
from cdc_monitor.decoding import decode_records
from cdc_monitor.sources.base import KAFKA_SCHEMA

TOPIC = "shop.inventory.orders"


def _change(offset: int, op: str, pos: int) -> tuple:
    value = {"before": None, "after": {"id": 1, "qty": offset}, "op": op, "ts_ms": 1_700_000_001_000 + offset,
             "source": {"version": "2.7.0.Final", "connector": "mysql", "name": "shop", "ts_ms": 1_700_000_000_000 + offset,
                        "snapshot": "false", "db": "inventory", "table": "orders", "server_id": 1,
                        "file": "binlog.000003", "pos": pos, "row": 0}}
    return (json.dumps({"id": 1}).encode(), json.dumps(value).encode(), TOPIC, 0, offset, None, 0, [])


def _events(caps, rows):
    from datetime import datetime

    stamped = [(*r[:5], datetime.fromtimestamp(1_700_000_002 + r[4], UTC), *r[6:]) for r in rows]
    return decode_records(caps.spark.createDataFrame(stamped, KAFKA_SCHEMA), session=caps)


def test_ordering_on_three_hand_made_records(caps):
    events = _events(caps, [_change(0, "c", 100), _change(1, "u", 300), _change(2, "u", 200)])
    found = [r.asDict() for r in ordering_findings(events, CheckContext(caps)).collect()]
    assert [(f["rule"], f["offset"]) for f in found] == [(POSITION_REGRESSION.name, 2)]


def test_transactions_read_their_facts_from_the_context(caps):
    end = {"status": "END", "id": "tx-9", "ts_ms": 1_700_000_000_500, "event_count": 0, "data_collections": []}
    marker = (json.dumps({"id": "tx-9"}).encode(), json.dumps(end).encode(), "shop.transaction", 0, 7, None, 0, [])
    events = _events(caps, [marker])
    # nothing known of its partition: its BEGIN may be before the window (unverifiable, no finding)
    unknown = transaction_check(events, CheckContext(caps)).findings
    assert [r["rule"] for f in unknown for r in f.collect()] == []
    # the same END, its partition known to have been read from its first record: its BEGIN is missing
    read_whole = WindowFacts(rows=[], partitions=[{"topic": "shop.transaction", "partition": 0, "from_start": True}])
    again = transaction_check(events, CheckContext(caps, facts=read_whole)).findings
    assert [r["rule"] for f in again for r in f.collect()] == [MISSING_BEGIN.name]


def test_a_finding_of_a_rule_known_per_row_has_its_rules_declared_check_and_severity(spark):
    """dynamic_finding maps a per-row rule name to its declaration, among the rules it is given
    (literals where they share a check or a severity)."""
    from pyspark.sql import functions as F

    from cdc_monitor.checks.findings import dynamic_finding
    from cdc_monitor.checks.schema import SCHEMA_RULES, TOPIC_RULES

    mixed = [*TOPIC_RULES, MISSING_BEGIN]  # schema and transactions; warning, info and error
    for rules in (mixed, SCHEMA_RULES[:1]):
        frame = spark.createDataFrame([(r.name,) for r in rules], "rule string")
        got = frame.select(*dynamic_finding(F.col("rule"), rules, F.lit("m"))).collect()
        assert {(r["rule"], r["check"], r["severity"]) for r in got} == {(r.name, r.check, r.severity) for r in rules}
