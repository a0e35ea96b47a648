"""Fault injection: every rule of the catalogue that a flavour can exhibit, each a few times.

Faults are spread over the timeline, one per few transactions, so they never touch each other.
Each leaves exactly one labelled record: the ground truth the checks are measured against.
Faults that need a record of their own (orphans, replays, regressions) are emitted between
transactions without a transaction block, so they disturb no transaction count.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.decode import INVALID_JSON
from cdc_monitor.checks.lag import INVALID_EVENT_TS, INVALID_SOURCE_TS, LAG_SPIKE, NEGATIVE_LAG
from cdc_monitor.checks.schema import (
    BEFORE_AFTER_MISMATCH,
    INVALID_AVRO_NAME,
    INVALID_OP,
    KEY_PAYLOAD_MISMATCH,
    KEY_SCHEMA_NAME_MISMATCH,
    MISSING_SOURCE_FIELD,
    NON_OPTIONAL_NULL,
    OP_MISSING,
    TYPE_MISMATCH,
)
from cdc_monitor.checks.snapshots import SNAPSHOT_OP_MISMATCH
from cdc_monitor.checks.source_block import INVALID_POSITION
from cdc_monitor.checks.transactions import (
    COLLECTION_COUNT_MISMATCH,
    COUNT_MISMATCH,
    END_BEFORE_BEGIN,
    MISSING_BEGIN,
    MISSING_END,
    ORDER_GAP,
    ORPHAN_EVENT,
)
from cdc_monitor.generator.connect_schemas import envelope_schema, key_schema
from cdc_monitor.generator.fault_rules import applicable_rules
from cdc_monitor.generator.flavours import TABLES, TableDef
from cdc_monitor.generator.lag_faults import LagFaults
from cdc_monitor.generator.ordering_faults import OrderingFaults
from cdc_monitor.generator.records import STANDALONE_EV, Label, Rec, drop_fine_times, serialize
from cdc_monitor.generator.snapshot_faults import SnapshotFaults
from cdc_monitor.generator.wire_faults import WireFaults

if TYPE_CHECKING:
    from cdc_monitor.generator.traffic import Generator

SPACING = 4


class FaultPlan(LagFaults, WireFaults, SnapshotFaults, OrderingFaults):
    def __init__(self, gen: Generator, repeats: int, only: frozenset[str] | None = None):
        """``only``: inject just these rules (those that apply to the flavour and settings)."""
        self.g = gen
        self.queue = [r for r in applicable_rules(gen.f.name, gen.schemas, gen.tombstones, gen.partitions, gen.value_format,
                                                     gen.tx_metadata)
                      if only is None or r in only for _ in range(repeats)]
        gen.rng.shuffle(self.queue)
        self.reserved: set[tuple[str, int]] = set()
        self.next_at = 6
        self.current: str | None = None
        self.drop_end_next = False
        self.special_pk = 900_000
        self.txn_no = 0
        self.spiked_ms: dict[str, int] = {}  # table -> its last MongoDB lag spike's ts_ms (lag_faults.py)
        self.variants: dict[str, int] = {}  # rule -> how many of it were placed (each repeat a variant)

    def variant(self, rule: str, advance: bool = False) -> int:
        n = self.variants.get(rule, 0)
        if advance:
            self.variants[rule] = n + 1
        return n

    @property
    def done(self) -> bool:
        # a few clean transactions after the last fault, so none of them is the open newest one
        return not self.queue and self.current is None and not self.drop_end_next and self.txn_no >= self.next_at

    # -- helpers -----------------------------------------------------------------------------
    def label(self, rule: str, rec: Rec, txn_id: str | None = None) -> None:
        """Record the fault; its key takes part in no later fault (one fault, one finding)."""
        self.g.out.labels.append(Label(rule, rec, txn_id if txn_id is not None else rec.txn_id))
        if rec.table is not None and rec.pk is not None:
            self.reserve(rec.table, rec.pk)

    def reserve(self, table: str, pk: int) -> None:
        self.reserved.add((table, pk))
        self.g.reserve(table, pk)

    def new_pk(self, table: TableDef) -> int:
        self.special_pk += 1
        self.reserve(table.name, self.special_pk)
        return self.special_pk

    def live(self, table: TableDef, streamed: bool = False) -> list[int]:
        out = []
        for (t, pk), s in self.g.keys.items():
            if t != table.name or not s.live or (t, pk) in self.reserved:
                continue
            if streamed and (s.last is None or s.last_coords[0] < 2 or not isinstance(s.last.value, dict)):
                continue
            out.append(pk)
        return sorted(out)

    def pick_live(self, streamed: bool = False) -> tuple[TableDef, int] | None:
        for table in self.g.rng.sample(TABLES, len(TABLES)):
            keys = self.live(table, streamed)
            if len(keys) >= 2:
                return table, self.g.rng.choice(keys)
        return None

    def col(self, table: TableDef, key: bool) -> str:
        return self.g.column(next(c for c in table.columns if c.key == key))

    # -- hooks ---------------------------------------------------------------------------------
    def before_txn(self, txn_no: int, hooks: dict[str, Any]) -> None:
        self.txn_no = txn_no
        if self.drop_end_next:
            hooks["drop_previous_end"] = True
            self.drop_end_next = False
        if txn_no < self.next_at or not self.queue:
            return
        rule = self.queue.pop()
        self.current = rule
        self.next_at = txn_no + SPACING
        g = self.g
        table = g.rng.choice(TABLES)
        if rule == TYPE_MISMATCH.name and self.variant(rule) % 3:  # an integer beyond its width: int16, int32
            table = next(t for t in TABLES if t.name == ("products" if self.variant(rule) % 3 == 1 else "orders"))
        live = self.live(table)
        if rule == COLLECTION_COUNT_MISMATCH.name:
            hooks["ops"] = [("create", t, self._take_id(t)) for t in g.rng.sample(TABLES, 2)]
        elif rule == ORDER_GAP.name:
            hooks["ops"] = [("create", table, self._take_id(table)) for _ in range(3)]
        elif rule == LAG_SPIKE.name and len(live) >= 2:
            a, b = g.rng.sample(live, 2)
            hooks["ops"] = [("update", table, a), ("update", table, b)]
        elif rule in (BEFORE_AFTER_MISMATCH.name, KEY_SCHEMA_NAME_MISMATCH.name, INVALID_AVRO_NAME.name):
            pk = self._take_id(table)
            self.reserve(table.name, pk)
            hooks["ops"] = [("create", table, pk)]
        elif rule in (NEGATIVE_LAG.name, INVALID_SOURCE_TS.name, INVALID_EVENT_TS.name, TYPE_MISMATCH.name,
                      NON_OPTIONAL_NULL.name, OP_MISSING.name, INVALID_OP.name, MISSING_SOURCE_FIELD.name,
                      INVALID_POSITION.name, KEY_PAYLOAD_MISMATCH.name, LAG_SPIKE.name, SNAPSHOT_OP_MISMATCH.name):
            hooks["ops"] = [("update", table, g.rng.choice(live))] if live else [("create", table, self._take_id(table))]
        elif rule == MISSING_BEGIN.name:
            hooks["drop_begin"] = True

    def _take_id(self, table: TableDef) -> int:
        pk = self.g.next_id[table.name]
        self.g.next_id[table.name] += 1
        return pk

    def after_txn(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rule, self.current = self.current, None
        if rule is None:
            return
        handler = getattr(self, f"_{rule}")
        if handler(txn_no, hooks) is False:  # could not apply now: try again later
            self.queue.append(rule)

    def finish(self) -> None:
        if self.queue:
            raise RuntimeError(f"faults left unplaced: {self.queue}; generate more events")

    # -- transaction faults ----------------------------------------------------------------------
    def _missing_end(self, txn_no: int, hooks: dict[str, Any]) -> None:
        self.label(MISSING_END.name, hooks["begin_rec"])
        self.drop_end_next = True

    def _missing_begin(self, txn_no: int, hooks: dict[str, Any]) -> None:
        self.label(MISSING_BEGIN.name, hooks["end_rec"])

    def _count_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        hooks["end_rec"].value["event_count"] += 1
        self.label(COUNT_MISMATCH.name, hooks["end_rec"])

    def _collection_count_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        dcs = hooks["end_rec"].value["data_collections"]
        dcs[0]["event_count"] += 1
        dcs[1]["event_count"] -= 1
        self.label(COLLECTION_COUNT_MISMATCH.name, hooks["end_rec"])

    def _end_before_begin(self, txn_no: int, hooks: dict[str, Any]) -> None:
        hooks["end_rec"].value["ts_ms"] = hooks["begin_rec"].value["ts_ms"] - 1000
        self.label(END_BEFORE_BEGIN.name, hooks["end_rec"])

    def _order_gap(self, txn_no: int, hooks: dict[str, Any]) -> None:
        recs = hooks["data_recs"]
        for rec in recs[1:]:
            rec.value["transaction"]["total_order"] += 1
        self.label(ORDER_GAP.name, recs[1])

    def _orphan_event(self, txn_no: int, hooks: dict[str, Any]) -> None:
        g = self.g
        table = g.rng.choice(TABLES)
        pk = self._take_id(table)
        orphan_id = f"{9_000_000 + txn_no}:{g.f.lsn(g.seq)}" if g.f.name == "postgresql" else f"orphan-{txn_no}"
        txn = {"id": orphan_id, "total_order": 1, "data_collection_order": 1}
        rec = g.change(table, pk, "c", None, g.row(table, pk, 0), txn=txn, txn_no=txn_no, ev=STANDALONE_EV, commit_seq=g.seq)
        self.label(ORPHAN_EVENT.name, rec)

    # -- schema faults ---------------------------------------------------------------------------
    def _row(self, rec: Rec, image: str = "after") -> dict[str, Any]:
        """The event's row image, copied so the key's true row (used by later events) stays intact."""
        rec.value[image] = copy.deepcopy(rec.value[image])
        return rec.value[image]

    def _type_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """Variants: a value of another JSON type; 70000 in an int16 column; 2147641030 in an int32 one."""
        rec = hooks["data_recs"][0]
        table = next(t for t in TABLES if t.name == rec.table)
        variant = self.variant(TYPE_MISMATCH.name, advance=True) % 3
        col, bad = table.columns[1], None
        if variant and table.name in ("products", "orders"):
            col = next(c for c in table.columns if c.name in ("quantity", "customer_id"))
            bad = 70_000 if col.type == "int16" else 2_147_641_030
        if bad is None:
            bad = 12345 if col.type == "string" else "not-a-number"
        self._row(rec)[self.g.f.ident(col.name)] = self.g.wrap(bad)
        self.label(TYPE_MISMATCH.name, rec)

    def _non_optional_null(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        if self.g.f.nullable_columns:
            rec.value["source"]["db"] = None
        else:
            table = next(t for t in TABLES if t.name == rec.table)
            self._row(rec)[self.col(table, key=False)] = None
        self.label(NON_OPTIONAL_NULL.name, rec)

    def _key_schema_name_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        table = next(t for t in TABLES if t.name == rec.table)
        other = next(t for t in TABLES if t.name != rec.table)
        rec.key_schema = key_schema(self.g.f, table, name=f"{self.g.f.topic(other.name)}.Key")
        rec.raw_key = None
        self.label(KEY_SCHEMA_NAME_MISMATCH.name, rec)

    def _invalid_avro_name(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        table = next(t for t in TABLES if t.name == rec.table)
        rec.value_schema = envelope_schema(self.g.f, table, name=f"{self.g.f.topic(table.name)}-v2.Envelope")
        self.label(INVALID_AVRO_NAME.name, rec)

    def _op_missing(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        del rec.value["op"]
        self.label(OP_MISSING.name, rec)

    def _invalid_op(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """Variants: an op no connector writes; ``m`` (a logical-decoding message op) on a row
        change; an op this connector never emits (truncate from dtle or SQL Server)."""
        rec = hooks["data_recs"][0]
        variant = self.variant(INVALID_OP.name, advance=True) % 3
        never = "t" if self.g.f.name in ("dtle", "sqlserver") else "x"
        rec.value["op"] = ("x", "m", never)[variant]
        self.label(INVALID_OP.name, rec)

    def _before_after_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        rec.value["before"] = copy.deepcopy(rec.value["after"])
        self.label(BEFORE_AFTER_MISMATCH.name, rec)

    def _missing_source_field(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """A required source field dropped: with schemas the position field; without, the source time (ts_ms,
        dtle's ts_sec): a Debezium record that lost its time is also invalid_source_ts's, never another
        producer's (it still names its connector or version)."""
        rec = hooks["data_recs"][0]
        src = rec.value["source"]
        if self.g.schemas:
            del src[self.g.f.position_field]
        else:
            del src["ts_sec" if "ts_sec" in src else "ts_ms"]
            drop_fine_times(src)
            self.label(INVALID_SOURCE_TS.name, rec)
        self.label(MISSING_SOURCE_FIELD.name, rec)

    def _invalid_position(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        src = rec.value["source"]
        field = self.g.f.position_field
        src[field] = -1 if isinstance(src[field], int) else "-1"  # typed as the connector types it
        self.label(INVALID_POSITION.name, rec)

    def _key_payload_mismatch(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        table = next(t for t in TABLES if t.name == rec.table)
        row = self._row(rec, "after" if rec.value["after"] is not None else "before")
        col = self.col(table, key=True)
        pk = row[col]["value"] if self.g.f.wrap_values else row[col]
        row[col] = self.g.wrap(pk + 5_000_000)
        self.label(KEY_PAYLOAD_MISMATCH.name, rec)

    # -- records that are not JSON ---------------------------------------------------------------
    def _invalid_json(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """Variants: a truncated value; an object followed by garbage and a whole change event
        (``{"order_id": 1}^{...}``); a key and its value on one line (``key<TAB>value``)."""
        g = self.g
        table = g.rng.choice(TABLES)
        pk = self.new_pk(table)
        variant = self.variant(INVALID_JSON.name, advance=True) % 3
        if variant == 0:
            rec = Rec(g.f.topic(table.name), g.key_payload(table, pk), '{"schema": {"type": "struct", "fie',
                      g.proc_ts, key_schema=g.key_schemas[table.name], table=table.name)
            g.proc_ts += 1
            self.label(INVALID_JSON.name, g.emit(rec))
            return
        rec = g.change(table, pk, "c", None, g.row(table, pk, 0), txn=None, txn_no=txn_no, ev=STANDALONE_EV,
                       commit_seq=g.seq)
        key, value = serialize(rec, g.schemas)
        prefix = f'{{"{self.col(table, key=True)}": {pk}}}^' if variant == 1 else f"{key}\t"
        rec.raw_value = prefix + (value or "")
        self.label(INVALID_JSON.name, rec)
