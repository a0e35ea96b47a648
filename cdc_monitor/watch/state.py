"""What the ``watch`` driver keeps between micro-batches: counters and small facts, saved atomically.

Per-key histories, open transactions' records and orphan candidates live in Spark's state store
(``watch/carry.py``), checkpointed by Spark with the offsets. The driver keeps running totals,
per-partition history, the newest heartbeat per server, the open transactions' first-seen
times and, with ``--history``, the intervals not yet written (watch/history.py) in
``cdc-state/state.json`` (replaced atomically after each batch). A batch id at or below
the saved one was already applied (Spark re-runs a batch it did not commit) and is skipped:
counters never count a record twice.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cdc_monitor.errors import InputError
from cdc_monitor.watch.history import WatchHistory


@dataclass
class PartitionHistory:
    first_ts: int  # record time of the first record the stream read here
    first_offset: int
    first_batch: int
    evicted: bool = False  # some key's history was dropped: first-record rules no longer judged
    next_offset: int | None = None  # after the newest record read here (None: a state an earlier watch wrote)


@dataclass
class WatchState:
    batch_id: int = -1
    partitions: dict[str, PartitionHistory] = field(default_factory=dict)  # "topic|partition"
    totals: dict[str, dict[str, int]] = field(default_factory=lambda: {"events": {}, "transactions": {}, "findings": {}})
    open_txns: dict[str, float] = field(default_factory=dict)  # "server|txn_id" -> wall time first seen open
    heartbeats: dict[str, int] = field(default_factory=dict)  # server -> newest heartbeat ts_ms seen
    txn_span: dict[str, list[int]] = field(default_factory=dict)  # server -> record times its transaction topic covered
    history: WatchHistory = field(default_factory=WatchHistory)  # watch --history: the intervals not yet over

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["partitions"] = {k: asdict(v) for k, v in self.partitions.items()}
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WatchState:
        state = cls(**{k: v for k, v in data.items() if k not in ("partitions", "history")})
        state.partitions = {k: PartitionHistory(**v) for k, v in data.get("partitions", {}).items()}
        state.history = WatchHistory(**data.get("history", {}))
        return state


def add(totals: dict[str, int], key: tuple[Any, ...], n: int) -> None:
    k = "|".join("" if x is None else str(x) for x in key)
    totals[k] = totals.get(k, 0) + int(n)


# The shape of the streaming query's state (its stateful operators, their keys and state schemas):
# Spark cannot resume a checkpoint written by a query of another shape, nor this operator a state of
# another format. 5: one JVM operator carries every group as narrow facts in compact bytes, a key's
# older records thin (watch/carry.py; Carry.VERSION 3); 4: the same, every record's facts whole, in the
# earlier bytes (Carry.VERSION 2); 3: the same operator holding whole Kafka records (Carry.VERSION 1);
# 2: the JVM key-history operator chained with a Python server/table operator; 1: one Python operator
# for every group.
LAYOUT = 5
EARLIER = {
    "1": "its state in one Python operator",
    "2": "transactions and lag tails carried by a Python operator",
    "3": "whole Kafka records carried as its state",
    "4": "its state's facts in an earlier format",
}


class StateStore:
    def __init__(self, root: str | Path) -> None:
        self.check(Path(root))
        self.root = Path(root) / "cdc-state"
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "state.json"
        layout = self.root / "layout"
        if not layout.exists():
            layout.write_text(f"{LAYOUT}\n")

    def bind_reader(self, reader: str) -> None:
        """Record which Kafka reader writes this checkpoint (the readers' offsets differ)."""
        (self.root / "reader").write_text(f"{reader}\n")

    @staticmethod
    def check(root: Path, reader: str | None = None) -> None:
        """Refuse a checkpoint an earlier, incompatible watch wrote, or another Kafka reader (before Spark starts)."""
        state = root / "cdc-state"
        written_by = state / "reader"
        if reader is not None and written_by.exists() and written_by.read_text().strip() != reader:
            raise InputError(f"the checkpoint {root} was written with --kafka-reader {written_by.read_text().strip()} "
                             "(its offsets are that reader's): use that reader, or start with a new --checkpoint folder")
        if (state / "CURRENT").exists():
            raise InputError(f"the checkpoint {root} was written by an earlier cdc-monitor watch (state beside the "
                             "checkpoint, not in Spark's state store): start with a new --checkpoint folder")
        layout = state / "layout"
        written = layout.read_text().strip() if layout.exists() else ("1" if (state / "state.json").exists() else None)
        if written is None and any((root / "spark" / "commits").glob("[0-9]*")):
            written = "unknown"  # Spark's checkpoint without cdc-monitor's record of its shape
        if written is not None and written != str(LAYOUT):
            what = EARLIER.get(written, "another shape of stateful operators")
            raise InputError(f"this checkpoint ({root}) was written by an earlier cdc-monitor watch ({what}; Spark "
                             "cannot resume it with this version's operator): start watch with a new --checkpoint "
                             "folder (it reads from --starting-offsets), or run the earlier cdc-monitor on this one")

    def load(self) -> WatchState:
        if not self.path.exists():
            return WatchState()
        return WatchState.from_json(json.loads(self.path.read_text()))

    def save(self, state: WatchState) -> None:
        tmp = self.root / f"state.json.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(state.to_json()))
        tmp.replace(self.path)
