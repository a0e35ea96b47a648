"""Runs every check over the cached events frame and gathers their small aggregates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.config import ScanConfig


@dataclass
class CheckedResult:
    findings: list[DataFrame] = field(default_factory=list)
    lag: list[dict[str, Any]] = field(default_factory=list)
    transactions: dict[str, Any] = field(default_factory=dict)
    schemas: list[dict[str, Any]] = field(default_factory=list)


def run_checks(events: DataFrame, partitions: DataFrame, config: ScanConfig) -> CheckedResult:
    return CheckedResult()
