"""Differential check against an independent implementation: the plain-Python baseline in
``benchmarks/`` (a single-process script written apart from the Spark checks). Where both
judge a rule the same way, they must find the same records on the same capture; a disagreement
names the records."""

from __future__ import annotations

from benchmarks.plain_python import run as baseline
from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.kcat_writer import write_capture

# rules both implementations judge with the same meaning on generated traffic
SHARED = frozenset({"invalid_json", "duplicate", "event_after_delete", "position_regression", "missing_begin",
                    "count_mismatch"})


def test_same_records_found_as_the_plain_python_baseline(tmp_path, scan):
    paths = []
    for i, flavour in enumerate(FLAVOUR_NAMES):  # every flavour in one capture folder, one scan
        paths.append(tmp_path / f"{flavour}.jsonl")
        write_capture(generate(flavour, events=250, seed=41 + i, faults=True, fault_rules=SHARED), paths[-1])
    ours = scan([tmp_path])
    theirs = baseline([str(p) for p in paths])["where"]
    assert set(theirs) >= SHARED, "the capture exercised every shared rule"
    for rule in sorted(SHARED):
        mine = sorted((f["topic"], f["partition"], f["offset"]) for f in ours.findings if f["rule"] == rule)
        other = sorted(tuple(x) for x in theirs.get(rule, []))
        assert mine == other, {"rule": rule, "only cdc-monitor": sorted(set(mine) - set(other)),
                               "only the baseline": sorted(set(other) - set(mine))}
