"""Avro's JSON encoding recognised per record without --avro-json (the decoder, java/AvroJson.java):
a capture as kafka-avro-console-consumer or kcat -s avro prints an Avro topic reads as its JSON
converter twin, with one info note per topic; --avro-json and --no-avro-json force either reading;
a JSON topic beside an Avro-JSON one is read as it is. No broker: captures written from generated
Avro traffic (tests/test_avro.py reads the same from Kafka through a registry)."""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest

from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from tests.support.captures import kcat_line, write_lines

NOTE = "avro_json_values"
FLAVOURS = ("mysql", "dtle", "postgresql", "sqlserver", "oracle")  # those the generator writes as Avro
BASE = 1_571_914_675_000


def _key(f: dict) -> tuple:
    return (f["rule"], f["topic"], f["partition"], f["offset"], f["key"], f["txn_id"])


def _sqlserver(offset: int, op: str, before: dict | None, after: dict | None, *, snapshot: str = "false",
               lsn: int = 0x448) -> str:
    """A Debezium SQL Server change event of server1.dbo.customers as kafka-avro-console-consumer prints it
    (Avro's JSON encoding: the optional row images, source fields and ts_ms wrapped in their union branch)."""
    def row(r: dict | None) -> dict | None:
        return None if r is None else {"server1.dbo.customers.Value": {
            "id": r["id"], "first_name": {"string": r["first_name"]}, "email": {"string": r["email"]}}}
    streaming = snapshot == "false"
    source = {"version": "1.0.0.Final", "connector": "sqlserver", "name": "server1", "ts_ms": BASE + offset * 1000,
              "snapshot": {"string": snapshot}, "db": "testDB", "schema": "dbo", "table": "customers",
              "change_lsn": {"string": f"00000025:{lsn:08x}:0002"} if streaming else None,
              "commit_lsn": {"string": f"00000025:{lsn:08x}:0003"},
              "event_serial_no": {"long": 1} if streaming else None}
    value = {"before": row(before), "after": row(after), "source": source, "op": op,
             "ts_ms": {"long": BASE + offset * 1000 + 223}, "transaction": None}
    key = json.dumps({"id": (after or before or {})["id"]})
    return kcat_line("server1.dbo.customers", 0, offset, key, json.dumps(value), BASE + offset * 1000 + 300)


def test_a_sql_server_topic_as_kafka_avro_console_consumer_prints_it_reads_without_the_flag(scan, tmp_path):
    """The issue's capture: read as plain JSON its unions made five invalid_position, an invalid_event_ts and
    a snapshot_op_mismatch (all false). Recognised, it reads clean, with one note for the topic."""
    row = {"id": 1005, "first_name": "john", "email": "john.doe@example.org"}
    changed = {**row, "email": "jdoe@example.org"}
    lines = [_sqlserver(0, "r", None, {**row, "id": 1004}, snapshot="last", lsn=0x440),
             _sqlserver(1, "c", None, row), _sqlserver(2, "u", row, changed, lsn=0x450),
             _sqlserver(3, "d", changed, None, lsn=0x458),
             kcat_line("server1.dbo.customers", 0, 4, json.dumps({"id": 1005}), None, BASE + 3400)]
    path = write_lines(tmp_path / "sqlserver.jsonl", lines)
    result = scan([path])
    assert [(f["rule"], f["severity"], f["topic"], f["offset"]) for f in result.findings] == [
        (NOTE, "info", "server1.dbo.customers", 0)]
    assert result.findings[0]["message"].startswith("4 value(s) are Avro's JSON encoding")
    (lag,) = result.lag
    assert (lag["count"], lag["max_ms"]) == (3, 223)  # the three streaming changes, their ts_ms unwrapped
    # --no-avro-json: read as plain JSON, as before (the wrappers hide the positions, ts_ms and snapshot flags)
    plain = collections.Counter(f["rule"] for f in scan([path], avro_json=False).findings)
    assert plain["invalid_position"] and plain["invalid_event_ts"] and plain["snapshot_op_mismatch"] and not plain[NOTE]
    # --avro-json: every record read so by the Avro stage, no note needed
    assert scan([path], avro_json=True).findings == []


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Faulty Avro traffic of each flavour the generator writes as Avro, as an Avro-JSON capture and as
    its JSON converter twin (schemas off)."""
    root = tmp_path_factory.mktemp("avro-json")
    for i, flavour in enumerate(FLAVOURS):
        traffic = generate(flavour, events=200, seed=600 + i, faults=True, fault_repeats=1, heartbeats=True,
                           value_format="avro", server=f"aj{i}_{flavour}")
        write_capture(dataclasses.replace(traffic, value_format="json"), root / "json" / f"{flavour}.jsonl")
        write_capture(dataclasses.replace(traffic, value_format="avro-json"), root / "avro-json" / f"{flavour}.jsonl")
    return root


def _wrapped_topics(folder) -> dict[str, int]:
    """Per topic, its values the Avro-JSON text writes otherwise than the JSON converter (a union
    wrapped): computed from the two captures, not by the decoder's rule."""
    out: dict[str, int] = collections.Counter()
    for path in (folder / "avro-json").iterdir():
        twin = {(r["topic"], r["partition"], r["offset"]): r["payload"] for r in _records(folder / "json" / path.name)}
        for r in _records(path):
            plain = twin[(r["topic"], r["partition"], r["offset"])]
            if r["payload"] is not None and _doc(r["payload"]) != _doc(plain):
                out[r["topic"]] += 1
    return out


