"""The snapshot faults (mixed into generator/faults.FaultPlan): a table snapshotted again after its
changes were streaming, as a connector that lost its offsets does (one re-read row is enough to
tell; each repeat takes another table, since the rule is said once per table); a streamed update
flagged as a snapshot event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.snapshots import SNAPSHOT_OP_MISMATCH, SNAPSHOT_RESTARTED
from cdc_monitor.generator.flavours import TABLES
from cdc_monitor.generator.records import STANDALONE_EV

if TYPE_CHECKING:
    from cdc_monitor.generator.flavours import TableDef
    from cdc_monitor.generator.traffic import Generator


class SnapshotFaults:
    g: Generator

    def live(self, table: TableDef, streamed: bool = False) -> list[int]: ...  # FaultPlan's
    def reserve(self, table: str, pk: int) -> None: ...
    def label(self, rule: str, rec: Any, txn_id: str | None = None) -> None: ...
    def variant(self, rule: str, advance: bool = False) -> int: ...

    def _snapshot_restarted(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        table = TABLES[self.variant(SNAPSHOT_RESTARTED.name) % len(TABLES)]
        keys = self.live(table, streamed=True)
        if not keys:
            return False  # try again later, once the table has streamed
        self.variant(SNAPSHOT_RESTARTED.name, advance=True)
        g = self.g
        pk = g.rng.choice(keys)
        self.reserve(table.name, pk)
        rec = g.change(table, pk, "r", None, g.keys[(table.name, pk)].row, txn=None, txn_no=txn_no, ev=STANDALONE_EV,
                       commit_seq=g.seq, snapshot="true")
        self.label(SNAPSHOT_RESTARTED.name, rec)
        return True

    def _snapshot_op_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        src = rec.value["source"]
        src["snapshot"] = True if isinstance(src.get("snapshot"), bool) else "true"  # dtle writes a boolean
        self.label(SNAPSHOT_OP_MISMATCH.name, rec)
