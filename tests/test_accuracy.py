"""The checks against ground truth: every fault the generator injects is found at its exact
location, nothing else is found, and clean traffic (whole, or cut mid-stream and
mid-transaction) yields no finding at all. One scan per scenario covers all flavours."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from cdc_monitor.generator import FLAVOUR_NAMES, generate
from cdc_monitor.generator.fault_rules import applicable_rules
from cdc_monitor.generator.kcat_writer import label_dicts, write_capture

EVENTS = 600


def _key(d: dict) -> tuple:
    return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    root = tmp_path_factory.mktemp("accuracy")
    out: dict[str, tuple[Path, list[dict]]] = {}
    for schemas in (True, False):
        folder = root / f"faults-{'schemas' if schemas else 'bare'}"
        labels: list[dict] = []
        for i, flavour in enumerate(FLAVOUR_NAMES):
            traffic = generate(flavour, events=EVENTS, seed=100 + i, schemas=schemas, faults=True, heartbeats=True)
            write_capture(traffic, folder / f"{flavour}.jsonl")
            labels += label_dicts(traffic)
        out[folder.name] = (folder, labels)
    clean = root / "clean"
    for i, flavour in enumerate(FLAVOUR_NAMES):
        traffic = generate(flavour, events=EVENTS, seed=200 + i, schemas=i % 2 == 0)
        write_capture(traffic, clean / f"{flavour}.jsonl.gz" if i % 3 == 0 else clean / f"{flavour}.jsonl")
    out["clean"] = (clean, [])
    return out


@pytest.mark.parametrize("scenario", ["faults-schemas", "faults-bare"])
def test_every_injected_fault_is_found_exactly(captures, scan, scenario):
    folder, labels = captures[scenario]
    result = scan([folder])
    found = collections.Counter(_key(f) for f in result.findings)
    expected = collections.Counter(_key(lab) for lab in labels)
    missed, extra = expected - found, found - expected
    assert not missed and not extra, {"missed": sorted(missed)[:10], "extra": sorted(extra)[:10]}
    # each flavour had each of its rules injected three times; without schemas a missing_source_field
    # fault drops the source time, so its record is also invalid_source_ts's (issue 81): 3 + 3 of those
    per_topic_prefix = collections.Counter((lab["topic"].split(".")[0], lab["rule"]) for lab in labels)
    doubled = {"invalid_source_ts"} if scenario == "faults-bare" else set()
    assert {n for (_, rule), n in per_topic_prefix.items() if rule not in doubled} == {3}
    assert {n for (_, rule), n in per_topic_prefix.items() if rule in doubled} == ({6} if doubled else set())
    # and the report's counts agree with the list
    assert sum(n for per in result.findings_by_rule.values() for n in per.values()) == len(labels)


def test_fault_plan_covers_every_rule_of_the_contract():
    from cdc_monitor.checks.catalogue import CATALOGUE, ONCE_PER_TOPIC
    from cdc_monitor.checks.decode import CAPTURE_RULES
    from cdc_monitor.checks.registry_schemas import RULES as AVRO_RULES
    from cdc_monitor.generator.wire_faults import AVRO_INEXPRESSIBLE, AVRO_WIRE_RULES

    # per-topic rules are said of legitimate traffic features (tests/test_accuracy_features.py);
    # capture rules of the capture files (tests/test_capture_source.py); Avro rules of Avro traffic
    # (the registry's schemas per topic in tests/test_avro.py); schema changes without DDL of hand-made
    # schema-change traffic (tests/test_schema_changes.py: the generator writes no schema-change topic)
    avro = {r.name for r in AVRO_RULES}
    # hand-made only (tests/test_real_traffic.py): a marker without an id (dropping a generated marker's
    # id also leaves its partner unmatched, two findings for the generator's one label), and a stalled
    # connector (a silence in every topic of a server, which the generator's timeline does not model), and
    # a PostgreSQL sequence on two LSNs (one flavour's)
    hand_made = {"invalid_marker_id", "connector_stalled", "sequence_conflict"}
    # what the broker does to a stream, not what a record says (tests/test_broker_faults.py)
    from cdc_monitor.checks.source_gaps import RULES as SOURCE_RULES

    broker_made = {r.name for r in SOURCE_RULES}
    # a table against its own history, not a record against the contract: judged on the seasonal
    # generator's labelled history (tests/unit/test_anomalies.py, tests/test_history.py)
    from cdc_monitor.checks.anomalies import RULES as ANOMALY_RULES

    history_made = {r.name for r in ANOMALY_RULES}
    contract = (set(CATALOGUE) - {"invalid_envelope", "schema_change_without_ddl"} - CAPTURE_RULES - ONCE_PER_TOPIC - avro
                - hand_made - broker_made - history_made)
    assert set(applicable_rules("mysql", schemas=True, tombstones=True, partitions=3)) == contract
    wire = set(applicable_rules("mysql", schemas=False, tombstones=True, partitions=3, value_format="avro"))
    bare = set(applicable_rules("mysql", schemas=False, tombstones=True, partitions=3))
    assert wire == bare - set(AVRO_INEXPRESSIBLE) | set(AVRO_WIRE_RULES)
    assert avro - wire == {"avro_schema_name", "avro_envelope_fields"}


def test_clean_traffic_has_no_findings(captures, scan):
    folder, _ = captures["clean"]
    result = scan([folder])
    assert result.findings == []
    tx = result.transactions
    with_metadata = len([f for f in FLAVOUR_NAMES if f != "dtle"])
    assert tx["open"] == with_metadata  # the newest transaction of each flavour with transaction metadata
    assert tx["complete"] == tx["total"] - with_metadata > 100
    assert result.summary["invalid_records"] == 0


def _cut(src_folder: Path, dst: Path, by: str) -> Path:
    """A window cut mid-stream: by record time (inside transactions at both ends) or the
    last N records per partition (each partition starting at a different point)."""
    import gzip

    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src_folder.iterdir()):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            recs = [json.loads(line) for line in fh]
        if by == "time":
            # record times of second events of multi-event transactions: cutting there splits one
            second = sorted(r["ts"] for r in recs if r["payload"] and '"total_order":2' in r["payload"].replace(" ", ""))
            lo, hi = (second[len(second) // 4], second[3 * len(second) // 4]) if second else (0, 1 << 62)
            keep = [r for r in recs if lo <= r["ts"] <= hi]
        else:
            parts = collections.defaultdict(list)
            for r in recs:
                parts[(r["topic"], r["partition"])].append(r)
            keep = [r for rs in parts.values() for r in rs[len(rs) // 3:]]
        (dst / path.name.replace(".gz", "")).write_text("".join(json.dumps(r) + "\n" for r in keep))
    return dst


@pytest.mark.parametrize("by", ["time", "last-n"])
def test_windows_cut_mid_stream_have_no_findings(captures, scan, tmp_path, by):
    folder, _ = captures["clean"]
    result = scan([_cut(folder, tmp_path / by, by)])
    assert result.findings == []
    assert result.transactions["unverifiable"] > 0  # the cut transactions are recognised as such
