"""Three kinds of anomaly third-party captures showed and a scan missed (issue 78), each written as
a few kcat -J records per flavour it applies to, and scanned whole: the findings listed are all the
scan reports, nothing more.

1. A source time of 0 (or in microseconds) on a snapshot record: op r, or a change event a
   source.snapshot flag marks (dtle's documented snapshot rows are op c). Judged as outside a
   snapshot (``invalid_source_ts``); snapshot records stay out of the lag percentiles.
2. Another producer writing Debezium's envelope: no source block, or a source block with neither
   connector nor version. One ``non_debezium_producer`` note a topic naming what is missing; the
   source-based rules (source time, source fields, positions) silenced for those events. A block that
   names its connector or version is Debezium's whatever it lacks (issue 81): a missing source time is
   ``missing_source_field`` and ``invalid_source_ts``.
3. An END counting fewer events than carry its id is a ``count_mismatch`` beside a malformed marker
   (a null id, its own BEGIN's or another's), Avro's JSON encoding, or partitions read from a later
   offset (a capture's excerpt): events outside the window only add to what was seen.
"""

from __future__ import annotations

import json

from tests.support.captures import kcat_line, write_lines

BASE = 1_767_225_600_000
CONNECTOR = {"mysql": "mysql", "postgresql": "postgresql", "sqlserver": "sqlserver", "oracle": "oracle",
             "mongodb": "mongodb", "yugabyte": "yugabytedb"}
FLAVOURS = ("mysql", "dtle", "postgresql", "sqlserver", "oracle", "mongodb", "yugabyte")
SERVER = {f: f"{f[:3]}1" for f in FLAVOURS}
TIME_FIELD = {"dtle": "ts_sec"}  # a source block's time field where it is not ts_ms


def _source(flavour: str, i: int, ts: int, snapshot: str = "false") -> dict:
    """A source block as each connector documents it (Debezium docs, each connector's "source metadata"),
    its position advancing with ``i``; dtle's: ts_sec and a boolean snapshot flag, no connector."""
    server = SERVER[flavour]
    if flavour == "dtle":
        return {"version": "0.8.3.Final", "name": server, "server_id": 1, "ts_sec": ts // 1000, "gtid": None,
                "file": "mysql-bin.000003", "pos": 154 + i * 40, "row": 0, "snapshot": snapshot != "false",
                "thread": None, "db": "inventory", "table": "orders"}
    common = {"version": "2.7.3.Final", "connector": CONNECTOR[flavour], "name": server, "ts_ms": ts,
              "snapshot": snapshot}
    streamed = snapshot == "false"
    return common | {
        "mysql": {"db": "inventory", "table": "orders", "server_id": 223344, "gtid": None, "file": "mysql-bin.000003",
                  "pos": 154 + i * 40, "row": 0},
        "postgresql": {"db": "shop", "schema": "public", "table": "orders", "txId": 700 + i, "lsn": 33_554_432 + i * 56},
        "sqlserver": {"db": "testDB", "schema": "dbo", "table": "orders", "commit_lsn": f"00000027:{0x700 + i:08x}:0005",
                      "change_lsn": f"00000027:{0x700 + i:08x}:0002" if streamed else None,
                      "event_serial_no": 1 if streamed else None},
        "oracle": {"db": "ORCLPDB1", "schema": "DEBEZIUM", "table": "ORDERS", "scn": str(2_122_185 + i * 3),
                   "commit_scn": str(2_122_186 + i * 3)},
        "mongodb": {"db": "inventory", "rs": "rs0", "collection": "orders", "ord": i + 1},
        "yugabyte": {"db": "yugabyte", "schema": "public", "table": "orders", "lsn": f"1:{i + 4}::0:0"},
    }[flavour]


def _topic(flavour: str) -> str:
    return {"postgresql": "pos1.public.orders", "yugabyte": "yug1.public.orders", "sqlserver": "sql1.testDB.dbo.orders",
            "oracle": "ora1.DEBEZIUM.ORDERS"}.get(flavour, f"{SERVER[flavour]}.inventory.orders")


