"""The OpenLineage flags shared by scan, gate and reconcile, parsed into the run's lineage
(cdc_monitor/lineage/run.py), or a stand-in that does nothing when no target is asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from cdc_monitor.config import ScanConfig

if TYPE_CHECKING:
    from cdc_monitor.lineage.run import LineageRun

_FLAGS = [
    click.option("--openlineage", "openlineage", metavar="URL|file:PATH|console",
                 help="Emit the run as OpenLineage events (START, then COMPLETE or FAIL) with each topic's "
                 "data-quality results: to an HTTP endpoint (e.g. Marquez, http://HOST:5000), a JSON Lines file, or "
                 "stderr (default: [openlineage] url, else the client's OPENLINEAGE_URL). See docs/openlineage.md."),
    click.option("--openlineage-required", "openlineage_required", is_flag=True,
                 help="Exit 2 when the OpenLineage events cannot be delivered (default: one warning line)."),
]


def lineage_flags(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_FLAGS):
        func = option(func)
    return func


class NoLineage:
    """No OpenLineage target: the run's lineage hooks do nothing."""

    @contextmanager
    def failing(self) -> Iterator[NoLineage]:
        yield self

    def complete(self, outcome: Any, **reports: str | None) -> None:
        pass

    def metrics(self) -> Mapping[str, int] | None:
        return None

    def require(self, verdict: str) -> None:
        pass


def open_lineage(kwargs: dict[str, Any], cfg: ScanConfig, config_file: str | None, verb: str) -> LineageRun | NoLineage:
    """The run's lineage from the flags (popped from ``kwargs``), the config file's ``[openlineage]``
    and the client's environment; checked before Spark starts (a bad target, an unwritable file, a
    missing package: exit 2)."""
    from cdc_monitor.cli.output import prepare_output_path
    from cdc_monitor.lineage.settings import lineage_settings

    settings = lineage_settings(cfg.openlineage, kwargs.pop("openlineage"), kwargs.pop("openlineage_required"),
                                origin=config_file or "the config file")
    if settings is None:
        return NoLineage()
    prepare_output_path(settings.file_path, "--openlineage")
    from cdc_monitor.lineage.run import LineageRun

    return LineageRun(settings, verb, warn=lambda line: click.echo(line, err=True))
