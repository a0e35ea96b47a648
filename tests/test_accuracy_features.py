"""Legitimate traffic that must stay silent, or be reported once per topic, and the generator's
PostgreSQL transaction ids as Debezium writes them (issue: accuracy on real traffic).

Expectations are computed here from the capture itself (which topics carry data, where each
topic's first record is), never from the checker's output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.kcat_writer import kcat_lines, write_capture

EVENTS = 300
TX_FLAVOURS = [f for f in FLAVOUR_NAMES if f != "dtle"]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _first_per_data_topic(folder: Path) -> dict[str, tuple[int, int]]:
    """topic -> (partition, offset) of its first record with a value, data topics only."""
    first: dict[str, tuple[int, int]] = {}
    for path in folder.iterdir():
        for r in _records(path):
            if r["topic"].endswith(".transaction") or r["payload"] is None:
                continue
            at = (r["partition"], r["offset"])
            first[r["topic"]] = min(first.get(r["topic"], at), at)
    return first


def test_postgresql_ids_are_txid_colon_lsn_differing_on_every_record():
    traffic = generate("postgresql", events=60, seed=3)
    by_txid: dict[str, set[str]] = {}
    for line in kcat_lines(traffic):
        r = json.loads(line)
        if r["payload"] is None:
            continue
        payload = json.loads(r["payload"])["payload"]
        ident = payload.get("id") if r["topic"].endswith(".transaction") else (payload.get("transaction") or {}).get("id")
        if ident is None:
            continue
        assert re.fullmatch(r"\d+:\d+", ident), ident
        if not r["topic"].endswith(".transaction"):
            assert ident.split(":")[0] == str(payload["source"]["txId"])  # the txId part is source.txId
            assert ident.split(":")[1] == str(payload["source"]["lsn"])  # the LSN part is the event's own
        by_txid.setdefault(ident.split(":")[0], set()).add(ident)
    multi = [ids for ids in by_txid.values() if len(ids) >= 4]  # BEGIN, END and two or more events
    assert multi and all(len(ids) >= 4 for ids in multi)


@pytest.fixture(scope="module")
def feature_captures(tmp_path_factory):
    root = tmp_path_factory.mktemp("features")
    for i, flavour in enumerate(FLAVOUR_NAMES):
        # legitimate: decimals as JSON numbers (decimal.format=NUMERIC), with schemas
        write_capture(generate(flavour, events=EVENTS, seed=300 + i, decimal_format="numeric"),
                      root / "numeric" / f"{flavour}.jsonl")
        write_capture(generate(flavour, events=EVENTS, seed=310 + i, flatten=True, schemas=i % 2 == 0),
                      root / "flat" / f"{flavour}.jsonl")
        write_capture(generate(flavour, events=EVENTS, seed=320 + i, connector="acme", schemas=i % 2 == 1),
                      root / "unknown" / f"{flavour}.jsonl")
    # only the transaction topics of clean traffic: the data topics were not captured
    txn_only = root / "txn-only"
    txn_only.mkdir()
    for flavour in TX_FLAVOURS:
        lines = [line for line in kcat_lines(generate(flavour, events=EVENTS, seed=330)) if '.transaction"' in line]
        (txn_only / f"{flavour}.jsonl").write_text("".join(line + "\n" for line in lines))
    return root


def test_numeric_decimals_are_legitimate(feature_captures, scan):
    result = scan([feature_captures / "numeric"])
    assert result.findings == []
    assert result.transactions["complete"] > 50


@pytest.mark.parametrize("rule,scenario", [("non_envelope_values", "flat"), ("unknown_connector", "unknown")])
def test_said_once_per_topic(feature_captures, scan, rule, scenario):
    folder = feature_captures / scenario
    result = scan([folder])
    expected = {(rule, topic, p, o) for topic, (p, o) in _first_per_data_topic(folder).items()}
    found = {(f["rule"], f["topic"], f["partition"], f["offset"]) for f in result.findings}
    assert found == expected
    values = sum(1 for path in folder.iterdir() for r in _records(path)
                 if r["payload"] is not None and not r["topic"].endswith(".transaction"))
    assert sum(int(f["message"].split()[0] if rule == "non_envelope_values" else f["message"].split(": ")[1].split()[0])
               for f in result.findings) == values  # every such record counted, none lost
    if scenario == "flat":  # data events without envelopes: their transactions cannot be verified
        assert result.transactions["complete"] == 0 and result.transactions["unverifiable"] > 50
        assert {c["collection"] for c in result.transactions["collections_not_read"]}


def test_transaction_topic_alone_is_unverifiable_and_names_what_was_not_read(feature_captures, scan):
    result = scan([feature_captures / "txn-only"])
    assert result.findings == []
    tx = result.transactions
    assert tx["complete"] == 0 and tx["open"] == len(TX_FLAVOURS)
    assert tx["unverifiable"] == tx["total"] - tx["open"] > 100
    named = {(c["server"], c["collection"]) for c in tx["collections_not_read"]}
    from cdc_monitor.generator.flavours import FLAVOURS, TABLES

    assert named == {(FLAVOURS[f].server, FLAVOURS[f].data_collection(t.name)) for f in TX_FLAVOURS for t in TABLES}
