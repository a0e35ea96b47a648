"""Alert rules: promtool checks them and runs every unit test in deploy/prometheus/tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.support.promtools import binary

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
RULES = DEPLOY / "cdc-monitor.rules.yml"


def static_annotations() -> dict[str, dict[str, str]]:
    out = {}
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            notes = {k: v for k, v in rule["annotations"].items() if k != "summary"}
            assert not any("{{" in v for v in notes.values()), f"{rule['alert']}: only summary may be templated"
            assert {"summary", "description", "runbook"} <= set(rule["annotations"]), rule["alert"]
            out[rule["alert"]] = notes
    return out


def test_promtool_check_rules():
    proc = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_alert_has_a_firing_unit_test_and_all_pass_as_shipped():
    """``promtool test rules`` on each shipped test file, from its folder, as a user runs it after
    copying the rules; its expected annotations are the rules' own (no drift)."""
    notes = static_annotations()
    fired: set[str] = set()
    for test_file in sorted((DEPLOY / "tests").glob("*.yml")):
        spec = yaml.safe_load(test_file.read_text())
        for case in spec["tests"]:
            for check in case.get("alert_rule_test", []):
                for alert in check.get("exp_alerts") or []:
                    fired.add(check["alertname"])
                    expected = {k: v for k, v in alert.get("exp_annotations", {}).items() if k != "summary"}
                    assert expected == notes[check["alertname"]], (
                        f"{test_file.name}: {check['alertname']}'s description/runbook differ from the rules file")
        proc = subprocess.run([binary("promtool"), "test", "rules", test_file.name], capture_output=True, text=True,
                              cwd=test_file.parent)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert fired == set(notes), f"alerts without a firing test: {sorted(set(notes) - fired)}"
