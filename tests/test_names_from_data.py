"""Names from the data and the configuration are data, never statement text: servers, databases,
schemas, tables, topics and key columns named with braces (``{context}``, Debezium's documentation
template verbatim, crashed a scan: ``str.format`` read it as a placeholder), quotes, backslashes,
SQL comment and statement marks, ``%s``, non-ASCII letters and 4-byte characters are scanned as
their plain twins are: the same report, names aside.

Generated traffic (every flavour, every fault, heartbeats) is renamed after generation
(tests/support/captures.py, ``renamed_line``), so its labels still say what must be found."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.flavours import FLAVOURS, TABLES
from cdc_monitor.generator.kcat_writer import kcat_lines, label_dicts
from tests.support.captures import kcat_line, renamed_line, write_lines
from tests.support.properties import draw, examples
from tests.test_schema_changes import _change, _ddl

EVENTS = 250
# what SQL text, str.format or %-formatting would misread, and letters outside ASCII and the BMP
PIECES = ("{", "}", "{0}", "{context}", "'", "\\", "--", ";", "%s", "é", "ß", "中", "😀", "𝔘", "`", '"', "a", "Z", "_")


def _originals(flavour: str) -> dict[str, Any]:
    """The names the generator writes for ``flavour``: server, db, schema, tables, key column."""
    f = FLAVOURS[flavour]
    return {"server": f.server, "db": f.db, "schema": f.schema, "tables": [f.ident(t.name) for t in TABLES],
            "key": None if f.documents else f.ident("id")}  # (MongoDB's key field is Debezium's own "id")


def _mapping(flavour: str, new: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(names, columns): each of ``flavour``'s names -> its new name in ``new``."""
    old = _originals(flavour)
    names = {old["server"]: new["server"], **dict(zip(old["tables"], new["tables"], strict=True))}
    names |= {old[k]: new[k] for k in ("db", "schema") if old[k] is not None}
    return names, ({old["key"]: new["key"]} if old["key"] is not None else {})


def _table(flavour: str, table: str, names: dict[str, str]) -> str:
    """The qualified table name (the ``table`` of reports and of per-table thresholds), renamed."""
    return ".".join(names.get(p, p) for p in FLAVOURS[flavour].data_collection(table).split("."))


def _at(lines: list[str]) -> dict[tuple, str | None]:
    """Each record's key text by (topic, partition, offset)."""
    return {(r["topic"], r["partition"], r["offset"]): r["key"] for r in map(json.loads, lines)}


class Twins:
    """Captures side by side with their renamed twins: what the twin's findings and report must be."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.labels: list[dict[str, Any]] = []
        self.old_keys: dict[tuple, str | None] = {}
        self.new_keys: dict[tuple, str | None] = {}

    def add(self, traffic: Any, names: dict[str, str], columns: dict[str, str]) -> list[str]:
        lines = list(kcat_lines(traffic))
        renamed = [renamed_line(line, names, columns) for line in lines]
        self.names |= names
        self.labels += label_dicts(traffic)
        self.old_keys |= _at(lines)
        self.new_keys |= _at(renamed)
        return renamed

    def name(self, text: Any) -> Any:
        return ".".join(self.names.get(p, p) for p in text.split(".")) if isinstance(text, str) else text

    def key(self, f: dict[str, Any]) -> tuple:
        """A finding or label of the plain capture as its twin's must be: names renamed, the key the
        twin record's (its columns renamed)."""
        at = (f["topic"], f["partition"], f["offset"])
        renamed = self.new_keys.get((self.name(f["topic"]), f["partition"], f["offset"]))
        key = renamed if f["key"] is not None and self.old_keys.get(at) == f["key"] else f["key"]
        return (f["rule"], self.name(f["topic"]), f["partition"], f["offset"], key, f["txn_id"])

    def finding(self, f: dict[str, Any]) -> tuple:
        """``key`` and the rest of a finding but its message (it quotes names)."""
        return (*self.key(f), f["severity"], self.name(f["server"]), self.name(f["table"]), tuple(f["offsets"] or ()))

    def report(self, result: Any, renamed: bool) -> dict[str, Any]:
        """The report's parts that say what was found and measured, names renamed on the plain one's."""
        def norm(x: Any) -> Any:
            if isinstance(x, dict):
                return {norm(k): norm(v) for k, v in x.items() if k not in ("message", "messages")}
            if isinstance(x, list):
                return sorted((norm(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True, default=str))
            return x if renamed else self.name(x)

        parts = {k: getattr(result, k) for k in ("summary", "events_by_table", "lag", "transactions", "findings_by_rule",
                                                   "finding_counts", "topic_counts", "heartbeats", "snapshots", "series")}
        parts["window"] = result.window
        out = norm(parts)
        out["findings"] = sorted(self.finding(f) if not renamed else
                                 (f["rule"], f["topic"], f["partition"], f["offset"], f["key"], f["txn_id"], f["severity"],
                                  f["server"], f["table"], tuple(f["offsets"] or ())) for f in result.findings)
        return out


def _key(d: dict) -> tuple:
    return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])


