"""The windows a pass must read in bounded memory: a hot key (every event of one key, the key pass's
largest group), a huge transaction (every event in one transaction, the transaction pass's) and a
table's initial snapshot (every read of one table, the table pass's).

`python -m benchmarks large-groups [--hot-key N] [--transaction N] [--snapshot N] [--mixed N] [--heap 512m]
[--baseline TREE]` writes them as captures (from a real generated MySQL event: a key updated N times;
one BEGIN, N inserts across three partitions, one END naming N; a table's initial snapshot of N reads;
and a generated MySQL window with schemas) and scans each in a whole `cdc-monitor scan` process under
the heap given, its exit, peak memory (the process tree's RSS) measured; with ``--baseline`` (an
earlier revision's checkout) the same scans by that revision, alternating. tests/test_large_groups.py
runs the same captures, smaller but with wide keys, under a small heap.
"""

from __future__ import annotations

import json
import tempfile
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path

from benchmarks import harness
from benchmarks.harness import HERE, capture, measurement, option, table, trees

T0 = 1_767_225_600_000
TXN_ID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:99"


def _templates() -> tuple[dict, dict, dict, dict]:
    """A data event (update and create) and the BEGIN and END of its transaction, as kcat lines, from the generator."""
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        write_capture(generate("mysql", events=60, seed=1), path)
        lines = [json.loads(x) for x in path.read_text().splitlines()]
    data = [x for x in lines if x["payload"] and x["topic"].endswith(".products")]
    update = next(x for x in data if json.loads(x["payload"])["payload"]["op"] == "u")
    create = next(x for x in data if json.loads(x["payload"])["payload"]["op"] == "c")
    markers = [x for x in lines if x["topic"].endswith(".transaction")]
    return update, create, markers[0], markers[1]


def _dump(value: dict) -> str:
    return json.dumps(value, separators=(",", ":"))


def _padded(key: dict, pad: int) -> dict:
    """``key`` with a text field of ``pad`` characters (in its schema too): a wide key makes each record
    of a group that much larger when a group is held whole (tests/test_large_groups.py)."""
    if pad:
        key["schema"]["fields"].append({"type": "string", "optional": False, "field": "pad"})
        key["payload"]["pad"] = "k" * pad
    return key


def hot_key(n: int, pad: int = 0) -> Iterator[str]:
    """One key of one partition updated ``n`` times (no transaction block), record time 1 ms apart:
    the key pass's one group. A scan finds one ``missing_create`` (the partition starts at offset 0)."""
    update, _, _, _ = _templates()
    value = json.loads(update["payload"])
    value["payload"]["transaction"] = None
    update = dict(update, key=_dump(_padded(json.loads(update["key"]), pad)))
    for i in range(n):
        p = value["payload"]
        p["source"]["pos"], p["source"]["ts_ms"], p["ts_ms"] = 1000 + i * 100, T0 + i, T0 + i + 50
        p["after"]["quantity"] = i % 30_000
        yield json.dumps(dict(update, partition=0, offset=i, ts=T0 + i + 60, payload=_dump(value)))


def one_transaction(n: int, pad: int = 0) -> Iterator[str]:
    """One transaction of ``n`` inserts of distinct keys over three partitions, its BEGIN and its END
    (event_count ``n``): the transaction pass's one group. A scan finds nothing."""
    _, create, begin, end = _templates()

    def marker(line: dict, offset: int, ts: int, **fields: object) -> str:
        value, key = json.loads(line["payload"]), json.loads(line["key"])
        value["payload"].update(id=TXN_ID, **fields)
        key["payload"]["id"] = TXN_ID
        return json.dumps(dict(line, partition=0, offset=offset, ts=ts, key=_dump(key), payload=_dump(value)))

    yield marker(begin, 0, T0)
    value, key = json.loads(create["payload"]), _padded(json.loads(create["key"]), pad)
    for i in range(n):
        p = value["payload"]
        p["source"]["pos"], p["source"]["ts_ms"], p["ts_ms"] = 1000 + i * 100, T0, T0 + 50 + i // 100
        p["after"]["id"] = key["payload"]["id"] = 100_000 + i
        p["transaction"] = {"id": TXN_ID, "total_order": i + 1, "data_collection_order": i + 1}
        yield json.dumps(dict(create, partition=i % 3, offset=i // 3, ts=T0 + 60 + i // 100, key=_dump(key),
                              payload=_dump(value)))
    yield marker(end, 1, T0 + 61 + n // 100, event_count=n,
                 data_collections=[{"data_collection": "inventory.products", "event_count": n}])


