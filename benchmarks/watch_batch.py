"""watch's micro-batches alone (no broker, no process start): a clean MySQL stream cut at
record-time quantiles into batches of ~``--batch`` records, run through the real streaming query
(stateful carry operator on RocksDB, then the engine) from Parquet files; prints each batch's
seconds and stages (the first is cold). Target (issue: one engine): < 3 s warm for 1k records.
``--plain``: the same stream without transaction metadata (Debezium's default) and with JSON
values without schemas, whose batches plan no transaction or embedded-schema check.
Usage: python -m benchmarks.watch_batch [--events 3000] [--batch 1000] [--plain]"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--plain", action="store_true", help="no transaction metadata, no schemas")
    args = ap.parse_args()

    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from tests.support.watch_stream import run_stream, stage_stream

    spark = get_spark()
    with tempfile.TemporaryDirectory() as tmp:
        plain = {"schemas": False, "transaction_metadata": False} if args.plain else {}
        stage_stream(spark, Path(tmp), args.events, args.batch, **plain)
        started = time.perf_counter()
        outcomes, _ = run_stream(spark, Path(tmp) / "in", Path(tmp) / "ckpt", WatchSettings())
        took = time.perf_counter() - started
    batches = [{"records": o.records, "seconds": o.seconds, "stages": o.stages} for o in outcomes]
    total = sum(o.records for o in outcomes)
    print(json.dumps({"batches": batches, "records_per_s": round(total / took), "target_warm_seconds": 3}, indent=1))


if __name__ == "__main__":
    main()
