"""What ``watch`` carries from one micro-batch to the next, saved atomically in the checkpoint.

Small facts live in ``meta.json`` (running totals, per-partition history, open transactions'
first-seen times, coordinates of records awaiting a verdict); the records needed as context
live in ``carry.parquet`` (raw Kafka rows). Each batch writes a new version and then swaps the
``CURRENT`` pointer, so a crash leaves either the old or the new state, never a mix. A batch id
at or below the saved one was already applied (Spark re-runs a batch it did not commit) and is
skipped: counters never count a record twice.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

Coord = tuple[str, int, int]  # topic, partition, offset


@dataclass
class PartitionHistory:
    first_ts: int  # record time of the first record the stream read here
    first_offset: int
    first_batch: int
    evicted: bool = False  # some key's history was dropped: first-record rules no longer judged


@dataclass
class WatchState:
    batch_id: int = -1
    partitions: dict[str, PartitionHistory] = field(default_factory=dict)  # "topic|partition"
    totals: dict[str, dict[str, int]] = field(default_factory=lambda: {"events": {}, "transactions": {}, "findings": {}})
    open_txns: dict[str, float] = field(default_factory=dict)  # "server|txn_id" -> wall time first seen open
    final_txns: list[str] = field(default_factory=list)  # "server|txn_id" of recently finalized transactions, oldest first
    awaiting: list[list[Any]] = field(default_factory=list)  # [topic, partition, offset, wall time first seen]
    lag_tail: list[list[Any]] = field(default_factory=list)  # [topic, partition, offset]
    carry_path: str | None = None  # parquet of the carried raw records, None when nothing is carried
    heartbeats: dict[str, int] = field(default_factory=dict)  # server -> newest heartbeat ts_ms seen

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["partitions"] = {k: asdict(v) for k, v in self.partitions.items()}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WatchState:
        state = cls(**{k: v for k, v in data.items() if k != "partitions"})
        state.partitions = {k: PartitionHistory(**v) for k, v in data.get("partitions", {}).items()}
        return state


def add(totals: dict[str, int], key: tuple[Any, ...], n: int) -> None:
    k = "|".join("" if x is None else str(x) for x in key)
    totals[k] = totals.get(k, 0) + int(n)


class StateStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root) / "cdc-state"
        self.root.mkdir(parents=True, exist_ok=True)

    def load(self) -> WatchState:
        pointer = self.root / "CURRENT"
        if not pointer.exists():
            return WatchState()
        version = self.root / pointer.read_text().strip()
        return WatchState.from_json(json.loads((version / "meta.json").read_text()))

    def version_dir(self, batch_id: int) -> Path:
        path = self.root / f"batch-{batch_id}.tmp-{os.getpid()}-{int(time.time() * 1000)}"
        path.mkdir(parents=True)
        return path

    def commit(self, state: WatchState, staged: Path) -> None:
        """Write meta into ``staged`` (which may already hold carry.parquet), then swap CURRENT."""
        final = self.root / f"batch-{state.batch_id}"
        if final.exists():
            shutil.rmtree(final)
        if state.carry_path is not None:
            state.carry_path = str(final / "carry.parquet")
        (staged / "meta.json").write_text(json.dumps(state.to_json()))
        staged.rename(final)
        tmp = self.root / "CURRENT.tmp"
        tmp.write_text(final.name)
        tmp.replace(self.root / "CURRENT")
        for old in self.root.iterdir():  # keep the current version and the one before it
            if old.is_dir() and old.name.startswith("batch-") and old != final:
                try:
                    n = int(old.name.split("-")[1].split(".")[0])
                except ValueError:
                    continue
                if n < state.batch_id - 1 or ".tmp-" in old.name:
                    shutil.rmtree(old, ignore_errors=True)
