"""The shared vocabulary, Spark-free, and its Spark column twin."""

from cdc_monitor.vocabulary import ALLOWED_OPS, OPS, TopicRoles, txn_key


def test_postgresql_ids_reconcile_by_txid_others_whole():
    assert txn_key("571:53195829") == txn_key("571:53195832") == "571"
    for whole in ("3e11fa47-71ca-11e1-9e33-c80aa9429562:7", "00000027:00000700:0005", "06.5.800",
                  "0000000a-0000-4000-8000-000000000000", "orphan-12", "571:", ":5", "a1:5"):
        assert txn_key(whole) == whole
    assert txn_key(None) is None


def test_every_connector_emits_row_ops_and_only_known_ones():
    for ops in ALLOWED_OPS.values():
        assert {"c", "u", "d", "r"} <= set(ops) <= set(OPS) - {"m"}
    assert "t" not in ALLOWED_OPS["dtle"] and "t" not in ALLOWED_OPS["sqlserver"]


def test_column_twin_agrees(spark):
    from pyspark.sql import functions as F

    from cdc_monitor.decoding.events import txn_key as txn_key_col

    ids = ["571:53195829", "3e11fa47-71ca-11e1-9e33-c80aa9429562:7", "00000027:00000700:0005", "571:", None]
    rows = spark.createDataFrame([(i,) for i in ids], "id string").select(txn_key_col(F.col("id")).alias("k")).collect()
    assert [r["k"] for r in rows] == [txn_key(i) for i in ids]


def test_docs_rules_table_is_the_catalogue():
    from pathlib import Path

    from cdc_monitor.checks.catalogue import rules_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text()
    table = doc.split("<!-- rules:begin -->\n")[1].split("<!-- rules:end -->")[0]
    assert table == rules_markdown(), "docs/rules.md is behind the catalogue: regenerate its table (see rules_markdown)"


def test_topic_roles_name_transaction_and_heartbeat_topics_and_their_servers():
    topics = ["pg.public.orders", "pg.transaction", "a.b.transaction", "__debezium-heartbeat.pg", "txns"]
    roles = TopicRoles()
    assert [roles.is_transaction(t) for t in topics] == [False, True, True, False, False]
    assert [roles.is_heartbeat(t) for t in topics] == [False, False, False, True, False]
    assert [roles.server(t) for t in topics] == ["pg", "pg", "a.b", "pg", "txns"]
    assert roles.transaction_servers(topics) == ("a.b", "pg")
    named = TopicRoles.named("txns")  # --transaction-topic txns: only that one, its server its first dotted part
    assert named.transaction_servers(topics) == ("txns",) and not named.is_transaction("pg.transaction")
    assert TopicRoles.named("a.b+c").is_transaction("a.b+c") and not TopicRoles.named("a.b+c").is_transaction("aXbbc")


def test_the_decoders_topic_roles_are_the_vocabularys(spark, caps):
    """The decoder's column expressions (kind, a marker's and a heartbeat's server) agree with TopicRoles."""
    from datetime import UTC, datetime

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.sources.base import KAFKA_SCHEMA

    roles = TopicRoles(heartbeat_topic_prefix="__hb")
    marker = b'{"status": "BEGIN", "id": "1", "event_count": null, "data_collections": null, "ts_ms": 1}'
    topics = ["pg.transaction", "a.b.transaction", "__hb.pg", "__debezium-heartbeat.pg"]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [(None, marker if "transaction" in t else b'{"ts_ms": 1}', t, 0, i, at, 0, None) for i, t in enumerate(topics)]
    got = decode_records(spark.createDataFrame(rows, KAFKA_SCHEMA), roles, session=caps).select("topic", "kind", "server").collect()
    kinds = {r["topic"]: r["kind"] for r in got}
    assert [kinds[t] == "transaction" for t in topics] == [roles.is_transaction(t) for t in topics]
    assert [kinds[t] == "heartbeat" for t in topics] == [roles.is_heartbeat(t) for t in topics]
    assert {r["topic"]: r["server"] for r in got if r["kind"] != "data"} == {
        t: roles.server(t) for t in topics if roles.is_transaction(t) or roles.is_heartbeat(t)}


def _string_literals(path):
    import io
    import tokenize

    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.STRING:
            yield tok.start[0], tok.string.strip("\"'")


def test_a_rule_name_is_spelled_only_where_its_rule_is_declared():
    """Everywhere else a rule is named through its ``Rule`` object (``finding(MISSING_END, ...)``,
    ``MISSING_END.name``), so renaming a rule is one edit and a typo is an import error."""
    from pathlib import Path

    from cdc_monitor.checks.catalogue import MODULES
    from cdc_monitor.vocabulary import TxStatus

    package = Path(__file__).resolve().parents[2] / "cdc_monitor"
    home = {r.name: Path(m.__file__).resolve() for m in MODULES for r in m.RULES}
    vocabulary = package / "vocabulary.py"
    statuses = {s.value for s in TxStatus}  # missing_end, missing_begin: statuses first, their rules named after them
    stray = [f"{path.relative_to(package)}:{line}: {text}"
             for path in sorted(package.rglob("*.py")) for line, text in _string_literals(path)
             if text in home and path.resolve() != home[text] and not (path == vocabulary and text in statuses)]
    assert stray == []
    assert len(home) == len({r.name for m in MODULES for r in m.RULES}) > 40


def test_finding_takes_a_rule_object():
    import pytest

    from cdc_monitor.checks.findings import finding
    from cdc_monitor.checks.transactions import MISSING_END

    with pytest.raises(AttributeError):
        finding(MISSING_END.name, None)  # type: ignore[arg-type]
