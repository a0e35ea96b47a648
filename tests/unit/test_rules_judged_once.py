"""Each rule is judged in exactly one place: one function of its check module builds its findings
(``finding``, ``finding_sql``, ``judged_sql``, ``finding_row``, ``dynamic_finding``), or a Java judge of the operators
jar whose codes tests/unit/test_decoder_rules.py holds equal to the rules it names. Read from the
sources, so a second implementation of a rule (a pass of its own beside its pass) fails here."""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.vocabulary import Rule

PACKAGE = Path(__file__).resolve().parents[2] / "cdc_monitor"
BUILDERS = {"finding": 0, "finding_sql": 0, "judged_sql": 0, "finding_row": 0, "dynamic_finding": 1}  # -> the rule argument's place


def _places() -> dict[str, set[str]]:
    """Rule name -> the functions (file:function) that build its findings."""
    out: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        module = None
        for func in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            for call in [n for n in ast.walk(func) if isinstance(n, ast.Call)]:
                name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
                if name not in BUILDERS or func.name == name or len(call.args) <= BUILDERS[name]:
                    continue
                if module is None:
                    dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
                    module = vars(importlib.import_module(dotted))
                try:
                    value = eval(compile(ast.Expression(call.args[BUILDERS[name]]), str(path), "eval"), module)
                except NameError:  # a local (a rule chosen per row): its function's other calls name the rules
                    continue
                rules = [value] if isinstance(value, Rule) else [r for r in value if isinstance(r, Rule)]
                for rule in rules:
                    out[rule.name].add(f"{path.relative_to(PACKAGE)}:{func.name}")
    return out


def test_each_rule_is_judged_in_exactly_one_place():
    """A rule across records (scope key, transaction or table) is built in one function of its module;
    a rule the decoder judges is built nowhere but from the decoder's verdicts (checks/verdicts.py);
    no rule is built in two functions (the driver's rules, chosen per row from data: at most one)."""
    from cdc_monitor.checks.verdicts import JUDGED_BY_DECODER

    places = _places()
    assert {rule: sorted(p) for rule, p in places.items() if len(p) > 1} == {}
    assert {r.name: sorted(places[r.name]) for r in JUDGED_BY_DECODER if r.name in places} == {}
    # judged on the driver, each rule chosen per row from data its module computes (a registry schema,
    # a history's baseline, a gap in the offsets): no Spark pass, and no builder call names them
    from cdc_monitor.checks import anomalies, registry_schemas, source_gaps

    driver = {r.name for m in (anomalies, registry_schemas, source_gaps) for r in m.RULES}
    across = {name for name, rule in CATALOGUE.items() if rule.scope in ("key", "transaction", "table")} - driver
    assert sorted(across - set(places)) == []
    assert len(across) > 20


def test_the_ordering_rules_are_judged_by_the_key_pass_alone():
    from cdc_monitor.checks import ordering

    places = _places()
    assert {r.name: sorted(places[r.name]) for r in ordering.RULES} == {
        r.name: ["checks/ordering.py:ordering_sql"] for r in ordering.RULES}
