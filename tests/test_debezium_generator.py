"""The generator's PostgreSQL flavour checked against Debezium itself: the records Debezium 3.6.1's
PostgreSQL connector wrote for the suite's real world (conftest's ``debezium_world``: its snapshot
and clean workload, read back from Kafka) and the records ``generate("postgresql")`` writes have the
same structure: envelope, source block and transaction block (field names, order, Connect types,
optionality, schema names and versions), keys, BEGIN/END markers, heartbeats, the ``source.sequence``
and ``transaction.id`` forms and how they relate, the snapshot markers. Values are not compared (the
tables differ); a drift of either side fails here."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from cdc_monitor.generator import generate
from cdc_monitor.generator.records import serialize
from tests.support.debezium_world import HEARTBEAT_TOPIC, PREFIX, TRANSACTION_TOPIC

ROWS = ("before", "after")


def _read(bootstrap: str, end_ms: int) -> list[dict[str, Any]]:
    """Every record of the world's topics up to ``end_ms`` (record time), in each partition's order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "generator-vs-debezium", "enable.auto.commit": False})
    out = []
    try:
        listed = consumer.list_topics(timeout=10).topics
        for topic in sorted(t for t in listed if t.startswith(f"{PREFIX}.") or t == HEARTBEAT_TOPIC):
            for p in listed[topic].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                consumer.assign([TopicPartition(topic, p, low)])
                while low < high:
                    m = consumer.poll(10)
                    assert m is not None and not m.error(), m and m.error()
                    low = m.offset() + 1
                    if m.timestamp()[1] <= end_ms:
                        out.append(_record(m.topic(), m.key(), m.value(), m.timestamp()[1], m.headers()))
    finally:
        consumer.close()
    return out


def _record(topic: str, key: bytes | str | None, value: bytes | str | None, ts: int, headers: Any) -> dict[str, Any]:
    def load(b: bytes | str | None) -> Any:
        return json.loads(b) if b is not None else None

    return {"topic": topic, "key": load(key), "value": load(value), "ts": ts,
            "headers": [h[0] for h in headers or ()]}


@pytest.fixture(scope="module")
def real(debezium_world) -> list[dict[str, Any]]:
    return _read(debezium_world.bootstrap, debezium_world.clean_end_ms)


@pytest.fixture(scope="module")
def generated() -> list[dict[str, Any]]:
    traffic = generate("postgresql", events=300, seed=5, heartbeats=True, server=PREFIX)
    out = []
    for rec in traffic.records:
        key, value = serialize(rec, True)
        out.append(_record(rec.topic, key, value, rec.ts, rec.headers))
    return out


def shape(schema: dict[str, Any] | None, rows: bool = False) -> Any:
    """A Connect schema's structure: type, optionality, name, version, parameters; a struct's fields
    in order. ``rows``: the row images (``before``/``after``: a table's columns) as their name's form."""
    if schema is None:
        return None
    out: dict[str, Any] = {k: schema[k] for k in ("type", "optional", "name", "version", "parameters", "default")
                           if k in schema}
    if "name" in out and out["name"].startswith(f"{PREFIX}."):  # <prefix>.<schema>.<table>.Key|Value|Envelope
        out["name"] = "<topic>." + out["name"].rsplit(".", 1)[1]
    if schema.get("type") == "struct":
        out["fields"] = [(f["field"], "<row>" if rows and f["field"] in ROWS else shape(f)) for f in schema["fields"]]
        if rows:
            out["rows"] = [shape({**f, "fields": []}) for f in schema["fields"] if f["field"] in ROWS]
    if schema.get("type") == "array":
        out["items"] = shape(schema["items"])
    return out


