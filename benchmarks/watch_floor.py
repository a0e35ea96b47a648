"""watch's floor: what a micro-batch of N records costs here before any check runs.

`python -m benchmarks.watch_floor [--events 40000] [--batch 20000]` stages one clean MySQL stream
with transactions and schemas (as `benchmarks.watch_batch` does) as Parquet files of ~N records,
one per trigger, and runs four streaming queries over them, side by side in one session, each
with its own checkpoint (RocksDB state store, as watch):

1. *stream*: the records read and counted in `foreachBatch` (Spark's micro-batch floor);
2. *decode*: the same, decoded by cdc-monitor's decoder (written to Spark's no-op sink); the file
   source reads a batch's file as one partition, so *decode, spread* repartitions it over the
   cores first, as a Kafka batch of several topic-partitions is read;
3. *state*: watch's two stateful operators (key histories on the JVM, transactions and lag in
   Python), their output counted: what watch pays before its engine;
4. *watch*: the whole of watch (operators, then the engine's decode and checks).

Each batch's time is Spark's `triggerExecution` for it; the first batch of each query is cold and
left out of the warm figures. The watch issue's target (catch-up >= 0.1x the orjson parse limit,
about 20k records/s here) is a ~20k-record batch in about a second.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _run(spark: SparkSession, source: Path, checkpoint: Path, shape: Callable[[DataFrame], DataFrame],
         on_batch: Callable[[DataFrame, int], None]) -> list[dict]:
    from cdc_monitor.sources.base import KAFKA_SCHEMA
    from cdc_monitor.watch.carry import STREAM_CONF

    for name, value in STREAM_CONF.items():
        spark.conf.set(name, value)
    stream = spark.readStream.schema(KAFKA_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (shape(stream).writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise query.exception()
    return [{"batch": p["batchId"], "records": p["numInputRows"], "seconds": p["durationMs"]["triggerExecution"] / 1000}
            for p in (json.loads(x.json) for x in query.recentProgress) if p["numInputRows"]]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.watch_floor", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--batch", type=int, default=20_000)
    opts = ap.parse_args()
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.decoding import decode_records
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.watch.batch import WatchSettings
    from cdc_monitor.watch.carry import carry_stream
    from tests.support.watch_stream import run_stream, stage_stream

    spark = get_spark(micro_batches=True)
    caps = capabilities(spark)
    settings = WatchSettings()
    scan = ScanConfig()

    def count(frame: DataFrame, _: int) -> None:
        frame.count()

    def decoded(frame: DataFrame, _: int) -> None:
        decode_records(frame, scan.roles, session=caps).write.format("noop").mode("overwrite").save()

    def spread(frame: DataFrame, batch_id: int) -> None:
        decoded(frame.repartition(os.cpu_count() or 2), batch_id)

    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        records = stage_stream(spark, folder, opts.events, opts.batch)
        results["stream"] = _run(spark, folder / "in", folder / "c1", lambda s: s, count)
        results["decode"] = _run(spark, folder / "in", folder / "c2", lambda s: s, decoded)
        results["decode, spread"] = _run(spark, folder / "in", folder / "c5", lambda s: s, spread)
        results["state"] = _run(spark, folder / "in", folder / "c3",
                                lambda s: carry_stream(s, settings.carry(), scan, caps), count)
        started = time.perf_counter()
        outcomes, _ = run_stream(spark, folder / "in", folder / "c4", settings)
        took = time.perf_counter() - started
        results["watch"] = [{"batch": o.batch_id, "records": o.records, "seconds": round(o.seconds, 2)}
                            for o in outcomes if o.records]
    print(f"\n{records:,} records in batches of ~{opts.batch:,}; seconds per batch (first cold, then warm)\n")
    print("| query | batches | cold | warm | warm records/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, batches in results.items():
        warm = batches[1:] or batches
        per = sum(b["seconds"] for b in warm) / len(warm)
        n = sum(b["records"] for b in warm) / len(warm)
        warm_text = ", ".join(f"{b['seconds']:.2f}" for b in warm)
        print(f"| {name} | {len(batches)} | {batches[0]['seconds']:.2f} | {warm_text} | {n / per:,.0f} |")
    print(f"\nwhole watch run {took:.1f} s; batches: {json.dumps(results)}")


if __name__ == "__main__":
    main()
