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