def _records(path) -> list[dict]:
    """A capture's records (lines split at newlines only: Avro-JSON bytes may hold U+0085 or U+2028)."""
    return [json.loads(line) for line in path.read_text().split("\n") if line]


def _doc(payload) -> object:
    try:
        return json.loads(payload) if isinstance(payload, str) else payload
    except ValueError:
        return payload


def test_avro_json_captures_read_as_their_json_twin_with_a_note_per_topic(twins, scan):
    twin = scan([twins / "json"])
    auto = scan([twins / "avro-json"])
    notes = [f for f in auto.findings if f["rule"] == NOTE]
    wrapped = _wrapped_topics(twins)
    assert {f["topic"]: int(f["message"].split()[0]) for f in notes} == wrapped
    assert all(f["severity"] == "info" for f in notes) and len({f["topic"] for f in notes}) == len(notes)
    others = collections.Counter(_key(f) for f in auto.findings if f["rule"] != NOTE)
    assert others == collections.Counter(_key(f) for f in twin.findings)
    assert auto.lag == twin.lag and auto.transactions == twin.transactions
    # forced: --avro-json reads the same, without notes; --no-avro-json reads the text as plain JSON
    forced = scan([twins / "avro-json"], avro_json=True)
    assert collections.Counter(_key(f) for f in forced.findings) == others and forced.lag == twin.lag
    off = scan([twins / "avro-json"], avro_json=False)
    assert not [f for f in off.findings if f["rule"] == NOTE]
    assert sum(r["count"] for r in off.lag) < sum(r["count"] for r in twin.lag)  # streaming ts_ms are unions


def test_a_json_topic_beside_an_avro_json_one_is_read_as_it_is(twins, scan, tmp_path):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "mysql.jsonl").write_text((twins / "json" / "mysql.jsonl").read_text())
    (mixed / "postgresql.jsonl").write_text((twins / "avro-json" / "postgresql.jsonl").read_text())
    result = scan([mixed])
    noted = {f["topic"] for f in result.findings if f["rule"] == NOTE}
    assert noted and all(t.startswith("aj2_postgresql") for t in noted)
    expected = scan([twins / "json" / "mysql.jsonl", twins / "json" / "postgresql.jsonl"])
    assert collections.Counter(_key(f) for f in result.findings if f["rule"] != NOTE) == \
        collections.Counter(_key(f) for f in expected.findings)
    assert result.lag == expected.lag

