"""Generated records and their bookkeeping: what the generator emits, and how it is serialized."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from cdc_monitor.generator.flavours import Flavour, TableDef

STANDALONE_EV = 19  # event index for records between transactions: past any transaction's own events


@dataclass
class Rec:
    topic: str
    key: Any
    value: Any  # dict payload, None for a tombstone, str for raw (garbage) text
    ts: int
    headers: list[tuple[str, str]] | None = None
    key_schema: dict[str, Any] | None = None
    value_schema: dict[str, Any] | None = None
    partition: int | None = None
    offset: int = -1
    # bookkeeping
    table: str | None = None
    pk: int | None = None
    txn_id: str | None = None
    raw_key: str | None = None  # serialized key, fixed once computed
    raw_value: str | None = None
    documents: bool = False  # MongoDB: before/after are written as JSON text
    wire_fault: str | None = None  # Avro traffic: how the serialized value is damaged (generator/avro_traffic.py)


@dataclass
class Label:
    rule: str
    rec: Rec
    txn_id: str | None = None


@dataclass
class KeyState:
    table: TableDef
    pk: int
    live: bool = True
    last: Rec | None = None
    last_coords: tuple[int, int] = (0, 0)  # (txn_no, seq) of the last event
    row: dict[str, Any] | None = None  # the row as the database has it (faults never touch it)


class KeyPool:
    """A set with O(1) add, discard and deterministic random choice (large generations stay linear)."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.pos: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, x: int) -> bool:
        return x in self.pos

    def add(self, x: int) -> None:
        if x not in self.pos:
            self.pos[x] = len(self.items)
            self.items.append(x)

    def discard(self, x: int) -> None:
        i = self.pos.pop(x, None)
        if i is None:
            return
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self.pos[last] = i

    def choice(self, rng: random.Random) -> int:
        return self.items[rng.randrange(len(self.items))]


@dataclass
class Traffic:
    flavour: Flavour
    records: list[Rec] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    partitions: int = 3
    schemas: bool = True
    value_format: str = "json"  # json, avro (wire format, to Kafka), avro-json (captures)


def set_times(value: dict[str, Any], ts_ms: int) -> None:
    """``ts_ms`` of an envelope or a source block, and its ``ts_us``/``ts_ns`` (Debezium 3.x) with it."""
    value["ts_ms"] = ts_ms
    if "ts_us" in value:
        value["ts_us"], value["ts_ns"] = ts_ms * 1000, ts_ms * 1_000_000


def drop_fine_times(value: dict[str, Any]) -> None:
    """A damaged ``ts_ms`` (another unit) stands alone: its ``ts_us``/``ts_ns`` (if any) are null."""
    if "ts_us" in value:
        value["ts_us"] = value["ts_ns"] = None


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def serialize_key(rec: Rec, schemas: bool) -> str | None:
    if rec.raw_key is None and rec.key is not None:
        rec.raw_key = _dumps({"schema": rec.key_schema, "payload": rec.key} if schemas and rec.key_schema else rec.key)
    return rec.raw_key


def as_documents(value: dict[str, Any]) -> dict[str, Any]:
    """A MongoDB change event as the connector writes it: the row images as JSON text."""
    return {k: (json.dumps(v) if k in ("before", "after") and isinstance(v, dict) else v) for k, v in value.items()}


def serialize(rec: Rec, schemas: bool) -> tuple[str | None, str | None]:
    """Key and value text; the value is fixed at first call, so call it only once faults are applied."""
    serialize_key(rec, schemas)
    if rec.raw_value is None and rec.value is not None:
        if isinstance(rec.value, str):
            rec.raw_value = rec.value
        else:
            value = as_documents(rec.value) if rec.documents else rec.value
            rec.raw_value = _dumps({"schema": rec.value_schema, "payload": value} if schemas and rec.value_schema else value)
    return rec.raw_key, rec.raw_value