def _event(flavour: str, offset: int, op: str, *, row_id: int | None = None, source_ts: int | None = None,
           snapshot: str = "false", txn: tuple[str, int] | None = None, i: int | None = None,
           timeless: bool = False) -> str:
    """A change event of ``flavour``'s orders table at ``offset`` (written 1 s apart; ``i``: its place in
    time and position, default the offset); ``txn``: its transaction (id, total_order); ``timeless``: its
    source block without its time field (ts_ms; dtle's ts_sec)."""
    i = offset if i is None else i
    row_id = offset + 1 if row_id is None else row_id
    ts = BASE + i * 1000
    row: object = {"id": row_id, "qty": i}
    if flavour == "mongodb":  # MongoDB's row images are extended JSON text
        row = json.dumps({"_id": row_id, "qty": i})
    value = {"before": None, "after": row, "op": op, "ts_ms": ts + 40,
             "source": _source(flavour, i, ts if source_ts is None else source_ts, snapshot)}
    if timeless:
        del value["source"][TIME_FIELD.get(flavour, "ts_ms")]
    if txn is not None:
        value["transaction"] = {"id": txn[0], "total_order": txn[1], "data_collection_order": txn[1]}
    return kcat_line(_topic(flavour), 0, offset, json.dumps({"id": row_id}), json.dumps(value), ts + 60)


def _found(result) -> list[tuple]:
    return sorted((f["rule"], f["severity"], f["topic"], f["offset"]) for f in result.findings)


# -- 1. a snapshot record's source time -----------------------------------------------------------------------
def test_a_zero_or_impossible_source_time_on_a_snapshot_record_is_invalid_in_every_flavour(scan, tmp_path):
    """Per flavour: a snapshot read with source time 0, a sound one, one in microseconds, a create marked
    as a snapshot with source time 0 (dtle's documented snapshot rows are op c with a boolean flag: not a
    mismatch there), and a streamed create. The bad times are findings as a streamed event's are; the
    snapshot records are still kept out of the lag (one lagged event per table)."""
    lines, expected = [], []
    for flavour in FLAVOURS:
        read = "c" if flavour == "dtle" else "r"  # (dtle's snapshot rows)
        micro = (BASE + 2000) * 1000
        lines += [_event(flavour, 0, read, source_ts=0, snapshot="first"),
                  _event(flavour, 1, read, snapshot="true"),
                  _event(flavour, 2, read, source_ts=micro, snapshot="last"),
                  _event(flavour, 3, "c", source_ts=0, snapshot="true"),
                  _event(flavour, 4, "c")]
        topic = _topic(flavour)
        expected += [("invalid_source_ts", "warning", topic, o) for o in (0, 2, 3)]
        if flavour != "dtle":
            expected.append(("snapshot_op_mismatch", "warning", topic, 3))
    result = scan([write_lines(tmp_path / "snapshot_times.jsonl", lines)])
    assert _found(result) == sorted(expected)
    messages = {(f["topic"], f["offset"]): f["message"] for f in result.findings if f["rule"] == "invalid_source_ts"}
    assert messages[("mys1.inventory.orders", 0)] == "source timestamp 0 is not an integer ms time between 2000 and 2100"
    assert messages[("mys1.inventory.orders", 2)].endswith("it looks like microseconds, not milliseconds")
    lag = {r["topic"]: (r["count"], r["snapshot_excluded"], r["invalid_source_ts"]) for r in result.lag}
    assert lag == {_topic(f): (1, 4, 3) for f in FLAVOURS}


# -- 2. another producer in Debezium's envelope -----------------------------------------------------------------
def _foreign(topic: str, offset: int, source: dict | None, *, op: str = "c", before: dict | None = None) -> str:
    row = {"id": offset + 1, "v": "x"}
    value = {"before": before, "after": None if before else row, "op": op, "source": source, "ts_ms": BASE + offset * 1000 + 40}
    return kcat_line(topic, 0, offset, json.dumps({"id": offset + 1}), json.dumps(value), BASE + offset * 1000 + 60)


