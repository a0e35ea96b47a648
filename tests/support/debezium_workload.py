"""What users' databases do, in real PostgreSQL transactions, with the change events each one must
produce: multi-statement transactions across tables and single-statement autocommits; updates,
deletes, a primary-key change, TRUNCATE, an ADD COLUMN mid-stream; numeric, timestamptz, json,
jsonb, arrays (with a null element) and TOASTed text left unchanged by an update; REPLICA IDENTITY
FULL on ``public.customers``, the default on the others.

``Txn.events``: the data events (change events, truncates included) per table Debezium writes for
it; ``Txn.tombstones``: the tombstones (one per delete, and per primary-key change: Debezium
writes a delete, a tombstone and a create). A statement that changes no published row (the DDL)
is no transaction on the transaction topic: Debezium writes BEGIN with the first data event.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

CUSTOMERS, ORDERS, STOCK, SCRATCH = "public.customers", "public.orders", "inventory.stock", "public.scratch"
TABLES = (CUSTOMERS, ORDERS, STOCK, SCRATCH)
TOAST = 9000  # characters: stored out of line (STORAGE EXTERNAL: no compression)

SCHEMA_SQL = f"""
create schema inventory;
create table public.customers (id int primary key, name text not null, email text, balance numeric(12,2),
  created timestamptz, profile jsonb, tags text[], bio text);
alter table public.customers replica identity full;
alter table public.customers alter column bio set storage external;
create table public.orders (id bigint primary key, customer_id int, amount numeric(10,3), placed timestamptz,
  meta json, qty int[], note text);
alter table public.orders alter column note set storage external;
create table inventory.stock (sku text, store int, qty int not null, price numeric(8,2), primary key (sku, store));
create table public.scratch (id int primary key, v text);
insert into public.customers
  select i, 'customer ' || i, 'c' || i || '@example.com', i * 10.25, timestamptz '2024-03-01 09:00:00+01' + i * interval '1 day',
         jsonb_build_object('tier', i % 3, 'tags', jsonb_build_array('a', i)), array['t' || i, 'all'],
         case when i = 1 then repeat('b', {TOAST}) else 'bio ' || i end
  from generate_series(1, 6) i;
insert into public.orders
  select i, 1 + i % 6, i * 1.125 - 3, timestamptz '2024-03-02 12:00:00.123456+00' + i * interval '1 hour',
         json_build_object('i', i, 'nested', json_build_object('x', array[1, 2])), array[i, i + 1],
         case when i = 1 then repeat('n', {TOAST}) else 'note ' || i end
  from generate_series(1, 8) i;
