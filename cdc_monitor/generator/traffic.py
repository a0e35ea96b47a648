"""Seeded, deterministic Debezium-like traffic for one connector flavour.

Timeline: a snapshot (op ``r``), then transactions of creates/updates/deletes (tombstones after
deletes, primary-key changes as delete + tombstone + create with ``__debezium.oldkey/newkey``
headers, re-inserted keys, the same key twice in one transaction). Transaction markers follow
Debezium's semantics: BEGIN before a transaction's first event, its END only when the next
transaction begins, so the newest transaction stays open. What each transaction does is
``workload.py``'s; this module writes it as the flavour's connector would. Faults (see
``faults.py``) are planned up front and applied while generating, each recorded as a label.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from typing import Any

from cdc_monitor.errors import UsageError
from cdc_monitor.generator.connect_schemas import (
    DECIMAL,
    DECIMAL_SCALE,
    envelope_schema,
    heartbeat_schemas,
    key_schema,
    marker_schemas,
    row_schema,
)
from cdc_monitor.generator.flavours import FLAVOURS, TABLES, TableDef
from cdc_monitor.generator.partitioner import partition_for
from cdc_monitor.generator.records import KeyPool, KeyState, Rec, Traffic, _dumps, serialize_key, set_times
from cdc_monitor.generator.workload import Op, plan_ops
from cdc_monitor.vocabulary import HEARTBEAT_TOPIC_PREFIX as HEARTBEAT_PREFIX

BASE_TS_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HEARTBEAT_EVERY = 10  # transactions between heartbeat records


def decimal_value(unscaled: int, fmt: str) -> Any:
    """A Decimal column as the JsonConverter writes it: base64 of the unscaled big-endian
    two's-complement bytes, or (decimal.format=NUMERIC) a JSON number."""
    if fmt == "numeric":
        return unscaled / 10**DECIMAL_SCALE
    return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()