def test_another_producers_envelope_is_one_note_a_topic_naming_what_its_source_lacks(scan, tmp_path):
    """Debezium's source block always names its connector and version and has a time (ts_ms; dtle's
    ts_sec, Cassandra's ts_micro). Values in its envelope whose source does not (a stream processor's
    "debezium-json" sink, a relay rewriting the block) were a finding per record: invalid_source_ts for a
    time of 0 or none, missing_source_field for a field the guessed connector sends, invalid_position for
    a position the guessed connector would not write. Now one note a topic, naming what is missing; the
    rules that do not read the source still apply, and a Debezium topic beside them is judged as ever. A
    relay that keeps the connector and version but drops the time is Debezium's records with a fault
    (issue 81): each is missing_source_field and invalid_source_ts, and no note."""
    sink = [_foreign("sink.shop.orders", o, {"db": "shop", "table": "orders", "ts_ms": 0}) for o in range(3)]
    sink.append(_foreign("sink.shop.orders", 3, {"db": "shop", "table": "orders", "ts_ms": 0}, before={"id": 4}))
    relay = [_foreign("relay.shop.items", o, {"version": "2.7.3.Final", "connector": "mysql", "name": "relay",
                                              "db": "shop", "table": "items", "file": "mysql-bin.000003", "pos": 154 + o})
             for o in range(3)]
    bare = [_foreign("bare.shop.users", o, {}) for o in range(2)]
    # neither connector nor version: guessed MySQL by its binlog fields, a position MySQL never writes
    anon = [_foreign("anon.shop.carts", o, {"db": "shop", "table": "carts", "ts_ms": BASE + o * 1000,
                                            "file": "binlog.000001", "pos": -1}) for o in range(2)]
    debezium = [_event("mysql", 0, "c", source_ts=0), _event("mysql", 1, "c")]
    result = scan([write_lines(tmp_path / "producers.jsonl", sink + relay + bare + anon + debezium)])
    assert _found(result) == sorted([
        ("before_after_mismatch", "error", "sink.shop.orders", 3),
        ("invalid_source_ts", "warning", "mys1.inventory.orders", 0),
        ("non_debezium_producer", "info", "anon.shop.carts", 0),
        ("non_debezium_producer", "info", "bare.shop.users", 0),
        ("non_debezium_producer", "info", "sink.shop.orders", 0),
        *[(rule, severity, "relay.shop.items", o) for o in range(3)
          for rule, severity in (("missing_source_field", "error"), ("invalid_source_ts", "warning"))],
    ])
    notes = {f["topic"]: f["message"] for f in result.findings if f["rule"] == "non_debezium_producer"}
    assert notes["sink.shop.orders"].startswith("4 change event(s) carry a source block with neither connector nor version:")
    assert notes["bare.shop.users"].startswith("2 change event(s) carry a source block with neither connector, version nor a time:")
    assert notes["anon.shop.carts"].startswith("2 change event(s) carry a source block with neither connector nor version:")
    assert all(m.endswith("their source fields, source time, lag and positions are not judged") for m in notes.values())
    assert result.summary["invalid_records"] == 0  # (decodable: a fault of a field, not of the record)


def test_a_topic_of_several_producers_kinds_counts_each(scan, tmp_path):
    lines = [_foreign("mixed.shop.orders", 0, None), _foreign("mixed.shop.orders", 1, None),
             _foreign("mixed.shop.orders", 2, {"connector": "postgresql", "version": "2.7.3.Final", "name": "m"})]
    result = scan([write_lines(tmp_path / "mixed.jsonl", lines)])
    assert _found(result) == [("invalid_source_ts", "warning", "mixed.shop.orders", 2),
                              ("missing_source_field", "error", "mixed.shop.orders", 2),
                              ("non_debezium_producer", "info", "mixed.shop.orders", 0)]
    notes = [f["message"] for f in result.findings if f["rule"] == "non_debezium_producer"]
    assert notes[0].startswith("2 change event(s) carry no source block: ")