def kinds(payload: dict[str, Any], skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """A payload's fields in their JSON order, each with its JSON kind."""
    return [(k, type(v).__name__) for k, v in payload.items() if k not in skip]


def _split(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["topic"] == TRANSACTION_TOPIC:
            out["markers"].append(r)
        elif r["topic"] == HEARTBEAT_TOPIC:
            out["heartbeats"].append(r)
        elif r["value"] is None:
            out["tombstones"].append(r)
        else:
            op = r["value"]["payload"]["op"]
            out["snapshot" if op == "r" else "stream"].append(r)
    return out


@pytest.fixture(scope="module")
def both(real, generated) -> list[dict[str, list[dict[str, Any]]]]:
    sides = [_split(real), _split(generated)]
    for side in sides:
        assert all(side[k] for k in ("markers", "heartbeats", "tombstones", "snapshot", "stream")), \
            {k: len(v) for k, v in side.items()}
    return sides


def test_envelope_and_source_block_have_debeziums_structure(both):
    """Envelope: fields, order, Connect types, names, version (2 in Debezium 3.x); the source block
    (io.debezium.connector.postgresql.Source) and the transaction block alike; every data event's
    payload in its schema's field order with a JSON kind its type allows."""
    real, gen = both
    for kind in ("snapshot", "stream"):
        shapes = [{json.dumps(shape(r["value"]["schema"], rows=True), sort_keys=True) for r in side[kind]}
                  for side in (real, gen)]
        assert len(shapes[0]) == 1 and shapes[0] == shapes[1], (kind, shapes)
        envelope = json.loads(next(iter(shapes[0])))
        assert envelope["version"] == 2 and envelope["name"] == "<topic>.Envelope"
        assert [f for f, _ in envelope["fields"]] == ["before", "after", "source", "transaction", "op", "ts_ms", "ts_us",
                                                      "ts_ns"]
        assert dict(envelope["fields"])["source"]["name"] == "io.debezium.connector.postgresql.Source"
        for side in (real, gen):
            for r in side[kind]:
                payload, schema = r["value"]["payload"], r["value"]["schema"]
                assert list(payload) == [f["field"] for f in schema["fields"]], payload
                source_schema = next(f for f in schema["fields"] if f["field"] == "source")
                assert list(payload["source"]) == [f["field"] for f in source_schema["fields"]], payload["source"]
        # the JSON kind of every envelope and source field (the row images aside): the same per op
        by_op = [{(r["value"]["payload"]["op"], json.dumps(kinds(r["value"]["payload"], (*ROWS, "source"))),
                   json.dumps(kinds(r["value"]["payload"]["source"]))) for r in side[kind]} for side in (real, gen)]
        ops = {op for op, _, _ in by_op[1]}  # the generator writes no truncate
        assert {x for x in by_op[0] if x[0] in ops} == by_op[1], by_op


def test_keys_have_debeziums_structure(both):
    """A data event's and a tombstone's key: ``<topic>.Key``, a struct of the key columns, unversioned;
    a tombstone has the key and no value; a truncate has no key."""
    real, gen = both
    for side in (real, gen):
        keys = {json.dumps(shape(r["key"]["schema"]), sort_keys=True)
                for r in side["stream"] + side["snapshot"] + side["tombstones"] if r["key"] is not None}
        for k in keys:
            key = json.loads(k)
            assert key["name"] == "<topic>.Key" and key["type"] == "struct" and not key["optional"], key
            assert "version" not in key and all(not f["optional"] for _, f in key["fields"]), key
        for r in side["stream"] + side["snapshot"] + side["tombstones"]:
            if r["key"] is not None:
                assert list(r["key"]) == ["schema", "payload"]
                assert list(r["key"]["payload"]) == [f["field"] for f in r["key"]["schema"]["fields"]]
    # truncates: the real workload has one; the generator writes none (they have no key)
    assert {r["key"] is None for r in real["stream"] if r["value"]["payload"]["op"] == "t"} == {True}


def test_transaction_block_and_markers_have_debeziums_format(both):
    """BEGIN/END on ``<prefix>.transaction``: key and value schemas (versioned, data_collections'
    entries an optional ``event.collection``), field order and kinds; ids ``<txId>:<lsn>`` where a
    BEGIN's LSN is its first event's, every event's is its own ``source.lsn`` and an END's lies past
    its last event's; an END's event counts are its events'."""
    real, gen = both
    for status in ("BEGIN", "END"):
        shapes = [{json.dumps([shape(r["key"]["schema"]), shape(r["value"]["schema"]),
                               kinds(r["key"]["payload"]), kinds(r["value"]["payload"])])
                   for r in side["markers"] if r["value"]["payload"]["status"] == status} for side in (real, gen)]
        assert len(shapes[0]) == 1 and shapes[0] == shapes[1], (status, shapes)
    for side in (real, gen):
        events: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in side["stream"]:
            p = r["value"]["payload"]
            assert p["transaction"]["id"] == f"{p['source']['txId']}:{p['source']['lsn']}", p
            assert json.loads(p["source"]["sequence"])[1] == str(p["source"]["lsn"]), p["source"]
            events[str(p["source"]["txId"])].append(p)
        for r in side["markers"]:
            m = r["value"]["payload"]
            assert r["key"]["payload"] == {"id": m["id"]}
            txid, lsn = m["id"].split(":")
            mine = sorted(events[txid], key=lambda p: p["transaction"]["total_order"])
            if m["status"] == "BEGIN":
                assert int(lsn) == mine[0]["source"]["lsn"], (m, mine[0]["source"])
            else:
                assert int(lsn) > max(p["source"]["lsn"] for p in mine), m
                assert m["event_count"] == len(mine)
                counts = defaultdict(int)
                for p in mine:
                    counts[f"{p['source']['schema']}.{p['source']['table']}"] += 1
                assert {d["data_collection"]: d["event_count"] for d in m["data_collections"]} == counts


def test_sequence_names_the_last_commit_then_the_event(both):
    """``source.sequence`` is ``["<lastCommitLsn>","<lsn>"]`` (Debezium's PostgreSQL SourceInfo.sequence()):
    the first the LSN of the transaction committed before this event's (its END's), null on snapshot
    rows and on the first transaction streamed after the snapshot; the second the event's own."""
    real, gen = both
    for side in (real, gen):
        assert {r["value"]["payload"]["source"]["sequence"].startswith("[null,") for r in side["snapshot"]} == {True}
        ends = sorted((int(m["value"]["payload"]["id"].split(":")[1]), int(m["value"]["payload"]["id"].split(":")[0]))
                      for m in side["markers"] if m["value"]["payload"]["status"] == "END")
        end_of = {txid: lsn for lsn, txid in ends}
        order = [txid for _, txid in ends]
        for r in side["stream"]:
            src = r["value"]["payload"]["source"]
            if src["txId"] not in end_of:  # the generator's newest transaction: its END is never written
                continue
            last = json.loads(src["sequence"])[0]
            i = order.index(src["txId"])
            assert last == (str(end_of[order[i - 1]]) if i else None), (src, order[:i + 1])


def test_snapshot_markers_and_heartbeats_have_debeziums_form(both):
    """Snapshot rows: ``first`` on the very first, ``first_in_data_collection`` and
    ``last_in_data_collection`` on each later table's first and each earlier table's last row,
    ``last`` on the very last, ``true`` between. Heartbeats on ``__debezium-heartbeat.<prefix>``:
    key ``{"serverName": <prefix>}`` and value ``{"ts_ms"}``, schemas named and versioned alike."""
    real, gen = both
    forms = []
    for side in (real, gen):
        tables: dict[str, list[str]] = {}
        for r in sorted(side["snapshot"], key=lambda r: r["ts"]):
            tables.setdefault(r["topic"], []).append(r["value"]["payload"]["source"]["snapshot"])
        # first table, last table, any in between: (first row, the rows between, last row)
        spans = [(v[0], sorted(set(v[1:-1])), v[-1]) for v in tables.values()]
        forms.append((spans[0], spans[-1], {json.dumps(s) for s in spans[1:-1]}))
    assert forms[0] == forms[1], forms
    assert forms[0][0][0] == "first" and forms[0][1][2] == "last"
    beats = [{json.dumps([r["topic"], shape(r["key"]["schema"]), r["key"]["payload"], shape(r["value"]["schema"]),
                          kinds(r["value"]["payload"])]) for r in side["heartbeats"]} for side in (real, gen)]
    assert len(beats[0]) == 1 and beats[0] == beats[1], beats
    assert json.loads(next(iter(beats[0])))[:1] == [f"__debezium-heartbeat.{PREFIX}"]
