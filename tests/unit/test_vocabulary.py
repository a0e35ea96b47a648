"""The shared vocabulary, Spark-free, and its Spark column twin."""

from cdc_monitor.vocabulary import ALLOWED_OPS, OPS, transaction_servers, txn_key


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


def test_transaction_servers_are_named_as_the_decoder_names_a_markers_server():
    topics = ["pg.public.orders", "pg.transaction", "a.b.transaction", "__debezium-heartbeat.pg", "txns"]
    assert transaction_servers(topics) == ("a.b", "pg")
    assert transaction_servers(topics, r"^txns$") == ("txns",)  # --transaction-topic txns: its first dotted part