def test_a_debezium_record_without_its_source_time_is_a_fault_in_every_flavour(scan, tmp_path):
    """Issue 81: per flavour with a source time, a record whose source block names its connector (dtle's:
    its version) and lacks only its time. It is Debezium's record that lost a required field, the fault a
    gate stops: missing_source_field (error) and, for a change event, invalid_source_ts (warning); a
    snapshot read without its time is missing_source_field alone (a snapshot's time is judged where it
    has one); no non_debezium_producer note. The clean records around them stay silent. dtle names no
    connector and is told only by its ts_sec: without it, its record (a version, binlog fields) is the
    MySQL record it resembles, judged by MySQL's rules (its snapshot rows are op c: a mismatch there)."""
    lines, expected = [], []
    for flavour in FLAVOURS:
        read = "c" if flavour == "dtle" else "r"  # (dtle's snapshot rows)
        lines += [_event(flavour, 0, read, snapshot="last", timeless=True),
                  _event(flavour, 1, "c"),
                  _event(flavour, 2, "c", timeless=True),
                  _event(flavour, 3, "c")]
        topic = _topic(flavour)
        expected += [("missing_source_field", "error", topic, 0), ("missing_source_field", "error", topic, 2),
                     ("invalid_source_ts", "warning", topic, 2)]
        if flavour == "dtle":
            expected.append(("snapshot_op_mismatch", "warning", topic, 0))
    result = scan([write_lines(tmp_path / "timeless.jsonl", lines)])
    assert _found(result) == sorted(expected)
    messages = {(f["rule"], f["topic"], f["offset"]): f["message"] for f in result.findings}
    assert messages[("missing_source_field", "mys1.inventory.orders", 2)] == "source lacks ts_ms (mysql)"
    assert messages[("missing_source_field", "dtl1.inventory.orders", 2)] == "source lacks ts_ms (mysql)"
    assert messages[("invalid_source_ts", "pos1.public.orders", 2)] == (
        "source timestamp missing is not an integer ms time between 2000 and 2100")
    assert result.summary["invalid_records"] == 0
    # the lag table counts what the rule judged: the update's missing time, not the snapshot read's
    lag = {r["topic"]: (r["count"], r["snapshot_excluded"], r["invalid_source_ts"]) for r in result.lag}
    assert lag == {_topic(f): (2, 1, 1) for f in FLAVOURS}


# -- 3. count mismatches beside malformed markers ---------------------------------------------------------------
TXN_IDS = {  # (the transaction with too few events counted, another), as each connector writes ids
    "mysql": ("3e11fa47-71ca-11e1-9e33-c80aa9429562:41", "3e11fa47-71ca-11e1-9e33-c80aa9429562:42"),
    "postgresql": ("771:33554432", "772:33554800"),  # <txId>:<LSN>: the LSN differs on every record
    "sqlserver": ("00000027:00000758:0005", "00000027:00000760:0005"),
    "oracle": ("06.3.801", "06.4.802"),
    "mongodb": ("9d5e1c2a-77aa-4c41-9a0e-1c2f0e0d7b11:3", "9d5e1c2a-77aa-4c41-9a0e-1c2f0e0d7b11:4"),
    "yugabyte": ("00000001-0000-4000-8000-000000000000", "00000002-0000-4000-8000-000000000000"),
}
COLLECTION = {"mysql": "inventory.orders", "postgresql": "public.orders", "sqlserver": "testDB.dbo.orders",
              "oracle": "ORCLPDB1.DEBEZIUM.ORDERS", "mongodb": "inventory.orders", "yugabyte": "public.orders"}


def _marker(flavour: str, offset: int, status: str, txn_id: str | None, at: int, count: int = 0,
            avro_json: bool = False) -> str:
    """A transaction marker (Debezium docs, "Transaction metadata"); ``avro_json``: as kcat -s avro prints it
    (the END's optional event_count and data_collections wrapped in their union branch)."""
    value: dict = {"status": status, "id": txn_id, "ts_ms": at, "event_count": None, "data_collections": None}
    if status == "END":
        collections = [{"data_collection": COLLECTION[flavour], "event_count": count}]
        value |= {"event_count": {"long": count} if avro_json else count,
                  "data_collections": {"array": collections} if avro_json else collections}
    return kcat_line(f"{SERVER[flavour]}.transaction", 0, offset, json.dumps({"id": txn_id}), json.dumps(value), at)


