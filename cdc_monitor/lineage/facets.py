"""cdc-monitor's own facets, for what OpenLineage's standard facets do not carry: the window a run
read (offsets per partition), its verdict, the reports it wrote, a reconciliation's counts. Each
is named ``cdcMonitor_<name>`` (the spec's prefix rule for custom facets) and its ``_schemaURL``
points into ``facets.json`` beside this module, which tests/test_openlineage.py validates them
against."""

from __future__ import annotations

from typing import Any

import attr
from openlineage.client.facet_v2 import InputDatasetFacet, RunFacet

from cdc_monitor import __version__

# the project's home, as deploy/ci/cdc-gate.yml names it
PROJECT_URL = "https://github.com/your-org/cdc-monitor"
PRODUCER = f"{PROJECT_URL}/tree/v{__version__}"
SCHEMA_URL = f"{PROJECT_URL}/blob/main/cdc_monitor/lineage/facets.json"

WINDOW = "cdcMonitor_window"
VERDICT = "cdcMonitor_verdict"
REPORTS = "cdcMonitor_reports"
RECONCILE = "cdcMonitor_reconcile"


@attr.define
class WindowRunFacet(RunFacet):
    """What the run read: the input's kind, its records' first and last record times (ISO-8601),
    and per partition the first and last offsets read."""

    input: str  # capture or kafka
    records: int | None = None
    startTime: str | None = None
    endTime: str | None = None
    partitions: list[dict[str, Any]] | None = None  # topic, partition, firstOffset, lastOffset, records

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/WindowRunFacet"


@attr.define
class VerdictRunFacet(RunFacet):
    """The verb, its exit code and the verdict it printed; ``failOn`` where findings decide it."""

    verb: str
    exitCode: int
    verdict: str
    failOn: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/VerdictRunFacet"


@attr.define
class ReportsRunFacet(RunFacet):
    """What the run wrote for people to open: kind (html, json, text, junit, data_docs) and a URL."""

    reports: list[dict[str, str]]

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/ReportsRunFacet"


@attr.define
class ReconcileInputDatasetFacet(InputDatasetFacet):
    """A source table compared with its topics: rows per reconciliation state (match, missing,
    extra, differs, in_flight), rows each column differs in, and whether the checksums agree."""

    table: str
    sourceRows: int
    topicRows: int
    rows: dict[str, int]
    columnsDiffering: dict[str, int]
    unavailableValues: int
    checksumsEqual: bool
    topics: list[str] | None = None

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/ReconcileInputDatasetFacet"
