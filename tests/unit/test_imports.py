"""Every module of the package imports: a name removed from one module and still imported by
another (ruff cannot tell) fails here, not in a user's ``watch`` after Spark started."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import cdc_monitor

# (``__main__`` runs the CLI when imported)
MODULES = sorted(m.name for m in pkgutil.walk_packages(cdc_monitor.__path__, "cdc_monitor.") if not m.name.endswith("__main__"))


def test_the_package_has_its_modules():
    assert {"cdc_monitor.watch.runner", "cdc_monitor.watch.batch", "cdc_monitor.pipeline", "cdc_monitor.cli.main"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name):
    importlib.import_module(name)


ROOT = Path(cdc_monitor.__file__).resolve().parent


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULE_FILES = {_module(p): p for p in ROOT.rglob("*.py")}


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes under an ``if TYPE_CHECKING:`` (imports for annotations only)."""
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for b in node.body for n in ast.walk(b)}


def _imports(path: Path, typing_too: bool = False) -> set[str]:
    """The cdc_monitor modules ``path`` imports, at its top or inside a function (both run: a lazy
    import is an import), typing-only ones too with ``typing_too``. ``from a.b import c`` is ``a.b.c``
    where that is a module, else ``a.b``."""
    tree = ast.parse(path.read_text())
    skipped = set() if typing_too else _typing_only(tree)
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cdc_monitor"):
            out |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULE_FILES else str(node.module)
                    for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("cdc_monitor")}
    return out - {_module(path)}


def _circles(modules: set[str], typing_too: bool = False) -> list[list[str]]:
    """The import circles among ``modules`` (each a strongly connected set of two or more)."""
    edges = {m: _imports(MODULE_FILES[m], typing_too) & modules for m in modules}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for n in edges[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    reached = {m: reach(m) for m in modules}
    return sorted({tuple(sorted(n for n in modules if n in reached[m] and m in reached[n]))
                   for m in modules if m in reached[m]})


def test_the_packages_import_each_other_without_circles():
    """checks/ never reaches into engine/ (it gets a CheckContext), sinks/ into the verbs or watch/
    (each outcome says its metrics_kind): every package's imports point one way."""
    edges: dict[str, set[str]] = {}
    for name, path in MODULE_FILES.items():
        package = name.split(".")[1] if "." in name else name
        edges.setdefault(package, set()).update(m.split(".")[1] for m in _imports(path) if m.count(".") >= 1)
        edges[package].discard(package)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and (seen.add(n) or reaches(n, goal, seen))) for n in edges.get(start, ()))

    circles = sorted(p for p in edges if reaches(p, p, set()))
    assert circles == []
    assert "engine" not in edges["checks"] and "checks" in edges["engine"]


# where a session starts (runtime/session.py): the only module that asks a session what it is
SESSION_MODULE = "cdc_monitor.runtime.session"
# the runtime modules, lowest first: each imports only those before it; the others (progress,
# failures) import from these and never from each other
RUNTIME_LAYERS = ("cdc_monitor.runtime.settings", "cdc_monitor.runtime.jvm", "cdc_monitor.runtime.connect",
                  SESSION_MODULE)
# what a scan calls from pipeline.run_scan down: handed the session's capabilities and the progress
# line, it never imports runtime/ to run (an annotation naming SessionCaps aside)
SCAN_PACKAGES = ("engine", "checks", "history", "decoding", "sources", "avro")


def test_only_the_session_module_asks_what_a_session_is():
    """``is_connect`` is asked where the session is made (``capabilities``), nowhere else: every other
    module reads the ``SessionCaps`` it is handed."""
    asking = []
    for name, path in MODULE_FILES.items():
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        if "is_connect" in names and name != SESSION_MODULE:
            asking.append(name)
    assert asking == []


def test_the_runtime_modules_import_one_way():
    """settings <- jvm <- connect <- session <- the rest (progress, failures), lazy and typing-only
    imports counted: no circle, and each module below the ones that import it."""
    runtime = {m for m in MODULE_FILES if m.startswith("cdc_monitor.runtime.")}
    assert set(RUNTIME_LAYERS) <= runtime
    rank = {m: RUNTIME_LAYERS.index(m) if m in RUNTIME_LAYERS else len(RUNTIME_LAYERS) for m in runtime}
    upward = sorted((m, n) for m in runtime for n in _imports(MODULE_FILES[m], typing_too=True) & runtime
                    if rank[n] >= rank[m])
    assert upward == []
    assert _circles(runtime, typing_too=True) == []


def test_the_checks_import_each_other_without_circles():
    """checks/passes.py reads checks/sql.py, never the other way (sql.py calls a pass through the
    ``RelationPass`` it declares): no circle among the checks, lazy and typing-only imports counted."""
    checks = {m for m in MODULE_FILES if m.startswith("cdc_monitor.checks.")}
    assert "cdc_monitor.checks.sql" in _imports(MODULE_FILES["cdc_monitor.checks.passes"])
    assert _circles(checks, typing_too=True) == []


def test_a_scans_path_does_not_come_back_up_into_runtime():
    """engine/, checks/, history/, decoding/, sources/, avro/ are handed what they need of the
    session (``SessionCaps``) and the progress line: none imports runtime/ to run, lazily or not."""
    up = sorted((name, m) for name, path in MODULE_FILES.items() if name.split(".")[1:2] and name.split(".")[1] in SCAN_PACKAGES
                for m in _imports(path) if m.startswith("cdc_monitor.runtime"))
    assert up == []


def test_no_module_imports_itself_back():
    """No import circle among the package's modules, lazy and typing-only imports counted: in each pair
    one module owns the shared piece (sources/kafka/reader.py the Arrow schema gaps.py's rows take,
    sinks/prometheus.py what a metrics snapshot reads of watch's progress). generator/'s fault
    planners and its traffic call each other by design (a test tool, not the monitor)."""
    modules = {m for m in MODULE_FILES if not m.startswith("cdc_monitor.generator.")}
    assert len(modules) > 100
    assert _circles(modules, typing_too=True) == []
