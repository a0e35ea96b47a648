"""Drive watch's streaming query (the stateful carry operator + the micro-batch engine) over
static frames, one micro-batch per frame, without a broker: each frame is written as one
Parquet file and read back by Spark's file stream source, one file per trigger."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cdc_monitor.runtime.session import capabilities
from cdc_monitor.sources.base import KAFKA_COLUMNS, KAFKA_SCHEMA
from cdc_monitor.watch.batch import BatchOutcome, WatchSettings, decoded_stream, process_batch
from cdc_monitor.watch.carry import STREAM_CONF, carry_stream
from cdc_monitor.watch.state import StateStore, WatchState

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def stage(frames: list[DataFrame], folder: Path, first: int = 0) -> None:
    """Write each frame as one Parquet file, in order (the file source reads them oldest first)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, frame in enumerate(frames, start=first):
        tmp = folder.parent / f".{folder.name}-{i}"
        frame.select(*KAFKA_COLUMNS).coalesce(1).write.mode("overwrite").parquet(str(tmp))
        part = next(tmp.glob("part-*.parquet"))
        target = folder / f"batch-{i:05d}.parquet"
        part.rename(target)
        os.utime(target, (1_000_000 + i, 1_000_000 + i))


def batches_prorated(records: DataFrame, cuts: int, ahead: bool = False) -> list[DataFrame]:
    """Cut as a per-trigger cap plans (``--max-offsets-per-trigger``): every partition advances by
    the same share of its backlog. With ``ahead`` the transaction topics are read whole in the first
    batch (the extreme of a cap reading them ahead): ENDs arrive before their transactions' events."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    share = F.percent_rank().over(Window.partitionBy("topic", "partition").orderBy("offset"))
    ranked = records.withColumn("_b", F.floor(share * cuts * 0.9999).cast("int"))
    if ahead:
        ranked = ranked.withColumn("_b", F.when(F.col("topic").endswith(".transaction"), 0).otherwise(F.col("_b")))
    return [ranked.where(F.col("_b") == i).drop("_b") for i in range(cuts)]


def stage_stream(spark: SparkSession, folder: Path, events: int, batch: int, flavour: str = "mysql", **traffic: object) -> int:
    """A clean stream of ``flavour`` (``generate`` options in ``traffic``) written to ``folder``/c.jsonl, cut
    at record-time quantiles into batches of ~``batch`` records and staged in ``folder``/in, one
    file per batch (the benchmarks' micro-batches). Returns the number of records."""
    from pyspark.sql import functions as F

    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.sources.capture import read_capture

    write_capture(generate(flavour, events=events, seed=3, **traffic), folder / "c.jsonl")
    records = read_capture(spark, [str(folder / "c.jsonl")]).records.cache()
    ts = sorted(r[0] for r in records.select(F.unix_millis("timestamp")).collect())
    k = max(1, len(ts) // batch)
    bounds = [None, *[ts[len(ts) * i // k] for i in range(1, k)], None]
    frames = []
    for i in range(k):
        frame = records
        if bounds[i] is not None:
            frame = frame.where(F.unix_millis("timestamp") >= bounds[i])
        if bounds[i + 1] is not None:
            frame = frame.where(F.unix_millis("timestamp") < bounds[i + 1])
        frames.append(frame)
    stage(frames, folder / "in")
    return len(ts)


def run_stream(spark: SparkSession, source: Path | None, checkpoint: Path, settings: WatchSettings,
               observe: Callable[[BatchOutcome], None] | None = None, stream: DataFrame | None = None,
               progress: list[dict] | None = None) -> tuple[list[BatchOutcome], WatchState]:
    """Run the query until every staged file (or what ``stream``, a Kafka stream, has now) is
    processed (availableNow); returns the outcomes of this run and the driver state as saved.
    ``observe`` sees each outcome as its batch ends; ``progress`` gets the query's progress reports
    (Spark's ``recentProgress``: per micro-batch its ``durationMs``, planning included)."""
    for name, value in STREAM_CONF.items():
        spark.conf.set(name, value)
    store = StateStore(checkpoint)
    session = capabilities(spark)
    holder = {"state": store.load()}
    outcomes: list[BatchOutcome] = []

    def on_batch(frame: DataFrame, batch_id: int) -> None:
        outcome, holder["state"] = process_batch(session, frame, batch_id, holder["state"], store, settings)
        outcomes.append(outcome)
        if observe is not None:
            observe(outcome)

    if stream is None:
        stream = spark.readStream.schema(KAFKA_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    carried = decoded_stream(carry_stream(stream, settings.carry(), settings.scan, session), settings.scan)
    query = (carried.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint / "spark"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise query.exception()
    if progress is not None:
        progress.extend(query.recentProgress)
    return outcomes, store.load()


def stream_settings(options: dict[str, str]) -> tuple[WatchSettings, list[str]]:
    """watch's settings for the topics a Kafka stream's ``options`` select (as the watch verb makes
    them), and those topics."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.sources.kafka.client import BrokerInspector
    from cdc_monitor.sources.kafka.options import KafkaOptions
    from cdc_monitor.sources.kafka.planner import select_topics

    with BrokerInspector(KafkaOptions.from_options(options)) as insp:
        existing = insp.topics()
        topics = select_topics(KafkaOptions.from_options(options), existing)
    cfg = ScanConfig()
    return WatchSettings(scan=cfg, transaction_servers=cfg.roles.transaction_servers(topics),
                         topic_partitions=tuple((t, existing[t]) for t in topics)), topics
