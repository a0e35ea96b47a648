"""watch's operator (cdc_monitor/java/Carry.java) and watch/carry.py name the same things: the
roles, the group kinds, the separator, the fed columns and the state's format version. Read from
the committed jar, as a user's Spark loads it (the way tests/unit/test_decoder_rules.py holds the
decoder's names equal)."""

from __future__ import annotations

from cdc_monitor.watch import carry
from tests.unit.test_decoder_rules import _decoder_says


def _says() -> dict[str, list[str]]:
    words = _decoder_says("vocabulary", carry.OPERATOR_CLASS)
    out: dict[str, list[str]] = {}
    current = ""
    for word in words:
        if word in ("roles", "kinds", "skinds", "sep", "input", "output", "version", "finding"):
            current = word
            out[current] = []
        else:
            out[current].append(word)
    return out


def test_the_operator_names_the_roles_kinds_and_columns_watch_reads():
    said = _says()
    assert said["roles"] == list(carry.ROLES)
    assert said["kinds"] == [carry.KEY, carry.PARTITION, carry.SERVER, carry.LAG, carry.BUDGET]
    assert said["skinds"] == [carry.MARKER, carry.DATA]
    assert said["sep"] == [str(ord(carry.SEP))]
    assert said["input"] == list(carry.FED)
    assert said["output"] == list(carry.OUTPUT)
    assert said["version"] == [str(carry.STATE_VERSION)]
    assert said["finding"] == [carry.FOUND_TYPE]