def snapshot(n: int, pad: int = 0) -> Iterator[str]:
    """The initial snapshot of one table: ``n`` reads (op ``r``) of distinct keys over three partitions,
    the last marked ``last``, then one insert: the table pass's one group (and ``n`` keys of one read
    each for the key pass). A scan finds nothing."""
    _, create, _, _ = _templates()
    value, key = json.loads(create["payload"]), _padded(json.loads(create["key"]), pad)
    p = value["payload"]
    p["transaction"], p["before"] = None, None
    for i in range(n):
        p["op"] = "r"
        p["source"]["snapshot"] = "last" if i == n - 1 else ("first" if i == 0 else "true")
        p["source"]["pos"], p["source"]["ts_ms"], p["ts_ms"] = 1000, T0, T0 + 50 + i // 100
        p["after"]["id"] = key["payload"]["id"] = 100_000 + i
        yield json.dumps(dict(create, partition=i % 3, offset=i // 3, ts=T0 + 60 + i // 100, key=_dump(key),
                              payload=_dump(value)))
    p["op"], p["source"]["snapshot"] = "c", "false"
    p["source"]["pos"], p["source"]["ts_ms"], p["ts_ms"] = 2000, T0 + 70 + n // 100, T0 + 80 + n // 100
    p["after"]["id"] = key["payload"]["id"] = 100_000 + n
    yield json.dumps(dict(create, partition=n % 3, offset=n // 3, ts=T0 + 90 + n // 100, key=_dump(key),
                          payload=_dump(value)))


def write(path: Path, lines: Iterator[str]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
    return path


def scan(capture: Path, tree: Path | None = None, config: Path | None = None, check: bool = True) -> dict:
    """A whole ``cdc-monitor scan`` process over ``capture`` (with ``tree``'s package when given): seconds,
    peak memory, the report (``check``: the scan must succeed; else its exit and last error line)."""
    got = harness.scan([str(capture)], tree, *(["--config", str(config.resolve())] if config else []), check=False)
    assert got["exit"] == 0 or not check, got
    return got


@measurement("large-groups", option("--hot-key", type=int, default=1_000_000, help="updates of the one key"),
             option("--transaction", type=int, default=600_000, help="events of the one transaction"),
             option("--snapshot", type=int, default=1_000_000, help="reads of the one table's initial snapshot"),
             option("--mixed", type=int, default=600_000, help="events of a generated MySQL window with schemas (0: none)"),
             option("--heap", default="512m", help="spark.driver.memory of every scan"))
def large_groups(opts: Namespace) -> None:
    """Large groups under a fixed heap: a hot key, one transaction, one table's snapshot, a mixed window."""
    work = HERE / "benchmarks" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    config = work / f"heap-{opts.heap}.toml"
    config.write_text(f'[spark]\n"spark.driver.memory" = "{opts.heap}"\n', encoding="utf-8")
    captures = {f"hot key ({opts.hot_key:,} updates)": write(work / f"hot-key-{opts.hot_key}.jsonl", hot_key(opts.hot_key)),
                f"one transaction ({opts.transaction:,} events)": write(work / f"one-txn-{opts.transaction}.jsonl",
                                                                        one_transaction(opts.transaction)),
                f"one table's snapshot ({opts.snapshot:,} reads)": write(work / f"snapshot-{opts.snapshot}.jsonl",
                                                                         snapshot(opts.snapshot))}
    if opts.mixed:
        captures[f"mixed MySQL window ({opts.mixed:,} events, schemas)"] = Path(capture("mysql", opts.mixed, 7)[0])
    rows = []
    for name, path in captures.items():
        for tree_name, tree in trees(opts).items():
            got = scan(path, tree, config, check=False)
            rep = got.get("report")
            found = rep and ({f["rule"]: f["count"] for f in rep["summary"].get("finding_counts", [])}
                             or rep["summary"]["findings_by_check"])
            rows.append([name, tree_name, got["exit"], got["seconds"], rep["timings_seconds"]["findings"] if rep else "",
                         round(got["peak_mb"]), round(got["jvm_mb"]),
                         json.dumps({k: v for k, v in found.items() if v}) if rep else got["error"]])
    table(f"every scan a whole process under a {opts.heap} heap", ["window", "tree", "exit", "seconds", "findings job (s)",
          "peak RSS (MB)", "JVM (MB)", "findings"], rows)


if __name__ == "__main__":  # (tests/test_large_groups.py names this command)
    import sys

    from benchmarks.__main__ import main

    main(["large-groups", *sys.argv[1:]])