NEW = {"db": "inv{0}\\ent;ory", "schema": "pub--lic%s", "key": "ïd%s}'",
       "tables": ["cüstömers{", "orders{2024}", "pro'ducts;--😀"]}


def test_names_with_braces_quotes_and_4_byte_letters_give_their_plain_twins_report(scan, tmp_path):
    twins = Twins()
    thresholds: tuple[dict[str, int], dict[str, int]] = ({}, {})  # (plain, renamed): one table's own lag threshold
    for i, flavour in enumerate(FLAVOUR_NAMES):
        traffic = generate(flavour, events=EVENTS, seed=400 + i, schemas=False, faults=True, fault_repeats=1,
                           heartbeats=True)
        names, columns = _mapping(flavour, {**NEW, "server": f"{flavour}{{context}}'😀"})
        for folder in ("plain", "renamed"):
            (tmp_path / folder).mkdir(exist_ok=True)
        write_lines(tmp_path / "plain" / f"{flavour}.jsonl", kcat_lines(traffic))
        write_lines(tmp_path / "renamed" / f"{flavour}.jsonl", twins.add(traffic, names, columns))
        thresholds[0][_table(flavour, "orders", {})] = 3_600_000
        thresholds[1][_table(flavour, "orders", names)] = 3_600_000
    plain = scan([tmp_path / "plain"], table_lag_threshold_ms=thresholds[0])
    renamed = scan([tmp_path / "renamed"], table_lag_threshold_ms=thresholds[1])
    # the plain capture is judged right (orders' spikes are under its own hour)...
    spikes_on_orders = {(lab["topic"], lab["offset"]) for lab in twins.labels if lab["rule"] == "lag_spike"
                        and lab["topic"].rsplit(".", 1)[-1].lower() == "orders"}
    assert spikes_on_orders, "some flavour's lag spike is on orders: the table threshold is exercised"
    expected = sorted(_key(lab) for lab in twins.labels if (lab["topic"], lab["offset"]) not in spikes_on_orders
                      or lab["rule"] != "lag_spike")
    assert sorted(_key(f) for f in plain.findings) == expected
    # ...and its renamed twin has the same report
    assert twins.report(renamed, True) == twins.report(plain, False)