class Generator:
    def __init__(self, flavour: str, *, events: int = 1000, seed: int = 7, schemas: bool = True,
                 partitions: int = 3, tombstones: bool = True, faults: bool = False, fault_repeats: int = 3,
                 decimal_format: str = "base64", connector: str | None = None, flatten: bool = False,
                 fault_rules: frozenset[str] | None = None, heartbeats: bool = False, value_format: str = "json",
                 server: str | None = None, transaction_metadata: bool = True):
        """``decimal_format``: how Decimal columns are written (the JsonConverter's ``base64`` default,
        or ``numeric``: JSON numbers). ``connector``: a ``source.connector`` name to write instead of
        the flavour's (an unknown connector writes no transaction metadata). ``flatten``: values as
        ExtractNewRecordState writes them (the row only; deletes and tombstones dropped).
        ``fault_rules``: with ``faults``, inject only these rules. ``heartbeats``: Debezium heartbeat
        records on ``__debezium-heartbeat.<server>`` every HEARTBEAT_EVERY transactions. ``value_format``:
        json, avro (wire format, for Kafka) or avro-json (captures). ``server``: the topic prefix
        instead of the flavour's. ``transaction_metadata=False``: no BEGIN/END markers and no
        ``transaction`` blocks, as Debezium writes without ``provide.transaction.metadata`` (its default)."""
        from cdc_monitor.generator.faults import FaultPlan
        from cdc_monitor.generator.wire_faults import VALUE_FORMATS

        if value_format not in VALUE_FORMATS:
            raise ValueError(value_format)
        if value_format != "json":  # Avro: the schemas live in the registry, the labels name keys by payload
            if flavour in ("yugabyte", "mongodb") or flatten or decimal_format != "base64" or connector:
                raise UsageError("Avro traffic is generated for mysql, dtle, postgresql, sqlserver and oracle, with "
                                 "envelopes and base64 decimals: drop --flatten/--connector/--decimal-format")
            schemas = False
        self.value_format = value_format
        self.f = FLAVOURS[flavour] if server is None else dataclasses.replace(FLAVOURS[flavour], server=server)
        self.rng = random.Random(seed)
        self.events = events
        self.schemas = schemas
        self.partitions = partitions
        self.tombstones = tombstones
        self.out = Traffic(self.f, partitions=partitions, schemas=schemas, value_format=value_format)
        self.keys: dict[tuple[str, int], KeyState] = {}
        # keys free for ordinary traffic (faults take theirs out with ``reserve``)
        self.live_pool = {t.name: KeyPool() for t in TABLES}
        self.dead_pool = {t.name: KeyPool() for t in TABLES}
        self.next_id = {t.name: 1001 for t in TABLES}
        self.source_ts = BASE_TS_MS + seed * 1000
        self.txn_source_ts: dict[int, int] = {}
        self.proc_ts = self.source_ts + 200
        self.seq = 0
        self.data_events = 0
        self.pending_end: Rec | None = None
        # PostgreSQL: the LSN of the last committed transaction (its END's), and per transaction the
        # one before it began (source.sequence[0])
        self.last_commit: int | None = None
        self.commit_before: dict[int, int | None] = {}
        self.key_schemas = {t.name: key_schema(self.f, t) for t in TABLES}
        self.value_schemas = {t.name: envelope_schema(self.f, t) for t in TABLES}
        self.decimal_format = decimal_format
        self.connector = connector
        self.flatten = flatten
        self.tx_metadata = transaction_metadata and self.f.name != "dtle" and connector is None
        self.plan = FaultPlan(self, fault_repeats, fault_rules) if faults else None
        self.heartbeats = heartbeats

    # -- helpers ---------------------------------------------------------------------------
    def key_bytes(self, table: TableDef, pk: int) -> bytes:
        key = self.key_payload(table, pk)
        payload = {"schema": self.key_schemas[table.name], "payload": key} if self.schemas else key
        return _dumps(payload).encode()

    def home_partition(self, table: TableDef, pk: int) -> int:
        return partition_for(self.key_bytes(table, pk), self.partitions)

    def wrap(self, v: Any) -> Any:
        return {"value": v} if self.f.wrap_values else v

    def key_payload(self, table: TableDef, pk: int) -> dict[str, Any]:
        if self.f.documents:  # MongoDB: the document's _id as (extended) JSON text
            return {"id": json.dumps(pk)}
        return {self.f.ident(c.name): self.wrap(pk) for c in table.columns if c.key}

    def column(self, c: Any) -> str:
        """A column's name in a row (MongoDB documents key on _id)."""
        return "_id" if c.key and self.f.documents else self.f.ident(c.name)

    def row(self, table: TableDef, pk: int, version: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        r = self.rng
        for c in table.columns:
            if c.key:
                v: Any = pk
            elif c.type == "string":
                v = f"{c.name}-{pk}-{version}-{r.randrange(10**6)}"
            elif c.type in ("int32", "int16"):
                v = r.randrange(1, 30000)
            elif c.type == "int64":
                v = self.source_ts - r.randrange(10**7)
            elif c.type in ("double", "float"):
                v = round(r.uniform(1, 1000), 2)
            elif c.type == "boolean":
                v = r.random() < 0.5
            elif c.logical == DECIMAL:
                v = decimal_value(r.randrange(100, 10**6), self.decimal_format)
            else:
                v = None
            out[self.column(c)] = self.wrap(v)
        return out

    def key_only_row(self, table: TableDef, pk: int) -> dict[str, Any]:
        return {self.column(c): (self.wrap(pk) if c.key else None) for c in table.columns}

    def emit(self, rec: Rec, partition: int | None = None) -> Rec:
        if self.flatten and rec.topic != self.f.transaction_topic:
            if rec.value is None or (isinstance(rec.value, dict) and rec.value.get("op") == "d"):
                return rec  # ExtractNewRecordState's defaults drop deletes and tombstones
            if isinstance(rec.value, dict):
                table = next(t for t in TABLES if t.name == rec.table)
                rec.value = rec.value["after"]
                rec.value_schema = {k: v for k, v in row_schema(self.f, table, "after").items() if k != "field"}
        if partition is None and rec.key is not None:
            partition = partition_for(serialize_key(rec, self.schemas).encode(), self.partitions_of(rec.topic))
        rec.partition = partition if partition is not None else 0
        self.out.records.append(rec)
        return rec

    def partitions_of(self, topic: str) -> int:
        return 1 if topic in (self.f.transaction_topic, self.heartbeat_topic) else self.partitions

    @property
    def heartbeat_topic(self) -> str:
        return f"{HEARTBEAT_PREFIX}.{self.f.server}"

    def heartbeat(self) -> Rec:
        key_schema, value_schema = heartbeat_schemas(self.f)
        return self.emit(Rec(self.heartbeat_topic, {"serverName": self.f.server}, {"ts_ms": self.proc_ts}, self.proc_ts,
                             key_schema=key_schema, value_schema=value_schema), partition=0)

    # -- events ----------------------------------------------------------------------------
    def change(self, table: TableDef, pk: int, op: str, before: Any, after: Any, *, txn: dict | None,
               txn_no: int, ev: int, commit_seq: int, snapshot: str = "false", headers=None,
               coords: tuple[int, int, int] | None = None, partition: int | None = None) -> Rec:
        """``coords`` = (txn_no, seq, commit_seq) to build the source position from instead of now."""
        c_txn, c_seq, c_commit = coords or (txn_no, self.seq, commit_seq)
        # MongoDB's position leads with the oplog time: an event placed at older coordinates has its time
        source_ts = self.txn_source_ts.get(c_txn, self.source_ts) if coords and self.f.documents else self.source_ts
        src = self.f.source(table.name, c_txn, c_seq, ev, source_ts, snapshot, op, c_commit,
                            last_commit=self.commit_before.get(c_txn, self.last_commit))
        if self.connector is not None:
            src["connector"] = self.connector
        payload: dict[str, Any] = {"before": before, "after": after, "source": src}
        if self.f.v3:  # Debezium 3.x: the transaction block before op, the processing time in us and ns too
            payload |= {"transaction": txn if self.tx_metadata else None, "op": op, "ts_ms": 0, "ts_us": 0, "ts_ns": 0}
            set_times(payload, self.proc_ts)
        else:
            payload |= {"op": op, "ts_ms": self.proc_ts}
        if self.f.documents:  # 2.x: what an update changed, beside the full document (updateLookup)
            changed = {k: v for k, v in (after or {}).items() if k != "_id"} if op == "u" else None
            payload["updateDescription"] = ({"removedFields": None, "updatedFields": json.dumps(changed),
                                             "truncatedArrays": None} if changed is not None else None)
        if self.tx_metadata and not self.f.v3:
            payload["transaction"] = txn
        rec = Rec(self.f.topic(table.name), self.key_payload(table, pk), payload, self.proc_ts + 1,
                  headers=headers, key_schema=self.key_schemas[table.name],
                  value_schema=self.value_schemas[table.name], table=table.name, pk=pk,
                  txn_id=txn["id"] if txn else None, documents=self.f.documents)
        state = self.keys.setdefault((table.name, pk), KeyState(table, pk))
        state.last, state.last_coords = rec, (txn_no, self.seq)
        state.live = op != "d"
        if after is not None:
            state.row = after
        self._track(table.name, pk, op)
        if snapshot == "false":
            self.seq += 1
        self.proc_ts += 1
        self.data_events += 1
        return self.emit(rec, partition)

    def _track(self, table: str, pk: int, op: str) -> None:
        if self.plan is not None and (table, pk) in self.plan.reserved:
            return
        if op == "d":
            self.live_pool[table].discard(pk)
            self.dead_pool[table].add(pk)
        elif op in ("c", "r", "u"):
            self.dead_pool[table].discard(pk)
            self.live_pool[table].add(pk)

    def reserve(self, table: str, pk: int) -> None:
        """Take a key out of ordinary traffic (a fault owns it now)."""
        self.live_pool[table].discard(pk)
        self.dead_pool[table].discard(pk)

    def tombstone(self, table: TableDef, pk: int) -> Rec:
        rec = Rec(self.f.topic(table.name), self.key_payload(table, pk), None, self.proc_ts,
                  key_schema=self.key_schemas[table.name], table=table.name, pk=pk)
        return self.emit(rec)

    def marker(self, status: str, txn_id: str, ts_ms: int, counts: dict[str, int] | None = None) -> Rec:
        value: dict[str, Any] = {"status": status, "id": txn_id, "event_count": None, "data_collections": None,
                                 "ts_ms": ts_ms}
        if counts is not None:
            value["event_count"] = sum(counts.values())
            value["data_collections"] = [{"data_collection": k, "event_count": v} for k, v in counts.items()]
        key_schema, value_schema = marker_schemas(self.f)
        return Rec(self.f.transaction_topic, {"id": txn_id}, value, self.proc_ts,
                   key_schema=key_schema, value_schema=value_schema, txn_id=txn_id)

    # -- phases ----------------------------------------------------------------------------
    def snapshot(self) -> None:
        per_table = max(3, min(50, self.events // 20))
        for t, table in enumerate(TABLES):
            for i in range(per_table):
                pk = self.next_id[table.name]
                self.next_id[table.name] += 1
                self.change(table, pk, "r", None, self.row(table, pk, 0), txn=None, txn_no=0, ev=0,
                            commit_seq=0, snapshot=self.f.snapshot_marker(t == len(TABLES) - 1, t == 0, i, per_table))
        self.proc_ts += 50

    def transaction(self, txn_no: int, ops: list[Op], hooks: dict[str, Any]) -> None:
        self.source_ts += self.rng.randrange(50, 1500)
        self.txn_source_ts[txn_no] = self.source_ts
        self.proc_ts = max(self.proc_ts, self.source_ts + self.rng.randrange(20, 900))
        pg = self.f.name == "postgresql"
        # PostgreSQL: the BEGIN's last seen LSN is the first event's (Debezium 3.6.1 with pgoutput)
        txn_id = self.f.txn_id(txn_no, self.f.lsn(self.seq))
        self.commit_before[txn_no] = self.last_commit
        if self.tx_metadata:
            if self.pending_end is not None:
                end = self.pending_end
                end.ts = self.proc_ts
                if not hooks.get("drop_previous_end"):
                    self.emit(end)
            begin = self.marker("BEGIN", txn_id, self.source_ts)
            if not hooks.get("drop_begin"):
                self.emit(begin)
            hooks["begin_rec"] = begin
        # expand ops into events
        n_data = sum(2 if a == "pkchange" else 1 for a, _, _ in ops)
        commit_seq = self.seq + n_data - 1
        counts: dict[str, int] = {}
        total = 0
        data_recs: list[Rec] = []

        def block(table: TableDef) -> dict | None:
            nonlocal total
            if not self.tx_metadata:
                return None
            dc = self.f.data_collection(table.name)
            counts[dc] = counts.get(dc, 0) + 1
            total += 1
            own_id = self.f.txn_id(txn_no, self.f.lsn(self.seq)) if pg else txn_id
            return {"id": own_id, "total_order": total, "data_collection_order": counts[dc]}

        ev = 0
        for action, table, pk in ops:
            state = self.keys.get((table.name, pk))
            current = state.row if state else None
            kw = dict(txn_no=txn_no, commit_seq=commit_seq)
            if action in ("create", "reinsert"):
                data_recs.append(self.change(table, pk, "c", None, self.row(table, pk, ev), txn=block(table), ev=ev, **kw))
            elif action == "update":
                before = (current or self.row(table, pk, 0)) if self.f.before_on_update else None
                data_recs.append(self.change(table, pk, "u", before, self.row(table, pk, ev + 1), txn=block(table), ev=ev, **kw))
            elif action == "delete":
                before = (current or self.row(table, pk, 0)) if self.f.before_on_update else self.key_only_row(table, pk)
                data_recs.append(self.change(table, pk, "d", before, None, txn=block(table), ev=ev, **kw))
                self.keys[(table.name, pk)].live = False
                if self.tombstones:
                    self.tombstone(table, pk)
            elif action == "pkchange":
                new_pk = self.next_id[table.name]
                self.next_id[table.name] += 1
                old_key, new_key = _dumps(self.key_payload(table, pk)), _dumps(self.key_payload(table, new_pk))
                before = (current or self.row(table, pk, 0)) if self.f.before_on_update else self.key_only_row(table, pk)
                data_recs.append(self.change(table, pk, "d", before, None, txn=block(table), ev=ev, **kw,
                                             headers=[("__debezium.newkey", new_key)]))
                self.keys[(table.name, pk)].live = False
                if self.tombstones:
                    self.tombstone(table, pk)
                ev += 1
                data_recs.append(self.change(table, new_pk, "c", None, self.row(table, new_pk, 0), txn=block(table),
                                             ev=ev, **kw, headers=[("__debezium.oldkey", old_key)]))
            ev += 1
        hooks["data_recs"] = data_recs
        if self.tx_metadata:
            end_id = self.f.txn_id(txn_no, self.commit_lsn(commit_seq)) if pg else txn_id
            self.pending_end = self.marker("END", end_id, self.source_ts, counts)
            hooks["end_rec"] = self.pending_end
        if pg:
            self.last_commit = self.commit_lsn(commit_seq)
        self.proc_ts += 2

    def commit_lsn(self, commit_seq: int) -> int:
        """PostgreSQL: a transaction's commit LSN (its END's id), just past its last event's."""
        return self.f.lsn(commit_seq) + 16

    def run(self) -> Traffic:
        self.snapshot()
        txn_no = 1
        while self.data_events < self.events or (self.plan is not None and not self.plan.done):
            hooks: dict[str, Any] = {}
            if self.plan is not None:
                self.plan.before_txn(txn_no, hooks)
            ops = hooks.pop("ops", None) or plan_ops(self.rng, self.live_pool, self.dead_pool, self.next_id,
                                                       self.rng.randint(1, 4))
            self.transaction(txn_no, ops, hooks)
            if self.plan is not None:
                self.plan.after_txn(txn_no, hooks)
            txn_no += 1
            if self.heartbeats and txn_no % HEARTBEAT_EVERY == 0:
                self.heartbeat()
            if txn_no > 10 * self.events + 1000:
                break
        if self.plan is not None:
            self.plan.finish()
        self.assign_offsets()
        return self.out

    def assign_offsets(self) -> None:
        counters: dict[tuple[str, int], int] = {}
        for rec in self.out.records:
            k = (rec.topic, rec.partition or 0)
            rec.offset = counters.get(k, 0)
            counters[k] = rec.offset + 1


def generate(flavour: str, **kwargs: Any) -> Traffic:
    return Generator(flavour, **kwargs).run()
