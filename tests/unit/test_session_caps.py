"""Every capability ``SessionCaps`` holds is read outside its module: a field nothing reads is a second
answer to a question the code asks some other way (runtime/session.py)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from cdc_monitor.runtime.session import SessionCaps

PACKAGE = Path(__file__).resolve().parents[2] / "cdc_monitor"


def _attributes_read(exclude: Path) -> set[str]:
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if path == exclude:
            continue
        names |= {n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)}
    return names


def test_every_session_capability_is_read_somewhere():
    read = _attributes_read(PACKAGE / "runtime" / "session.py")
    fields = {f.name for f in dataclasses.fields(SessionCaps)}
    assert fields and fields <= read, f"SessionCaps fields nothing reads: {sorted(fields - read)}"
