"""Every module of the package imports: a name removed from one module and still imported by
another (ruff cannot tell) fails here, not in a user's ``watch`` after Spark started."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import cdc_monitor

# (``__main__`` runs the CLI when imported)
MODULES = sorted(m.name for m in pkgutil.walk_packages(cdc_monitor.__path__, "cdc_monitor.") if not m.name.endswith("__main__"))


def test_the_package_has_its_modules():
    assert {"cdc_monitor.watch.runner", "cdc_monitor.watch.batch", "cdc_monitor.pipeline", "cdc_monitor.cli.main"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name):
    importlib.import_module(name)


def _imported_packages(path):
    """The cdc_monitor packages a module imports when it runs (typing-only imports aside)."""
    import ast

    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for b in node.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in typing_only and (node.module or "").startswith("cdc_monitor."):
            yield node.module.split(".")[1]


def test_the_packages_import_each_other_without_circles():
    """checks/ never reaches into engine/ (it gets a CheckContext), sinks/ into the verbs or watch/
    (each outcome says its metrics_kind): every package's imports point one way."""
    from pathlib import Path

    root = Path(cdc_monitor.__file__).resolve().parent
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).parts
        package = rel[0].removesuffix(".py")
        edges.setdefault(package, set()).update(p for p in _imported_packages(path) if p != package)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and (seen.add(n) or reaches(n, goal, seen))) for n in edges.get(start, ()))

    circles = sorted(p for p in edges if reaches(p, p, set()))
    assert circles == []
    assert "engine" not in edges["checks"] and "checks" in edges["engine"]
