"""No record value crashes a scan: extreme values (0, negative, int64 min/max and beyond, floats,
huge floats, strings, nested objects, null) in every numeric field the checks read.

A real SQL Server change event whose envelope ``ts_ms`` is in nanoseconds ended a whole scan with
Spark's ARITHMETIC_OVERFLOW; every arithmetic on a record value must tolerate any value, and the
record must still be counted.

Two tests: a grid that puts every (field, value) pair into one record of every generated flavour,
bare and with schemas, scanned once; and a hypothesis property that puts several drawn values into
the same record: EXAMPLES examples drawn up front (tests/support/properties.py: derandomized), each
on topics of its own, scanned once. Explore more with
``CDC_MONITOR_PROPERTY_EXAMPLES=200 CDC_MONITOR_PROPERTY_RANDOM=1 pytest tests/test_extreme_values.py``.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.kcat_writer import kcat_lines
from tests.support.properties import draw, examples

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
EXTREMES: tuple[Any, ...] = (
    0, -1, 1, INT64_MAX, INT64_MIN, INT64_MAX + 1, INT64_MIN - 1, 2**64, 10**30,
    1559729471739876149,  # the real SQL Server example: ts_ms in nanoseconds
    1.5, -0.0, 1e308, -1e308, "abc", "", "9223372036854775808", "-1", {"a": 1}, [1, 2], None, True,
)
# where the checks read numbers: the envelope's times, the source block's times and positions, the
# transaction block, and a transaction marker's counts (paths inside the envelope's payload)
DATA_PATHS: tuple[tuple[Any, ...], ...] = (
    ("ts_ms",), ("ts_us",), ("ts_ns",),
    ("source", "ts_ms"), ("source", "ts_sec"), ("source", "ts_us"), ("source", "ts_ns"),
    ("source", "pos"), ("source", "row"), ("source", "file"), ("source", "lsn"), ("source", "sequence"),
    ("source", "txId"), ("source", "scn"), ("source", "commit_scn"), ("source", "commit_lsn"),
    ("source", "change_lsn"), ("source", "event_serial_no"), ("source", "ord"), ("source", "snapshot"),
    ("source", "ts_micro"),
    ("transaction", "total_order"), ("transaction", "data_collection_order"),
)
MARKER_PATHS: tuple[tuple[Any, ...], ...] = (("event_count",), ("data_collections", 0, "event_count"), ("ts_ms",))
# the capture line's own record time
LINE_PATHS: tuple[tuple[Any, ...], ...] = (("ts",),)

EXAMPLES = examples(40)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    """Set ``path`` in ``doc``, creating the containers on the way (an absent transaction block, a
    marker without data_collections)."""
    for i, step in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(step, int):
            if not doc:
                doc.append({})
            doc = doc[min(step, len(doc) - 1)]
            continue
        if not isinstance(doc.get(step), dict | list):
            doc[step] = [] if isinstance(nxt, int) else {}
        doc = doc[step]
    if isinstance(path[-1], int):
        doc[:1] = [value]
    else:
        doc[path[-1]] = value


def _payload(value: dict) -> dict:
    return value["payload"] if isinstance(value.get("schema"), dict) and isinstance(value.get("payload"), dict) else value


def mutate(line: dict, path: tuple[Any, ...], value: Any, offset: int) -> dict:
    out = copy.deepcopy(line)
    out["offset"] = offset
    if path in LINE_PATHS:
        _set(out, path, value)
        return out
    doc = json.loads(out["payload"])
    _set(_payload(doc), path, value)
    out["payload"] = json.dumps(doc)
    return out


def _roles(lines: list[dict]) -> tuple[list[dict], list[dict]]:
    data, markers = [], []
    for line in lines:
        if line["payload"] is None:
            continue
        body = _payload(json.loads(line["payload"]))
        if isinstance(body, dict) and body.get("status") in ("BEGIN", "END"):
            markers.append(line)
        elif isinstance(body, dict) and body.get("op") is not None:
            data.append(line)
    return data, markers


def flavour_lines(flavour: str, schemas: bool) -> list[dict]:
    return [json.loads(s) for s in kcat_lines(generate(flavour, events=12, seed=7, schemas=schemas))]


def grid_capture(flavour: str, schemas: bool) -> list[dict]:
    """The flavour's clean traffic, then one record per (field, value) pair, each a mutated copy of a
    data event or transaction marker appended to its partition at a new offset."""
    lines = flavour_lines(flavour, schemas)
    data, markers = _roles(lines)
    next_offset = 1_000_000
    out = list(lines)
    pairs = [(p, data) for p in DATA_PATHS + LINE_PATHS] + [(p, markers) for p in MARKER_PATHS]
    for n, ((path, pool), value) in enumerate(itertools.product(pairs, EXTREMES)):
        if pool:
            out.append(mutate(pool[n % len(pool)], path, value, next_offset + n))
    return out


def _readable(line: dict) -> bool:
    """kcat writes the record time as a long (or null): a line whose ``ts`` is anything else is not a
    kcat record, so it is an ``invalid_capture_line`` finding (counted, its text sampled), not a record."""
    ts = line["ts"]
    return ts is None or (type(ts) is int and INT64_MIN <= ts <= INT64_MAX)


def assert_all_counted(result: Any, lines: list[dict]) -> None:
    unreadable = sum(not _readable(line) for line in lines)
    assert (result.summary["records"], result.summary["unreadable_lines"]) == (len(lines) - unreadable, unreadable)
    assert sum(f["rule"] == "invalid_capture_line" for f in result.findings) == unreadable


def _write(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "extreme.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_sqlserver_nanosecond_ts_ms_is_one_finding_not_a_failed_scan(scan, tmp_path):
    """The real record: SQL Server's documented create event with ts_ms written in nanoseconds."""
    value = {"before": None, "after": {"id": 1005, "first_name": "john"}, "op": "c", "ts_ms": 1559729471739876149,
             "transaction": None,
             "source": {"version": "2.7.0.Final", "connector": "sqlserver", "name": "server1", "ts_ms": 1559729468470,
                        "snapshot": "false", "db": "testDB", "schema": "dbo", "table": "customers",
                        "change_lsn": "00000027:00000758:0003", "commit_lsn": "00000027:00000758:0005",
                        "event_serial_no": "1"}}
    line = {"topic": "server1.testDB.dbo.customers", "partition": 0, "offset": 9, "tstype": "create",
            "ts": 1559729471739, "broker": 0, "headers": None, "key": json.dumps({"id": 1005}), "payload": json.dumps(value)}
    result = scan([_write(tmp_path, [line])])
    assert result.summary["records"] == 1
    assert [(f["rule"], f["offset"]) for f in result.findings] == [("invalid_event_ts", 9)]
    assert "nanoseconds" in result.findings[0]["message"]
    # the record is not a lag: no lag figure was computed from it
    assert all(row["count"] == 0 for row in result.lag)


