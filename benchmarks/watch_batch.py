"""watch's micro-batch engine alone (no broker, no process start): a clean MySQL stream cut at
record-time quantiles into batches of ~1k records, each applied with ``process_batch``; prints
each batch's seconds (the first is cold). Target (issue: one engine): < 3 s warm.
Usage: python -m benchmarks.watch_batch [--events 3000] [--batch 1000]"""

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
    args = ap.parse_args()
    from pyspark.sql import functions as F

    from cdc_monitor.generator import generate
    from cdc_monitor.generator.capture import write_capture
    from cdc_monitor.sources.capture import read_capture
    from cdc_monitor.spark import get_spark
    from cdc_monitor.watch.engine import WatchSettings, process_batch
    from cdc_monitor.watch.state import StateStore, WatchState

    spark = get_spark()
    with tempfile.TemporaryDirectory() as tmp:
        write_capture(generate("mysql", events=args.events, seed=3), Path(tmp) / "c.jsonl")
        records = read_capture(spark, [str(Path(tmp) / "c.jsonl")]).records.cache()
        ts = sorted(r[0] for r in records.select(F.unix_millis("timestamp")).collect())
        k = max(1, len(ts) // args.batch)
        bounds = [None, *[ts[len(ts) * i // k] for i in range(1, k)], None]
        store, state = StateStore(Path(tmp) / "ckpt"), WatchState()
        batches = []
        for i in range(k):
            frame = records
            if bounds[i] is not None:
                frame = frame.where(F.unix_millis("timestamp") >= bounds[i])
            if bounds[i + 1] is not None:
                frame = frame.where(F.unix_millis("timestamp") < bounds[i + 1])
            started = time.perf_counter()
            outcome, state = process_batch(spark, frame, i, state, store, WatchSettings())
            batches.append({"records": outcome.records, "seconds": round(time.perf_counter() - started, 2)})
    print(json.dumps({"batches": batches, "target_warm_seconds": 3}))


if __name__ == "__main__":
    main()
