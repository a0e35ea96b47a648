"""Property-based accuracy: generated traffic with a random subset of faults, seed, schema,
tombstone and partition settings must yield exactly its labelled findings; clean traffic cut at
a random window must yield none.

Each test draws EXAMPLES examples up front (tests/support/properties.py: derandomized, so a red
run is reproducible), every flavour in turn, each example on topics of its own (its own server
name), and scans them all at once: one Spark job per test. A failing batch is scanned again
example by example, and the failure prints the falsifying example's ``generate(...)`` call.
Explore more with ``CDC_MONITOR_PROPERTY_EXAMPLES=200 CDC_MONITOR_PROPERTY_RANDOM=1 pytest tests/test_accuracy_properties.py``."""

from __future__ import annotations

import collections
import json
from typing import Any

from hypothesis import strategies as st

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.fault_rules import ALL_RULES
from cdc_monitor.generator.kcat_writer import kcat_lines, label_dicts, write_capture
from tests.support.properties import draw, examples

EXAMPLES = max(examples(28), len(FLAVOUR_NAMES))  # four per flavour by default, each flavour at least once
EVENTS = 250


def _key(d: dict) -> tuple:
    return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])


def _with_flavours(drawn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every flavour in turn (so each is explored whatever hypothesis draws), each on a server of its own."""
    return [{"flavour": FLAVOUR_NAMES[i % len(FLAVOUR_NAMES)], "server": f"prop{i}", **d} for i, d in enumerate(drawn)]


FAULTY = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31), "schemas": st.booleans(), "tombstones": st.booleans(), "partitions": st.integers(1, 4),
    "rules": st.frozensets(st.sampled_from(ALL_RULES), min_size=1, max_size=8)})


def _faulty_call(e: dict[str, Any]) -> str:
    return (f"generate({e['flavour']!r}, events={EVENTS}, seed={e['seed']}, schemas={e['schemas']}, "
            f"tombstones={e['tombstones']}, partitions={e['partitions']}, server={e['server']!r}, faults=True, "
            f"fault_rules=frozenset({sorted(e['rules'])}))")


def _faulty_traffic(e: dict[str, Any]):
    return generate(e["flavour"], events=EVENTS, seed=e["seed"], schemas=e["schemas"], tombstones=e["tombstones"],
                    partitions=e["partitions"], server=e["server"], faults=True, fault_rules=e["rules"])


def _mismatch(result, labels: list[dict]) -> dict[str, list]:
    found = collections.Counter(_key(f) for f in result.findings)
    expected = collections.Counter(_key(lab) for lab in labels)
    return {"missed": sorted(expected - found)[:5], "extra": sorted(found - expected)[:5]}


def test_random_fault_subsets_are_found_exactly(scan, tmp_path):
    cases = _with_flavours(draw(FAULTY, EXAMPLES))
    folder = tmp_path / "faulty"
    labels: list[list[dict]] = []
    for i, e in enumerate(cases):
        traffic = _faulty_traffic(e)
        write_capture(traffic, folder / f"{i}.jsonl")
        labels.append(label_dicts(traffic))
    assert {e["flavour"] for e in cases} == set(FLAVOUR_NAMES) and sum(map(len, labels)) > len(cases)
    wrong = _mismatch(scan([folder]), [lab for per in labels for lab in per])
    if wrong["missed"] or wrong["extra"]:  # which example: each alone
        for i, e in enumerate(cases):
            alone = _mismatch(scan([folder / f"{i}.jsonl"]), labels[i])
            assert not alone["missed"] and not alone["extra"], {"example": _faulty_call(e), **alone}
        raise AssertionError({"every example alone is right, together they are not": wrong})


def test_mongodb_lag_spikes_close_together_are_labelled_as_found(scan, tmp_path):
    """The example the property test found (its first falsifying example, minimised to two rules): MongoDB's
    spike delays ts_ms by 120 s (its source time is its position), so two spikes of one table close together
    were consecutive by ts_ms, one run and one finding, while the generator labelled two. The generator now
    spaces a table's MongoDB spikes by twice the delay."""
    e = {"flavour": "mongodb", "seed": 222, "schemas": False, "tombstones": False, "partitions": 1, "server": "known",
         "rules": frozenset({"lag_spike", "duplicate"})}
    traffic = _faulty_traffic(e)
    write_capture(traffic, tmp_path / "c.jsonl")
    wrong = _mismatch(scan([tmp_path / "c.jsonl"]), label_dicts(traffic))
    assert not wrong["missed"] and not wrong["extra"], {"example": _faulty_call(e), **wrong}


CUTS = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31), "schemas": st.booleans(), "partitions": st.integers(1, 4),
    "by": st.sampled_from(["time", "last-n"]), "lo": st.floats(0.05, 0.45), "hi": st.floats(0.55, 0.95)})


def _cut_call(e: dict[str, Any]) -> str:
    return (f"generate({e['flavour']!r}, events={EVENTS}, seed={e['seed']}, schemas={e['schemas']}, "
            f"partitions={e['partitions']}, server={e['server']!r}); cut by {e['by']} at {e['lo']!r}..{e['hi']!r}")


def _cut(e: dict[str, Any]) -> list[dict]:
    records = [json.loads(line) for line in kcat_lines(generate(e["flavour"], events=EVENTS, seed=e["seed"],
                                                                schemas=e["schemas"], partitions=e["partitions"],
                                                                server=e["server"]))]
    lo, hi = e["lo"], e["hi"]
    if e["by"] == "time":  # every topic over the same record-time span, both ends anywhere
        ts = sorted(r["ts"] for r in records)
        t0, t1 = ts[int(lo * len(ts))], ts[int(hi * len(ts))]
        return [r for r in records if t0 <= r["ts"] <= t1]
    # the last records of each partition, each partition starting at its own point
    parts: dict[tuple, list] = collections.defaultdict(list)
    for r in records:
        parts[(r["topic"], r["partition"])].append(r)
    return [r for rs in parts.values() for r in rs[int(lo * len(rs)):]]


def _findings(result) -> list[tuple]:
    return [(f["rule"], f["topic"], f["offset"], f["message"]) for f in result.findings[:5]]


def test_clean_traffic_cut_anywhere_has_no_findings(scan, tmp_path):
    cases = _with_flavours(draw(CUTS, EXAMPLES))
    folder = tmp_path / "cuts"
    folder.mkdir()
    for i, e in enumerate(cases):
        (folder / f"{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _cut(e)))
    assert {e["flavour"] for e in cases} == set(FLAVOUR_NAMES) and {e["by"] for e in cases} == {"time", "last-n"}
    result = scan([folder])
    if result.findings:  # which example: each alone
        for i, e in enumerate(cases):
            alone = scan([folder / f"{i}.jsonl"])
            assert alone.findings == [], {"example": _cut_call(e), "findings": _findings(alone)}
        raise AssertionError({"every example alone is clean, together they are not": _findings(result)})