def _transactions(flavour: str, start: int, *, avro_json: bool = False, own_begin_null: bool = False) -> tuple[list, list]:
    """A server's transaction topic and orders table read from offset ``start`` (0: whole; else a capture's
    excerpt, whose transactions could have events before it). T1: 5 events, its END says 4. Then a BEGIN
    without an id and T2's END (1 event, said). ``own_begin_null``: T1's own BEGIN has no id, and T2 is left
    out. Returns the lines and the findings expected."""
    t1, t2 = TXN_IDS[flavour]
    at = BASE + start * 1000
    txn_topic, s = f"{SERVER[flavour]}.transaction", start
    begin_id = None if own_begin_null else t1
    lines = [_marker(flavour, s, "BEGIN", begin_id, at - 500), _marker(flavour, s + 1, "END", t1, at + 5000, 4, avro_json)]
    lines += [_event(flavour, s + k, "c", txn=(t1, k + 1)) for k in range(5)]
    expected = [("count_mismatch", "error", txn_topic, s + 1), ("collection_count_mismatch", "error", txn_topic, s + 1)]
    if own_begin_null:  # (its END unmatched: missing_begin when the partition was read whole, else unverifiable)
        expected += [("invalid_marker_id", "error", txn_topic, s)] + ([("missing_begin", "error", txn_topic, s + 1)] if not s else [])
    else:
        lines += [_marker(flavour, s + 2, "BEGIN", None, at + 5500), _marker(flavour, s + 3, "END", t2, at + 7000, 1, avro_json),
                  _event(flavour, s + 5, "c", txn=(t2, 1))]
        expected += [("invalid_marker_id", "error", txn_topic, s + 2), ("missing_begin", "error", txn_topic, s + 3)]
    if avro_json:
        expected.append(("avro_json_values", "info", txn_topic, s + 1))
    return lines, expected


def test_an_end_counting_fewer_events_is_a_count_mismatch_beside_a_malformed_marker(scan, tmp_path):
    """Every flavour with transaction metadata, each its own way: whole partitions or an excerpt (the
    transaction then 'may have events before the window', which was why its mismatch went unreported),
    JSON or Avro-JSON markers, a null id on another transaction's BEGIN or on its own."""
    variants = {"mysql": dict(start=0), "postgresql": dict(start=40, avro_json=True), "sqlserver": dict(start=0, avro_json=True),
                "oracle": dict(start=40), "mongodb": dict(start=0, own_begin_null=True),
                "yugabyte": dict(start=40, own_begin_null=True)}
    lines, expected = [], []
    for flavour, variant in variants.items():
        more, found = _transactions(flavour, **variant)
        lines += more
        expected += found
    result = scan([write_lines(tmp_path / "counts.jsonl", lines)])
    assert _found(result) == sorted(expected)
    counts = {f["server"]: f["message"] for f in result.findings if f["rule"] == "count_mismatch"}
    assert counts == {SERVER[f]: "END says 4 events, 5 seen" for f in variants}
    assert result.transactions["count_mismatch"] == result.transactions["collection_count_mismatch"] == len(variants)


def test_an_excerpt_whose_end_counts_more_events_than_it_holds_is_no_finding(scan, tmp_path):
    """The other side: read from a later offset, a transaction whose END says 6 while the window holds 5
    of its events (total_order 2..6) may have its first before the window: unverifiable, not a mismatch.
    Read whole (total_order 1..5), the sixth is missing: a mismatch."""
    t1, _ = TXN_IDS["mysql"]
    for start, expected in ((40, []), (0, [("collection_count_mismatch", "error", "mys1.transaction", 1),
                                           ("count_mismatch", "error", "mys1.transaction", 1)])):
        at = BASE + start * 1000
        lines = [_marker("mysql", start, "BEGIN", t1, at - 500), _marker("mysql", start + 1, "END", t1, at + 5000, 6)]
        lines += [_event("mysql", start + k, "c", txn=(t1, k + (2 if start else 1))) for k in range(5)]
        result = scan([write_lines(tmp_path / f"excerpt{start}.jsonl", lines)])
        assert _found(result) == expected, start
        assert result.transactions["unverifiable" if start else "complete"] == 1
