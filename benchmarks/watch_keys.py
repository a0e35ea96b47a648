"""watch's state with many distinct keys: ``--keys`` inserts, each of a new key of one MySQL table (or,
``--traffic``, the generator's traffic of --keys events: MySQL, or ``--flavour``'s), streamed through watch's real query (the
stateful operator on RocksDB, then the engine) in micro-batches of ``--batch`` records from Parquet
files, as ``benchmarks batch`` does. After every batch (stderr): the keys so far, its seconds, the driver's
Python RSS, the JVM's, the Python workers' and the state store's rows. ``--bytes``: the checkpoint after
the last batch, on disk, per state row (the whole Spark checkpoint folder, its retained versions included,
over ``numRowsTotal``: the state bytes per live key); ``--changelog on|off`` and ``--retain N`` compare
RocksDB changelog checkpointing and ``spark.sql.streaming.minBatchesToRetain``; ``--max-keys N`` is watch's
``[watch] max_keys`` (key histories held at most; 0: only the TTL bounds them).
``python -m benchmarks watch-keys [--keys N] [--batch N] [--traffic] [--flavour F] [--max-keys N] [--bytes]
[--baseline TREE]``, or
``python -m benchmarks.watch_keys`` with the same options."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from benchmarks.harness import child, log, measurement, option, rss, table, tree_of, trees
from cdc_monitor.generator.flavours import FLAVOURS

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


def child_keys(keys: int, batch: int, changelog: str | None, retain: int | None, flavour: str | None,
               max_keys: int | None) -> None:
    from cdc_monitor.watch import carry

    flag = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
    if changelog:  # (the dict run_stream sets on the session)
        carry.STREAM_CONF[flag] = "true" if changelog == "on" else "false"
    if retain:
        carry.STREAM_CONF["spark.sql.streaming.minBatchesToRetain"] = str(retain)
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from cdc_monitor.watch.runner import driver_rss
    from tests.support.watch_stream import run_stream, stage, stage_stream

    spark = get_spark()
    jvm = next(p for p in tree_of(os.getpid())[1:] if rss(p)[1] == "jvm")  # the driver JVM (spark-submit's child)
    rows: list[dict] = []
    started = time.perf_counter()

    def mb(pids: list[int], kind: str) -> float:
        return round(sum(r for r, k in map(rss, pids) if k == kind) / 2**20, 1)

    def observe(outcome) -> None:  # type: ignore[no-untyped-def]
        query = spark.streams.active[0] if spark.streams.active else None
        ops = ((query.lastProgress if query is not None else None) or {}).get("stateOperators") or []
        rows.append({"batch": outcome.batch_id, "keys": (outcome.batch_id + 1) * batch, "seconds": outcome.seconds,
                     "driver_python_rss_mb": round(driver_rss() / 2**20, 1), "jvm_rss_mb": mb([jvm], "jvm"),
                     "python_workers_rss_mb": mb(tree_of(jvm)[1:], "python"),
                     "state_rows_previous_batch": sum(o.get("numRowsTotal", 0) for o in ops)})
        log(json.dumps(rows[-1]))

    with tempfile.TemporaryDirectory(prefix="cdc-watch-keys-") as tmp:
        if flavour:
            stage_stream(spark, Path(tmp), events=keys, batch=batch, flavour=flavour)
        else:
            stage([insert_frame(spark, first, min(batch, keys - first)) for first in range(0, keys, batch)], Path(tmp) / "in")
        progress: list = []
        settings = WatchSettings() if max_keys is None else WatchSettings(max_keys=max_keys)
        run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", settings, observe=observe, progress=progress)
        took = time.perf_counter() - started
        disk = sum(p.stat().st_size for p in (Path(tmp) / "ckpt" / "spark").rglob("*") if p.is_file())
        last_rows = sum(o.get("numRowsTotal", 0) for o in (progress[-1].get("stateOperators") or []))
    print(json.dumps({"batches": len(rows), "seconds": round(took, 1), "records_per_s": round(keys / took),
                      "state_rows": last_rows, "checkpoint_bytes": disk, "bytes_per_row": round(disk / max(last_rows, 1), 1),
                      "changelog": carry.STREAM_CONF.get(flag, "false"),
                      "retain": carry.STREAM_CONF["spark.sql.streaming.minBatchesToRetain"], "max_keys": settings.max_keys,
                      "driver_python_rss_mb": [rows[0]["driver_python_rss_mb"], max(r["driver_python_rss_mb"] for r in rows)],
                      "jvm_rss_mb": [rows[0]["jvm_rss_mb"], rows[-1]["jvm_rss_mb"]]}))


@measurement("watch-keys", option("--keys", type=int, default=1_000_000), option("--batch", type=int, default=20_000),
             option("--bytes", action="store_true", help="the checkpoint's bytes per state row after the last batch"),
             option("--changelog", choices=["on", "off"], help="RocksDB changelog checkpointing (default: the tree's)"),
             option("--retain", type=int, help="spark.sql.streaming.minBatchesToRetain"),
             option("--traffic", action="store_true", help="the generator's traffic (--flavour's) instead of inserts"),
             option("--flavour", choices=sorted(FLAVOURS), help="--traffic of this generator flavour (default mysql)"),
             option("--max-keys", type=int, help="watch's [watch] max_keys (default: its default; 0: only the TTL)"), events="0")
def watch_keys(opts: Namespace) -> None:
    """watch's state with many keys: the memory of driver and JVM, and (--bytes) the state bytes per key."""
    flavour = opts.flavour or ("mysql" if opts.traffic else None)
    got = {k: child("benchmarks.watch_keys:child_keys", opts.keys, opts.batch, opts.changelog, opts.retain, flavour,
                    opts.max_keys, tree=t).json() for k, t in trees(opts, "watch").items()}
    what = f"the generator's {flavour} traffic" if flavour else "inserts of new keys"
    cols = ["state_rows", "checkpoint_bytes", "bytes_per_row", "changelog", "retain", "max_keys"] if opts.bytes else \
        ["seconds", "records_per_s", "driver_python_rss_mb", "jvm_rss_mb", "state_rows"]
    table(f"{opts.keys:,} {'events' if flavour else 'keys'} of {what}, batches of {opts.batch:,}", ["tree", *cols],
          [[k, *(json.dumps(r[c]) if isinstance(r[c], list) else r[c] for c in cols)] for k, r in got.items()])


if __name__ == "__main__":
    from benchmarks.__main__ import main

    main(["watch-keys", *sys.argv[1:]])