def test_a_server_named_like_a_format_placeholder_is_read_as_its_name(scan, tmp_path):
    """The issue's capture: Debezium's documented schema-change example with ``{context}`` as the server
    name (its template placeholder, verbatim) crashed the scan with KeyError: 'context'. The schema-change
    topic of server ``{context}`` names orders and items; users changes schema without a DDL event."""
    server = "{context}"
    lines = [_ddl(server, 0, "ALTER TABLE orders ADD COLUMN email varchar(255)", ['"inventory"."orders"']),
             _ddl(server, 1, "ALTER TABLE `items` ADD COLUMN email varchar(255)", [])]
    for table in ("orders", "items", "users"):
        lines += [_change(server, table, i, 1 if i < 3 else 2) for i in range(6)]
    result = scan([write_lines(tmp_path / "ddl.jsonl", lines)])
    found = [(f["rule"], f["topic"], f["offset"], f["server"]) for f in result.findings
             if f["rule"] != "invalid_avro_name"]  # ({context}.inventory.users.Value is no Avro name: rightly said)
    assert found == [("schema_change_without_ddl", "{context}.inventory.users", 3, server)]
    assert result.summary["schema_changes"] == 2


def test_a_table_threshold_named_with_quotes_and_braces_applies_to_its_table(scan, tmp_path):
    """A per-table lag threshold from the configuration: its table name is a value, not SQL."""
    base, table = 1_767_225_600_000, "it's{0}"
    lines = []
    for i, lag in enumerate([100, 40_000, 100]):
        value = {"before": None, "after": {"id": i}, "op": "c", "ts_ms": base + i * 5_000 + lag,
                 "source": {"connector": "mysql", "name": "s", "ts_ms": base + i * 5_000, "db": "d", "table": table,
                            "file": "mysql-bin.000003", "pos": 1000 + i, "row": 0, "snapshot": "false",
                            "version": "2.7.3.Final", "server_id": 1}}
        lines.append(kcat_line(f"s.d.{table}", 0, i, json.dumps({"id": i}), json.dumps(value), base + i * 5_000 + lag + 5))
    path = write_lines(tmp_path / "t.jsonl", lines)
    assert [f["rule"] for f in scan([path], lag_threshold_ms=30_000).findings] == ["lag_spike"]
    assert scan([path], lag_threshold_ms=30_000, table_lag_threshold_ms={f"d.{table}": 60_000}).findings == []


NAME = st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join)
NAMES = st.fixed_dictionaries({"server": NAME, "db": NAME, "schema": NAME, "key": NAME,
                               "tables": st.lists(NAME, min_size=3, max_size=3, unique=True)})


def test_drawn_names_are_scanned_as_the_generators_names(scan, tmp_path):
    """Property: every flavour's faulty traffic renamed with drawn names (each example on servers of its
    own) gives exactly its labels; per-table thresholds named so from the configuration apply."""
    cases = draw(NAMES, max(examples(14), len(FLAVOUR_NAMES)))
    folder, thresholds, per_case = tmp_path / "drawn", {}, []
    folder.mkdir()
    for i, new in enumerate(cases):
        flavour = FLAVOUR_NAMES[i % len(FLAVOUR_NAMES)]
        new = {**new, "server": f"{new['server']}{i}"}
        traffic = generate(flavour, events=EVENTS, seed=500 + i, schemas=False, faults=True, fault_repeats=1,
                           heartbeats=True)
        names, columns = _mapping(flavour, new)
        twins = Twins()  # (each example its own: the generator's names repeat across examples of a flavour)
        write_lines(folder / f"{i}.jsonl", twins.add(traffic, names, columns))
        per_case.append((flavour, new, sorted(twins.key(lab) for lab in twins.labels)))
        thresholds[_table(flavour, "orders", names)] = 60_000  # the default: the same findings, through the config
    result = scan([folder], table_lag_threshold_ms=thresholds)
    if sorted(_key(f) for f in result.findings) != sorted(k for *_, want in per_case for k in want):
        for i, (flavour, new, want) in enumerate(per_case):  # which example: each alone
            alone = sorted(_key(f) for f in scan([folder / f"{i}.jsonl"], table_lag_threshold_ms=thresholds).findings)
            assert alone == want, {"flavour": flavour, "names": new, "missed": sorted(set(want) - set(alone))[:5],
                                   "extra": sorted(set(alone) - set(want))[:5]}
        raise AssertionError("every example alone is right, together they are not")
