"""Property-based accuracy: generated traffic with a random subset of faults, seed, schema,
tombstone and partition settings must yield exactly its labelled findings; clean traffic cut at
a random window must yield none.

CI runs a few fixed examples (derandomized, so a red run is reproducible); explore more with
``CDC_MONITOR_PROPERTY_EXAMPLES=50 CDC_MONITOR_PROPERTY_RANDOM=1 pytest tests/test_accuracy_properties.py``.
A failure prints the falsifying example (flavour, seed, settings, fault subset) to regenerate it
with ``cdc-monitor generate``/``generate(...)``."""

from __future__ import annotations

import collections
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.fault_rules import ALL_RULES
from cdc_monitor.generator.kcat_writer import kcat_lines, label_dicts, write_capture

EXAMPLES = int(os.environ.get("CDC_MONITOR_PROPERTY_EXAMPLES", "1"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                    derandomize=not os.environ.get("CDC_MONITOR_PROPERTY_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _key(d: dict) -> tuple:
    return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])


@SETTINGS
@given(flavour=st.sampled_from(FLAVOUR_NAMES), seed=st.integers(0, 2**31), schemas=st.booleans(),
       tombstones=st.booleans(), partitions=st.integers(1, 4),
       rules=st.frozensets(st.sampled_from(ALL_RULES), min_size=1, max_size=8))
def test_random_fault_subsets_are_found_exactly(scan, flavour, seed, schemas, tombstones, partitions, rules):
    note(f"generate({flavour!r}, events=250, seed={seed}, schemas={schemas}, tombstones={tombstones}, "
         f"partitions={partitions}, faults=True, fault_rules=frozenset({sorted(rules)}))")
    traffic = generate(flavour, events=250, seed=seed, schemas=schemas, tombstones=tombstones, partitions=partitions,
                       faults=True, fault_rules=rules)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "capture.jsonl"
        write_capture(traffic, path)
        result = scan([path])
    found = collections.Counter(_key(f) for f in result.findings)
    expected = collections.Counter(_key(lab) for lab in label_dicts(traffic))
    assert found == expected, {"missed": sorted(expected - found)[:5], "extra": sorted(found - expected)[:5]}


@SETTINGS
@given(flavour=st.sampled_from(FLAVOUR_NAMES), seed=st.integers(0, 2**31), schemas=st.booleans(),
       partitions=st.integers(1, 4), by=st.sampled_from(["time", "last-n"]),
       lo=st.floats(0.05, 0.45), hi=st.floats(0.55, 0.95))
def test_clean_traffic_cut_anywhere_has_no_findings(scan, flavour, seed, schemas, partitions, by, lo, hi):
    note(f"generate({flavour!r}, events=250, seed={seed}, schemas={schemas}, partitions={partitions}); "
         f"cut by {by} at {lo:.3f}..{hi:.3f}")
    records = [json.loads(line) for line in kcat_lines(generate(flavour, events=250, seed=seed, schemas=schemas,
                                                                partitions=partitions))]
    if by == "time":  # every topic over the same record-time span, both ends anywhere
        ts = sorted(r["ts"] for r in records)
        t0, t1 = ts[int(lo * len(ts))], ts[int(hi * len(ts))]
        keep = [r for r in records if t0 <= r["ts"] <= t1]
    else:  # the last records of each partition, each partition starting at its own point
        parts: dict[tuple, list] = collections.defaultdict(list)
        for r in records:
            parts[(r["topic"], r["partition"])].append(r)
        keep = [r for rs in parts.values() for r in rs[int(lo * len(rs)):]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cut.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in keep))
        result = scan([path])
    assert result.findings == [], [(f["rule"], f["topic"], f["offset"], f["message"]) for f in result.findings[:5]]
