"""MongoDB events as the connector's versions write them: 1.x (``patch`` text, no document on
updates), 2.x (``after`` as JSON text plus ``updateDescription``) and documents as objects; ObjectId
keys ({"id": "{\\"$oid\\": ...}"}) matched against the document's _id. (Generated MongoDB traffic with
every applicable fault is in tests/test_accuracy.py.)"""

from __future__ import annotations

import collections
import json

from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000


def _event(i: int, oid: str, op: str, *, after=None, patch=None, update=None, key_oid: str | None = None) -> str:
    source = {"version": "1.9.7.Final", "connector": "mongodb", "name": "mongo9", "ts_ms": BASE + i * 1000,
              "snapshot": "false", "db": "shop", "rs": "rs0", "collection": "items", "ord": 1, "h": None}
    value = {"after": after, "patch": patch, "updateDescription": update, "source": source, "op": op,
             "ts_ms": BASE + i * 1000 + 30}
    key = {"id": json.dumps({"$oid": key_oid or oid})}
    return kcat_line("mongo9.shop.items", 0, i, json.dumps(key), json.dumps(value), BASE + i * 1000 + 40)


def test_every_connector_version_decodes_and_only_real_problems_are_found(scan, tmp_path):
    a, b, c = "65a1f0c2e4b0a1b2c3d4e5f6", "65a1f0c2e4b0a1b2c3d4e5f7", "65a1f0c2e4b0a1b2c3d4e5f8"
    lines = [
        # 1.x: the document as text on insert, a patch on update, nothing on delete
        _event(0, a, "c", after=json.dumps({"_id": {"$oid": a}, "name": "lamp"})),
        _event(1, a, "u", patch=json.dumps({"$set": {"name": "desk lamp"}})),
        _event(2, a, "d"),
        # 2.x: full document as text plus updateDescription; and the document as an object
        _event(3, b, "c", after=json.dumps({"_id": {"$oid": b}, "name": "chair"})),
        _event(4, b, "u", after=json.dumps({"_id": {"$oid": b}, "name": "armchair"}),
               update={"removedFields": None, "updatedFields": json.dumps({"name": "armchair"}), "truncatedArrays": None}),
        _event(5, c, "c", after={"_id": {"$oid": c}, "name": "table"}),
        # problems: an update that says nothing of the change; a key naming another document
        _event(6, c, "u"),
        _event(7, c, "u", after=json.dumps({"_id": {"$oid": c}, "name": "desk"}), key_oid=a),
    ]
    result = scan([write_lines(tmp_path / "mongo.jsonl", lines)])
    found = collections.Counter((f["rule"], f["offset"]) for f in result.findings)
    # the key names document a, deleted at offset 2: the event is also after its delete
    assert found == {("before_after_mismatch", 6): 1, ("key_payload_mismatch", 7): 1, ("event_after_delete", 7): 1}, found
    assert result.summary["invalid_records"] == 0
    assert {r["table"]: r["count"] for r in result.lag} == {"shop.items": 8}


def _id_event(i: int, key_id: str, doc_id: object) -> str:
    """Debezium 2.x MongoDB (JsonSerialization): the key's id in relaxed extended JSON
    (SIMPLE_JSON_SETTINGS), the document in canonical extended JSON (COMPACT_JSON_SETTINGS)."""
    source = {"version": "2.7.3.Final", "connector": "mongodb", "name": "mongo9", "ts_ms": BASE + i * 1000,
              "snapshot": "false", "db": "shop", "rs": "rs0", "collection": "ids", "ord": 1}
    value = {"after": json.dumps({"_id": doc_id, "n": i}), "source": source, "op": "c", "ts_ms": BASE + i * 1000 + 30}
    return kcat_line("mongo9.shop.ids", 0, i, json.dumps({"id": key_id}), json.dumps(value), BASE + i * 1000 + 40)


def test_ids_compare_by_value_across_relaxed_and_canonical_extended_json(scan, tmp_path):
    uuid = "3b241101-e2bb-4255-8caf-4136c566a962"
    same = [  # (key id as the connector writes it, the document's _id)
        ("10001", {"$numberLong": "10001"}),
        ("42", {"$numberInt": "42"}),
        ("1.5", {"$numberDouble": "1.5"}),
        ("12.50", {"$numberDecimal": "12.50"}),
        ('{"$oid": "65a1f0c2e4b0a1b2c3d4e5f6"}', {"$oid": "65a1f0c2e4b0a1b2c3d4e5f6"}),
        ('{"$date": "2026-01-01T00:00:00Z"}', {"$date": {"$numberLong": "1767225600000"}}),
        ('{"$binary": {"base64": "AQID", "subType": "00"}}', {"$binary": {"base64": "AQID", "subType": "00"}}),
        ('{"$binary": "AQID", "$type": "00"}', {"$binary": {"base64": "AQID", "subType": "00"}}),
        (json.dumps({"$uuid": uuid}), {"$binary": {"base64": "OyQRAeK7QlWMr0E2xWapYg==", "subType": "04"}}),
        ('{"tenant": 7, "no": 10002}', {"tenant": {"$numberInt": "7"}, "no": {"$numberLong": "10002"}}),
        ('"abc"', "abc"),
    ]
    differ = [("10003", {"$numberLong": "10004"}), ('{"$date": "2026-01-01T00:00:00Z"}', {"$date": {"$numberLong": "1"}}),
              ('{"tenant": 7, "no": 10005}', {"tenant": {"$numberInt": "8"}, "no": {"$numberLong": "10005"}})]
    lines = [_id_event(i, k, d) for i, (k, d) in enumerate(same + differ)]
    result = scan([write_lines(tmp_path / "ids.jsonl", lines)])
    found = sorted(f["offset"] for f in result.findings if f["rule"] == "key_payload_mismatch")
    assert found == list(range(len(same), len(same) + len(differ))), [f["message"] for f in result.findings]
