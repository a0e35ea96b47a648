"""Every example event of the five seed documents decodes to its reviewed, expected fields and
yields exactly its expected findings (tests/golden/seeds/seed_events.json, built by
build_fixtures.py; each case lists what was edited from the printed example)."""

from __future__ import annotations

import pytest

from cdc_monitor.decoding import decode_records
from cdc_monitor.sources.capture import read_capture
from tests.support.captures import seed_capture, seed_cases

CASES = seed_cases()
FIELDS = list(CASES[0]["expected"]["fields"])


@pytest.fixture(scope="module")
def seed_scan(spark, caps, scan, tmp_path_factory):
    path = seed_capture(tmp_path_factory.mktemp("seeds") / "seeds.jsonl")
    frame = decode_records(read_capture(spark, [path]).records, session=caps).select("offset", *FIELDS)
    decoded = [r.asDict(recursive=True) for r in frame.collect()]
    return {r["offset"]: {k: r[k] for k in FIELDS} for r in decoded}, scan([path])


def test_every_seed_file_is_covered():
    assert {c["seed"] for c in CASES} == {"000", "001", "002", "003", "004"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_seed_event_decodes_to_expected_fields(seed_scan, case):
    decoded, _ = seed_scan
    assert decoded[case["offset"]] == case["expected"]["fields"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_seed_event_findings(seed_scan, case):
    _, result = seed_scan
    rules = sorted(f["rule"] for f in result.findings if f["offset"] == case["offset"])
    assert rules == case["expected"]["findings"]


def test_seed_scan_counts(seed_scan):
    _, result = seed_scan
    s = result.summary
    assert s["records"] == len(CASES)
    assert s["invalid_records"] == 2  # the two keys printed as invalid JSON
    assert s["transaction_markers"] == 4
    assert s["schema_changes"] == 2
    assert s["tombstones"] == 3  # the tombstone, plus the two invalid keys without value