insert into inventory.stock values ('a', 1, 10, 1.50), ('a', 2, 0, 1.50), ('b', 1, 7, 20.00), ('b', 2, 3, 20.00);
insert into public.scratch values (1, 'x'), (2, 'y'), (3, 'z');
"""
SNAPSHOT = {CUSTOMERS: 6, ORDERS: 8, STOCK: 4, SCRATCH: 3}


@dataclass(frozen=True)
class Txn:
    sql: str
    events: dict[str, int]
    tombstones: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.events.values())


def _order(i: int, customer: int, discount: bool = False) -> str:
    cols = "id, customer_id, amount, placed, meta, qty" + (", discount" if discount else "")
    values = (f"{i}, {customer}, {(i * 37) % 1000 - 400}.{i % 1000:03d}, timestamptz '2024-04-01 08:00:00+05:30' + "
              f"interval '{i} minutes', '{{\"order\": {i}, \"lines\": [{{\"sku\": \"a\", \"n\": {i % 4}}}]}}', "
              f"array[{i}, null, {i * 2}]" + (f", {i % 10}.25" if discount else ""))
    return f"insert into public.orders ({cols}) values ({values})"


def clean_workload() -> list[Txn]:
    """The first part: everything above, in 40 transactions."""
    txns: list[Txn] = []
    for n in range(12):  # an order, its customer's balance and the stock, in one transaction
        c = 1 + n % 4
        txns.append(Txn(f"begin; {_order(100 + n, c)}; update public.customers set balance = balance + {n}.5 where id = {c}; "
                        f"update inventory.stock set qty = qty - 1 where sku = 'a' and store = 1; commit",
                        {ORDERS: 1, CUSTOMERS: 1, STOCK: 1}))
    txns += [Txn(_order(200 + n, 2), {ORDERS: 1}) for n in range(6)]  # autocommits
    txns += [
        # TOASTed columns left unchanged: default identity (orders) and FULL (customers)
        Txn("update public.orders set amount = 5.5 where id = 1", {ORDERS: 1}),
        Txn("update public.customers set email = 'first@example.com' where id = 1", {CUSTOMERS: 1}),
        Txn("update public.orders set amount = amount * 2 where id between 2 and 4", {ORDERS: 3}),
        Txn("begin; update public.customers set balance = balance + 1 where id = 2; "
            "update public.customers set balance = balance + 1 where id = 2; commit", {CUSTOMERS: 2}),
        Txn("update public.orders set amount = amount where id = 7", {ORDERS: 1}),  # a row rewritten unchanged
        Txn("delete from public.orders where id = 5", {ORDERS: 1}, {ORDERS: 1}),
        Txn("delete from public.customers where id = 6", {CUSTOMERS: 1}, {CUSTOMERS: 1}),
        # primary-key changes: a delete, its tombstone and a create, on both identities
        Txn("update public.orders set id = 500 where id = 6", {ORDERS: 2}, {ORDERS: 1}),
        Txn("update public.customers set id = 600 where id = 5", {CUSTOMERS: 2}, {CUSTOMERS: 1}),
        Txn("begin; insert into inventory.stock values ('c', 1, 5, 9.99); delete from inventory.stock where sku = 'b' "
            "and store = 2; update inventory.stock set price = 21.00 where sku = 'b'; commit", {STOCK: 3}, {STOCK: 1}),
        Txn("truncate public.scratch", {SCRATCH: 1}),
        Txn("insert into public.scratch values (10, 'after the truncate')", {SCRATCH: 1}),
        Txn("alter table public.orders add column discount numeric(5,2) default 0", {}),  # no events, no markers
    ]
    txns += [Txn(_order(300 + n, 3, discount=True), {ORDERS: 1}) for n in range(5)]
    txns += [
        Txn("begin; update public.orders set discount = 1.5, note = 'discounted' where id = 300; "
            "update public.customers set profile = profile || '{\"vip\": true}', tags = array_append(tags, 'vip') "
            "where id = 3; commit", {ORDERS: 1, CUSTOMERS: 1}),
        Txn("update public.customers set bio = repeat('c', 9000) where id = 2", {CUSTOMERS: 1}),
    ]
    return txns


def before_crash() -> list[Txn]:
    """Streamed, then Connect is killed before it commits their offsets: Debezium sends them again."""
    txns = [Txn(f"begin; {_order(400 + n, 1 + n)}; update public.customers set balance = balance - 2 where id = {1 + n}; "
                "commit", {ORDERS: 1, CUSTOMERS: 1}) for n in range(3)]
    return [*txns,
            Txn("update public.orders set amount = 1.001 where id = 101", {ORDERS: 1}),
            Txn("delete from public.orders where id = 102", {ORDERS: 1}, {ORDERS: 1}),
            Txn("begin; insert into public.scratch values (11, 'x'); truncate public.scratch; commit", {SCRATCH: 2})]


def while_down() -> list[Txn]:
    """Committed while Connect is down: streamed once, after the restart."""
    return [Txn(_order(450 + n, 2, discount=True), {ORDERS: 1}) for n in range(2)] + [
        Txn("update inventory.stock set qty = 99 where sku = 'c' and store = 1", {STOCK: 1})]


def events(txns: list[Txn]) -> Counter[str]:
    out: Counter[str] = Counter()
    for t in txns:
        out.update(t.events)
    return out


def tombstones(txns: list[Txn]) -> Counter[str]:
    out: Counter[str] = Counter()
    for t in txns:
        out.update(t.tombstones)
    return out


def transactions(txns: list[Txn]) -> int:
    """Transactions on the transaction topic: those with data events."""
    return sum(1 for t in txns if t.events)
