"""What a reconciliation found, as reports and metrics read it (Spark-free)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cdc_monitor import __version__
from cdc_monitor.reconcile.canonical import UNAVAILABLE
from cdc_monitor.vocabulary import MISMATCH_STATES, ReconcileState


@dataclass
class TableReconcile:
    table: str
    source_rows: int
    topic_rows: int
    rows: dict[ReconcileState, int]  # every state, 0 when none
    columns_differing: dict[str, int]  # column -> rows whose value differs
    unavailable_values: int  # toasted values the topic could not carry (not compared)
    source_checksum: str
    topic_checksum: str
    samples: dict[ReconcileState, list[dict[str, Any]]]
    key_columns: tuple[str, ...] = ()
    source_partitions: int = 1
    topics: tuple[str, ...] = ()  # the topics the window read its events from

    @property
    def mismatches(self) -> int:
        return sum(self.rows[s] for s in MISMATCH_STATES)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "table": self.table, "key_columns": list(self.key_columns),
            "source_rows": self.source_rows, "topic_rows": self.topic_rows,
            **{s.value: self.rows[s] for s in ReconcileState},
            "columns_differing": self.columns_differing, "unavailable_values": self.unavailable_values,
            "checksums": {"source": self.source_checksum, "topic": self.topic_checksum,
                          "equal": self.source_checksum == self.topic_checksum},
            "samples": {s.value: v for s, v in self.samples.items() if v},
        }


@dataclass
class ReconcileOutcome:
    metrics_kind: ClassVar[str] = "reconcile"  # (MetricsSnapshot.from_outcome)
    tables: list[TableReconcile]
    skipped: list[dict[str, str]] = field(default_factory=list)  # table, reason
    source: dict[str, Any] = field(default_factory=dict)  # url (no parameters), dialect, positions
    inputs: dict[str, Any] = field(default_factory=dict)
    records: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    finished_at: float = 0.0
    duration_seconds: float = 0.0

    @property
    def mismatches(self) -> int:
        return sum(t.mismatches for t in self.tables)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "tool": "cdc-monitor", "version": __version__,
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.finished_at)),
            "inputs": self.inputs, "source": self.source, "records": self.records,
            "reconcile": [t.to_json_dict() for t in self.tables],
            "skipped": self.skipped, "mismatches": self.mismatches, "timings_seconds": self.timings,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2, default=str) + "\n"


def shown(value: str | None) -> str | None:
    """A canonical value as reports show it (the toasted marker named, not its bytes)."""
    return "(unavailable: toasted)" if value == UNAVAILABLE else value


def key_object(key_json: str, columns: tuple[str, ...]) -> dict[str, Any]:
    """A canonical key (a JSON array in key-column order) as {column: value}."""
    try:
        values = json.loads(key_json)
    except (TypeError, ValueError):
        return {"key": key_json}
    return dict(zip(columns, values, strict=False)) if isinstance(values, list) else {"key": key_json}
