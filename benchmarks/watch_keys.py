"""watch's memory with many distinct keys (on demand): ``--keys`` inserts, each of a new key of one
MySQL table, streamed through watch's real query (the stateful carry operator on RocksDB, then the
engine) in micro-batches of ``--batch`` records from Parquet files, as ``benchmarks.watch_batch``
does. After every batch it prints the keys seen so far, the batch's seconds, the driver's Python
RSS (what ``cdc_monitor_state_driver_rss_bytes`` reports), the JVM's RSS (in local mode the
executor too: RocksDB's memory and files live there), the Python workers' RSS and the state
store's rows as Spark reported them for the previous batch.
Target (issue: watch at production rates): the driver's RSS stays flat while the keys grow.
Measured 2026-11-24 (2 cores, 1M keys, 50 batches of 20k): driver Python RSS 122.9 -> 124.2 MB,
state 980,001 rows (49th batch), JVM 1.8 GB -> at most 3.1 GB, batches 27-36 s (~660 records/s).
With the key histories on the JVM (``--keys 200000``, old and new code back to back): warm batches
16.1-19.8 s -> 8.2-11.7 s, 209.5 s -> 122.2 s in all, driver Python RSS 122.9-123.9 MB either way.
With ``--bytes``: the checkpoint after the last batch, on disk, per state row (the issue's "state
bytes per live key": the whole Spark checkpoint folder, state and its retained versions included,
over ``numRowsTotal``), with ``--changelog on|off`` (RocksDB changelog checkpointing) and ``--retain N``
(``spark.sql.streaming.minBatchesToRetain``) to compare the settings. Runs with an older tree's
``cdc_monitor`` too (``cd TREE && PYTHONPATH=TREE python /path/to/benchmarks/watch_keys.py``).
Usage: python -m benchmarks.watch_keys [--keys 1000000] [--batch 20000] [--traffic] [--bytes] [--changelog on|off]
[--retain N]"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.measure import _rss_and_kind, _tree

TOPIC = "mysql_server_1.inventory.customers"
BASE_MS = 1_767_225_603_000


def insert_frame(spark, first: int, count: int):
    """``count`` Debezium MySQL inserts (JSON converter, schemas off) of keys ``first``.., in
    Kafka-source shape over three partitions, offsets from 0 in each, one millisecond apart."""
    from pyspark.sql import functions as F

    from cdc_monitor.sources.base import KAFKA_SCHEMA

    n = F.col("id")
    ts = F.lit(BASE_MS) + n
    value = F.format_string(
        '{"before":null,"after":{"id":%d,"first_name":"f-%d","last_name":"l-%d","email":"e-%d"},'
        '"source":{"version":"2.7.3.Final","connector":"mysql","name":"mysql_server_1","ts_ms":%d,'
        '"snapshot":"false","db":"inventory","table":"customers","server_id":223344,"gtid":null,'
        '"file":"mysql-bin.000003","pos":%d,"row":0,"thread":7,"query":null},'
        '"op":"c","ts_ms":%d,"transaction":null}', n, n, n, n, ts, F.lit(154) + n, ts + F.lit(200))
    return spark.range(first, first + count).select(
        F.format_string('{"id":%d}', n).cast("binary").alias("key"), value.cast("binary").alias("value"),
        F.lit(TOPIC).alias("topic"), (n % 3).cast("int").alias("partition"), F.floor(n / 3).alias("offset"),
        F.timestamp_millis(ts).alias("timestamp"), F.lit(0).alias("timestampType"),
        F.lit(None).cast(KAFKA_SCHEMA["headers"].dataType).alias("headers"))


def rss_mb(pids: list[int], kind: str) -> float:
    return round(sum(r for r, k in map(_rss_and_kind, pids) if k == kind) / 2**20, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--bytes", action="store_true", help="the checkpoint's bytes per state row after the last batch")
    ap.add_argument("--changelog", choices=["on", "off"], help="RocksDB changelog checkpointing (default: the tree's)")
    ap.add_argument("--retain", type=int, help="spark.sql.streaming.minBatchesToRetain")
    ap.add_argument("--traffic", action="store_true",
                    help="instead of inserts: the generator's MySQL traffic (schemas, updates, deletes, transactions) "
                         "of --keys events, in batches of --batch records")
    args = ap.parse_args()
    from cdc_monitor.watch import carry

    changelog = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    if args.changelog:  # (the dict run_stream sets on the session)
        carry.STREAM_CONF[changelog] = "true" if args.changelog == "on" else "false"
    if args.retain:
        carry.STREAM_CONF["spark.sql.streaming.minBatchesToRetain"] = str(args.retain)
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from cdc_monitor.watch.runner import driver_rss
    from tests.support.watch_stream import run_stream, stage

    spark = get_spark()
    import os

    # the driver JVM: this process's java descendant (PySpark starts it through spark-submit)
    jvm = next(p for p in _tree(os.getpid())[1:] if _rss_and_kind(p)[1] == "jvm")
    rows: list[dict] = []
    started = time.perf_counter()

    def observe(outcome) -> None:
        query = spark.streams.active[0] if spark.streams.active else None
        ops = ((query.lastProgress if query is not None else None) or {}).get("stateOperators") or []
        tree = _tree(jvm)
        rows.append({"batch": outcome.batch_id, "keys": (outcome.batch_id + 1) * args.batch,
                     "seconds": outcome.seconds, "driver_python_rss_mb": round(driver_rss() / 2**20, 1),
                     "jvm_rss_mb": rss_mb([jvm], "jvm"), "python_workers_rss_mb": rss_mb(tree[1:], "python"),
                     "state_rows_previous_batch": sum(o.get("numRowsTotal", 0) for o in ops)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="cdc-watch-keys-") as tmp:
        if args.traffic:
            from tests.support.watch_stream import stage_stream

            stage_stream(spark, Path(tmp), events=args.keys, batch=args.batch)
        else:
            batches = range(0, args.keys, args.batch)
            stage([insert_frame(spark, first, min(args.batch, args.keys - first)) for first in batches], Path(tmp) / "in")
        progress: list = []
        run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", WatchSettings(), observe=observe, progress=progress)
        took = time.perf_counter() - started
        spark_dir = Path(tmp) / "ckpt" / "spark"
        disk = sum(p.stat().st_size for p in spark_dir.rglob("*") if p.is_file())
        state_disk = sum(p.stat().st_size for p in (spark_dir / "state").rglob("*") if p.is_file())
        last_rows = sum(o.get("numRowsTotal", 0) for o in (progress[-1].get("stateOperators") or []))
    if args.bytes:
        print(json.dumps({"keys": args.keys, "batches": len(rows), "state_rows": last_rows,
                          "checkpoint_bytes": disk, "state_bytes": state_disk,
                          "checkpoint_bytes_per_row": round(disk / max(last_rows, 1), 1),
                          "changelog": carry.STREAM_CONF.get(changelog, "false"),
                          "retain": carry.STREAM_CONF["spark.sql.streaming.minBatchesToRetain"],
                          "seconds": round(took, 1)}, indent=1))
    first, last = rows[0], rows[-1]
    print(json.dumps({"keys": args.keys, "batches": len(rows), "seconds": round(took, 1),
                      "records_per_s": round(args.keys / took),
                      "driver_python_rss_mb": [first["driver_python_rss_mb"], last["driver_python_rss_mb"],
                                               max(r["driver_python_rss_mb"] for r in rows)],
                      "jvm_rss_mb": [first["jvm_rss_mb"], last["jvm_rss_mb"]],
                      "state_rows": last["state_rows_previous_batch"]}, indent=1))


if __name__ == "__main__":
    main()
