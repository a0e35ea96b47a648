"""Ordering faults (mixed into generator/faults.FaultPlan): a key's record out of place. Emitted
between transactions, without a transaction block: an update from an older source position, the
same record twice, a change event replayed after a restart, an update of a key never created or
already deleted, a tombstone without a delete, a key's update in another partition."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.ordering import (
    DUPLICATE,
    EVENT_AFTER_DELETE,
    KEY_IN_MULTIPLE_PARTITIONS,
    MISSING_CREATE,
    POSITION_REGRESSION,
    REPLAYED_AFTER_RESTART,
    TOMBSTONE_WITHOUT_DELETE,
)
from cdc_monitor.generator.flavours import TABLES
from cdc_monitor.generator.records import STANDALONE_EV, Rec, set_times

if TYPE_CHECKING:
    from cdc_monitor.generator.flavours import TableDef
    from cdc_monitor.generator.traffic import Generator


class OrderingFaults:
    g: Generator

    def pick_live(self, streamed: bool = False) -> tuple[TableDef, int] | None: ...  # FaultPlan's
    def reserve(self, table: str, pk: int) -> None: ...
    def new_pk(self, table: TableDef) -> int: ...
    def label(self, rule: str, rec: Rec, txn_id: str | None = None) -> None: ...

    def _update(self, txn_no: int, table: TableDef, pk: int, ev: int = STANDALONE_EV, **kw: Any) -> Rec:
        g = self.g
        state = g.keys[(table.name, pk)]
        before = state.row if g.f.before_on_update else None
        return g.change(table, pk, "u", before, g.row(table, pk, 99), txn=None, txn_no=txn_no, ev=ev,
                        commit_seq=g.seq, **kw)

    def _position_regression(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        picked = self.pick_live(streamed=True)
        if picked is None:
            return False
        table, pk = picked
        if self.g.f.documents and self.g.keys[(table.name, pk)].last_coords[0] < txn_no - 8:
            return False  # MongoDB: the replayed event has its old oplog time; a recent one keeps its lag small
        last_txn, last_seq = self.g.keys[(table.name, pk)].last_coords
        self.reserve(table.name, pk)
        rec = self._update(txn_no, table, pk, coords=(last_txn - 1, last_seq - 1, last_seq - 1), ev=0)
        self.label(POSITION_REGRESSION.name, rec)
        return True

    def _duplicate(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        picked = self.pick_live(streamed=True)
        if picked is None:
            return False
        table, pk = picked
        self.reserve(table.name, pk)
        orig = self.g.keys[(table.name, pk)].last
        dup = copy.copy(orig)
        dup.ts = self.g.proc_ts
        self.g.proc_ts += 1
        self.label(DUPLICATE.name, self.g.emit(dup, orig.partition))
        return True

    def _replayed_after_restart(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        """A change event sent again after a connector restart: the same event, processed again (a
        new ``ts_ms``, 1 ms after the first: its lag stays that of the first), later in the partition."""
        picked = self.pick_live(streamed=True)
        if picked is None:
            return False
        table, pk = picked
        orig = self.g.keys[(table.name, pk)].last
        if not isinstance(orig.value, dict) or not isinstance(orig.value.get("ts_ms"), int):
            return False
        self.reserve(table.name, pk)
        replay = copy.copy(orig)
        replay.value = dict(orig.value)
        set_times(replay.value, orig.value["ts_ms"] + 1)
        replay.raw_value = None
        replay.ts = self.g.proc_ts
        self.g.proc_ts += 1
        self.label(REPLAYED_AFTER_RESTART.name, self.g.emit(replay, orig.partition))
        return True

    def _missing_create(self, txn_no: int, hooks: dict[str, Any]) -> None:
        g = self.g
        table = g.rng.choice(TABLES)
        pk = self.new_pk(table)
        rec = g.change(table, pk, "u", None, g.row(table, pk, 1), txn=None, txn_no=txn_no, ev=STANDALONE_EV, commit_seq=g.seq)
        self.label(MISSING_CREATE.name, rec)

    def _event_after_delete(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        g = self.g
        dead = [(t, pk) for (t, pk), s in g.keys.items() if not s.live and (t, pk) not in self.reserved
                and s.last is not None and isinstance(s.last.value, dict) and s.last.value.get("op") == "d"]
        if not dead:
            return False
        tname, pk = g.rng.choice(sorted(dead))
        table = next(t for t in TABLES if t.name == tname)
        self.reserve(tname, pk)
        rec = g.change(table, pk, "u", None, g.row(table, pk, 7), txn=None, txn_no=txn_no, ev=STANDALONE_EV, commit_seq=g.seq)
        g.keys[(tname, pk)].live = False
        self.label(EVENT_AFTER_DELETE.name, rec)
        return True

    def _tombstone_without_delete(self, txn_no: int, hooks: dict[str, Any]) -> None:
        table = self.g.rng.choice(TABLES)
        self.label(TOMBSTONE_WITHOUT_DELETE.name, self.g.tombstone(table, self.new_pk(table)))

    def _key_in_multiple_partitions(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        picked = self.pick_live(streamed=True)
        if picked is None:
            return False
        table, pk = picked
        self.reserve(table.name, pk)
        wrong = (self.g.home_partition(table, pk) + 1) % self.g.partitions
        rec = self._update(txn_no, table, pk, partition=wrong)
        self.label(KEY_IN_MULTIPLE_PARTITIONS.name, rec)
        return True