def _renamed(line: dict, prefix: str) -> dict:
    """The line on a topic of its own (so two captures of one flavour share no topic, partition and offset)."""
    return {**line, "topic": prefix + line["topic"]}


def test_every_extreme_value_in_every_numeric_field_is_scanned(scan, tmp_path):
    """Every flavour bare and with schemas (on topics of their own), in one scan."""
    lines = [line for flavour in FLAVOUR_NAMES for line in grid_capture(flavour, False)]
    lines += [_renamed(line, "s_") for flavour in FLAVOUR_NAMES for line in grid_capture(flavour, True)]
    result = scan([_write(tmp_path, lines)])
    assert_all_counted(result, lines)


PATHS = [(p, "data") for p in DATA_PATHS + LINE_PATHS] + [(p, "marker") for p in MARKER_PATHS]
VALUES = st.one_of(st.sampled_from(EXTREMES), st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


EDITS = st.fixed_dictionaries({
    "flavour": st.sampled_from(FLAVOUR_NAMES), "schemas": st.booleans(),
    "edits": st.lists(st.lists(st.tuples(st.sampled_from(PATHS), VALUES), min_size=1, max_size=4), min_size=1, max_size=12)})


def edited_lines(flavour: str, schemas: bool, edits: list[list[tuple[tuple[tuple[Any, ...], str], Any]]]) -> list[dict]:
    """The flavour's clean traffic, then one record per list of edits: a data event or transaction
    marker with each (field, value) of the list set in it, appended at a new offset."""
    lines = flavour_lines(flavour, schemas)
    data, markers = _roles(lines)
    for n, record_edits in enumerate(edits):
        base = {"offset": 2_000_000 + n}
        for (path, role), value in record_edits:
            pool = data if role == "data" else markers
            if not pool:
                continue
            base = mutate(base if "payload" in base else pool[n % len(pool)], path, value, 2_000_000 + n)
        if "payload" in base:
            lines.append(base)
    return lines


def test_drawn_extremes_in_several_fields_of_one_record(scan, tmp_path):
    """EXAMPLES drawn (flavour, schemas, records of several edited fields), each on topics of its
    own, in one scan; a failing batch is scanned again example by example to name the falsifying one."""
    cases = draw(EDITS, EXAMPLES)
    per_case = [[_renamed(line, f"x{i}_") for line in edited_lines(**e)] for i, e in enumerate(cases)]
    assert len({(e["flavour"], e["schemas"]) for e in cases}) > 1 and sum(len(e["edits"]) for e in cases) > len(cases)
    lines = [line for case in per_case for line in case]
    try:
        assert_all_counted(scan([_write(tmp_path, lines)]), lines)
    except AssertionError:
        for e, case in zip(cases, per_case, strict=True):
            try:
                assert_all_counted(scan([_write(tmp_path, case)]), case)
            except AssertionError as err:
                raise AssertionError(f"falsifying example: {e!r}") from err
        raise
