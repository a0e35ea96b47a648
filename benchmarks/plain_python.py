"""Baseline: the four checks as the single-process Python script a user would write.

Not product code and deliberately straightforward: json-parse every record, keep dicts per
table/key/transaction, compute the same kinds of results (lag percentiles, transaction
reconciliation, schema conformity against the embedded Connect schema, per-key ordering).
Usage: python -m benchmarks.plain_python CAPTURE...
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

INT_RANGES = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63}
OPS = {"c", "u", "d", "r", "t", "m"}
SOURCE_REQUIRED = ("version", "connector", "name", "ts_ms", "db")


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    if value is None:
        return bool(schema.get("optional"))
    kind = schema.get("type")
    if kind in INT_RANGES:
        return isinstance(value, int) and not isinstance(value, bool) and -INT_RANGES[kind] <= value < INT_RANGES[kind]
    if kind in ("float", "float32", "float64", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("string", "bytes"):
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list) and all(conforms(v, schema.get("items", {})) for v in value)
    if kind == "map":
        return isinstance(value, dict)
    if kind == "struct":
        if not isinstance(value, dict):
            return False
        fields = {f["field"]: f for f in schema.get("fields", [])}
        return all(conforms(value.get(name), f) for name, f in fields.items())
    return True


def position(source: dict[str, Any]) -> tuple | None:
    conn = source.get("connector")
    try:
        if conn == "mysql" or "file" in source:
            f = str(source.get("file") or "")
            return (int(f.rsplit(".", 1)[-1]) if "." in f else 0, int(source.get("pos") or 0), int(source.get("row") or 0))
        if conn in ("yugabytedb", "yugabyte") or ":" in str(source.get("lsn") or ""):  # "1:4::0:0"
            return tuple(int(p or 0) for p in str(source["lsn"]).split(":"))
        if conn == "postgresql":
            return (int(source["lsn"]),)
        if conn == "sqlserver":
            lsns = [int(str(source.get(k) or "0").replace(":", ""), 16) for k in ("commit_lsn", "change_lsn")]
            return (*lsns, int(source.get("event_serial_no") or 0))
        if conn == "oracle":
            return (int(source.get("commit_scn") or 0), int(source.get("scn") or 0))
        if conn == "mongodb":
            return (int(source["ts_ms"]), int(source["ord"]))
    except (ValueError, TypeError, KeyError):
        return None
    return None


def lines(paths: list[str]):
    for p in paths:
        opener = gzip.open if p.endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8") as fh:
            yield from fh


def txn_key(txn_id: str) -> str:
    """PostgreSQL ids are "<txId>:<lastSeenLsn>", the LSN differing on every record: pair by txId."""
    head, _, tail = txn_id.partition(":")
    return head if head.isdigit() and tail.isdigit() else txn_id


def run(paths: list[str]) -> dict[str, Any]:
    findings: dict[str, int] = defaultdict(int)
    where: dict[str, list[tuple]] = defaultdict(list)  # rule -> (topic, partition, offset) of each finding
    lags: dict[str, list[int]] = defaultdict(list)
    begins: dict[str, int] = {}
    ends: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = defaultdict(int)
    seen_by_coll: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    last: dict[tuple, tuple] = {}
    contents: dict[tuple, set] = defaultdict(set)
    records = 0
    for line in lines(paths):
        if not line.strip():
            continue
        records += 1
        try:
            rec = json.loads(line)
        except ValueError:
            findings["invalid_capture_line"] += 1
            continue
        at = (rec.get("topic"), rec.get("partition"), rec.get("offset"))
        try:
            value = json.loads(rec["payload"]) if rec.get("payload") is not None else None
            key = json.loads(rec["key"]) if rec.get("key") is not None else None
        except (ValueError, KeyError):
            findings["invalid_json"] += 1
            where["invalid_json"].append(at)
            continue
        schema = None
        if isinstance(value, dict) and "schema" in value and "payload" in value:
            schema, value = value["schema"], value["payload"]
        if isinstance(key, dict) and "schema" in key and "payload" in key:
            key = key["payload"]
        topic = rec["topic"]
        key_text = json.dumps(key, sort_keys=True)
        if topic.endswith(".transaction"):
            if isinstance(value, dict) and value.get("status") == "BEGIN":
                begins[txn_key(str(value.get("id")))] = topic
            elif isinstance(value, dict) and value.get("status") == "END":
                ends[txn_key(str(value.get("id")))] = value | {"_at": at}
            continue
        k = (topic, rec["partition"], key_text)
        if value is None:
            prev = last.get(k, ("?", None))
            if prev[0] != "d":
                findings["tombstone_without_delete"] += 1
            last[k] = prev if prev[0] == "d" else ("~", None)  # the tombstone after a delete: the key stays deleted
            continue
        if not isinstance(value, dict):
            findings["invalid_envelope"] += 1
            continue
        if schema is not None and not conforms(value, schema):
            findings["type_mismatch"] += 1
        op = value.get("op")
        source = value.get("source") or {}
        if op not in OPS:
            findings["invalid_op"] += 1
        if (op == "c" and value.get("after") is None) or (op == "d" and value.get("before") is None):
            findings["before_after_mismatch"] += 1
        for field in SOURCE_REQUIRED:
            if field not in source:
                findings["missing_source_field"] += 1
                break
        connector = source.get("connector")
        if connector in ("postgresql", "yugabyte"):  # the data_collection spelling of each connector
            table = f"{source.get('schema')}.{source.get('table')}"
        elif connector in ("mysql", "mongodb", None):
            table = f"{source.get('db')}.{source.get('table') or source.get('collection')}"
        else:
            table = f"{source.get('db')}.{source.get('schema')}.{source.get('table')}"
        snapshot = op == "r" or source.get("snapshot") in (True, "true", "last", "first")
        src_ts = source.get("ts_ms")
        if src_ts is None and source.get("ts_sec") is not None:
            src_ts = int(source["ts_sec"]) * 1000
        if op in ("c", "u", "d") and not snapshot:
            try:
                lags[table].append(int(value["ts_ms"]) - int(src_ts))
            except (TypeError, ValueError, KeyError):
                findings["invalid_source_ts"] += 1
        pos = position(source)
        content = hash((op, json.dumps(value.get("before"), sort_keys=True), json.dumps(value.get("after"), sort_keys=True), pos))
        if content in contents[k]:
            findings["duplicate"] += 1
            where["duplicate"].append(at)
        else:
            contents[k].add(content)
            prev = last.get(k)
            if prev is not None:
                if prev[0] == "d" and op in ("u", "d"):
                    findings["event_after_delete"] += 1
                    where["event_after_delete"].append(at)
                if pos is not None and prev[1] is not None and not snapshot and pos < prev[1]:
                    findings["position_regression"] += 1
                    where["position_regression"].append(at)
            last[k] = (op, pos)
            txn = value.get("transaction")  # an exact re-delivery counts once in its transaction
            if isinstance(txn, dict) and txn.get("id"):
                seen[txn_key(str(txn["id"]))] += 1
                seen_by_coll[txn_key(str(txn["id"]))][table] += 1
    for txn_id, end in ends.items():
        if txn_id not in begins:
            findings["missing_begin"] += 1
            where["missing_begin"].append(end["_at"])
        if int(end.get("event_count") or 0) != seen.get(txn_id, 0):
            findings["count_mismatch"] += 1
            where["count_mismatch"].append(end["_at"])
        for coll in end.get("data_collections") or []:
            if int(coll.get("event_count") or 0) != seen_by_coll[txn_id].get(coll.get("data_collection", ""), 0):
                findings["collection_count_mismatch"] += 1
                break
    unended: dict[str, int] = defaultdict(int)  # per transaction topic: the newest one is legitimately open
    for txn_id, topic in begins.items():
        unended[topic] += txn_id not in ends
    if sum(max(0, n - 1) for n in unended.values()):
        findings["missing_end"] += sum(max(0, n - 1) for n in unended.values())
    lag_table = {}
    for table, values in lags.items():
        values.sort()
        n = len(values)
        lag_table[table] = {q: values[min(n - 1, max(0, -(-int(p * n * 1000) // 1000) - 1))] for q, p in
                            (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))} | {"max": values[-1], "count": n}
    return {"records": records, "findings": dict(findings), "lag": lag_table, "transactions": len(begins),
            "where": {rule: sorted(at) for rule, at in where.items()}}


def main() -> None:
    started = time.perf_counter()
    out = run(sys.argv[1:])
    took = time.perf_counter() - started
    size = sum(Path(p).stat().st_size for p in sys.argv[1:])
    print(json.dumps({"seconds": round(took, 3), "records": out["records"], "mb": round(size / 1e6, 1),
                      "findings": out["findings"], "transactions": out["transactions"]}))


if __name__ == "__main__":
    main()
