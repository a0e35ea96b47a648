"""What the generated database does in one transaction, apart from how Debezium writes it
(traffic.py): its operations, drawn from the keys alive and deleted so far.

An operation is ``(action, table, pk)`` with action create, update, delete, pkchange (a primary
key changed: delete + create under a new key) or reinsert (a deleted key created again). A
transaction may touch a key twice, and never touches a key it deleted earlier.
"""

from __future__ import annotations

import random

from cdc_monitor.generator.flavours import TABLES, TableDef
from cdc_monitor.generator.records import KeyPool

Op = tuple[str, TableDef, int]


def plan_ops(rng: random.Random, live_pool: dict[str, KeyPool], dead_pool: dict[str, KeyPool],
             next_id: dict[str, int], n: int) -> list[Op]:
    """``n`` operations of one transaction. ``live_pool``/``dead_pool``: per table, the keys free for
    ordinary traffic that are alive / deleted; ``next_id``: per table, the next new key (advanced here)."""
    ops: list[Op] = []
    added: dict[str, list[int]] = {t.name: [] for t in TABLES}  # created earlier in this transaction
    removed: dict[str, set[int]] = {t.name: set() for t in TABLES}  # deleted earlier in this transaction

    def pick(table: TableDef) -> int | None:
        pool = live_pool[table.name]
        for _ in range(8):
            fresh = [pk for pk in added[table.name] if pk not in removed[table.name]]
            if fresh and (not pool or rng.random() < 0.2):
                pk = rng.choice(fresh)
            elif pool:
                pk = pool.choice(rng)
            else:
                return None
            if pk not in removed[table.name]:
                return pk
        return None

    for _ in range(n):
        table = rng.choice(TABLES)
        roll = rng.random()
        live_count = len(live_pool[table.name]) + len(added[table.name]) - len(removed[table.name])
        target = pick(table) if live_count >= 3 else None
        dead = dead_pool[table.name]
        if roll < 0.35 or target is None:
            action, pk = "create", next_id[table.name]
            next_id[table.name] += 1
        elif roll < 0.80:
            action, pk = "update", target
        elif roll < 0.90:
            action, pk = "delete", target
        elif roll < 0.95:
            action, pk = "pkchange", target
        elif len(dead) and dead.items[0] not in removed[table.name]:
            action, pk = "reinsert", dead.choice(rng)
        else:
            action, pk = "update", target
        if action in ("create", "reinsert"):
            if action == "reinsert" and (pk in removed[table.name] or pk in added[table.name]):
                action, pk = "create", next_id[table.name]
                next_id[table.name] += 1
            added[table.name].append(pk)
        elif action in ("delete", "pkchange"):
            removed[table.name].add(pk)
        ops.append((action, table, pk))
    return ops
