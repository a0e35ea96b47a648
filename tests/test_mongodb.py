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
