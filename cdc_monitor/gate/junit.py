"""JUnit XML: one test case per expectation, so CI systems list them (and their failures)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from cdc_monitor.errors import InputError
from cdc_monitor.gate.gx_runner import Outcome


def junit_xml(outcomes: Sequence[Outcome]) -> bytes:
    root = ET.Element("testsuites", name="cdc-monitor gate", tests=str(len(outcomes)),
                      failures=str(sum(not o.success and not o.exception for o in outcomes)),
                      errors=str(sum(bool(o.exception) for o in outcomes)))
    by_suite: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_suite.setdefault(o.suite, []).append(o)
    for name, items in by_suite.items():
        suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(items)),
                              failures=str(sum(not o.success and not o.exception for o in items)),
                              errors=str(sum(bool(o.exception) for o in items)),
                              time=f"{sum(o.seconds for o in items):.3f}")
        for o in items:
            case = ET.SubElement(suite, "testcase", classname=f"cdc-monitor.{name}.{o.frame}", name=o.title,
                                 time=f"{o.seconds:.3f}")
            if o.exception:
                ET.SubElement(case, "error", message=o.exception[:500], type="expectation_error").text = o.exception
            elif not o.success:
                ET.SubElement(case, "failure", message=o.observed()[:500], type="expectation_failed").text = o.observed()
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_junit(outcomes: Sequence[Outcome], path: str | Path) -> None:
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(junit_xml(outcomes))
    except OSError as err:
        raise InputError(f"cannot write --junit {p} ({err.strerror}): check the folder is writable") from None
