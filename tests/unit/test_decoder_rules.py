"""The decoder (cdc_monitor/java) and the Python side name the same things: the rules it judges are
the Rule constants checks/verdicts.py gathers (the key pass's judge: checks/ordering.py's), and the
columns it returns are decoding/decoder.py's DECODED, both ways. Read from the committed jar, as a user's Spark loads it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyspark

from cdc_monitor.checks import ordering, table_pass
from cdc_monitor.checks.verdicts import JUDGED_BY_DECODER
from cdc_monitor.decoding.decoder import DECODED, DECODER_CLASS
from cdc_monitor.runtime.jvm import operator_jar


def _decoder_says(what: str, java_class: str = DECODER_CLASS) -> list[str]:
    jars = Path(pyspark.__file__).parent / "jars"
    out = subprocess.run(["java", "-cp", f"{operator_jar()}{os.pathsep}{jars}/*", java_class, what],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return out.split()


def test_the_decoder_judges_exactly_the_rules_declared_as_its_own():
    assert sorted(_decoder_says("rules")) == sorted(r.name for r in JUDGED_BY_DECODER)


def test_the_decoder_returns_exactly_the_columns_the_python_side_reads():
    assert _decoder_says("columns") == DECODED.fieldNames()


def test_every_rule_the_decoder_judges_is_a_per_record_rule():
    assert {r.scope for r in JUDGED_BY_DECODER} == {"record"}


def test_the_key_pass_judges_exactly_the_ordering_checks_rules():
    """java/KeyJudge.java names the rules checks/ordering.py declares, and no other."""
    assert sorted(_decoder_says("rules", ordering.KEY_JUDGE.java_class)) == sorted(r.name for r in ordering.RULES)


def test_the_table_pass_judges_exactly_the_rules_it_names():
    """java/TableJudge.java names the rules checks/table_pass.py gathers (declared in checks/lag.py,
    snapshots.py and schema_changes.py), and no other."""
    assert sorted(_decoder_says("rules", table_pass.TABLE_JUDGE.java_class)) == sorted(r.name for r in table_pass.RULES)
