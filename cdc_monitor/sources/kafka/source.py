"""``read_kafka``: plan one bounded window on the driver, then read it with either reader.

The plan (one offset range per partition, plus the record-time bounds) is made once, here, so
the Python data source and Spark's built-in ``kafka`` format read exactly the same records.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from cdc_monitor.errors import EnvironmentProblem, UsageError
from cdc_monitor.sources.base import KAFKA_COLUMNS, KAFKA_SCHEMA, SourceResult
from cdc_monitor.sources.kafka.client import BrokerInspector
from cdc_monitor.sources.kafka.datasource import FORMAT, PLANNED_RANGES, KafkaDataSource
from cdc_monitor.sources.kafka.options import KafkaOptions
from cdc_monitor.sources.kafka.planner import OffsetRange, plan_ranges
from cdc_monitor.vocabulary import KAFKA_READERS, KafkaReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

READERS = KAFKA_READERS
MISSING_SOURCE = ("KAFKA_DATA_SOURCE_NOT_ENABLED", "DATA_SOURCE_NOT_FOUND")


def register(spark: SparkSession) -> None:
    spark.dataSource.register(KafkaDataSource)


def spark_kafka_available(spark: SparkSession) -> bool:
    """True when Spark's own Kafka connector (spark-sql-kafka) is on the classpath: asked of Spark's
    reader, which names a missing connector by its error condition (no data is read: without a
    topic the connector refuses its options)."""
    try:
        spark.read.format("kafka").load()
    except Exception as err:  # which error it is, is the answer
        condition = getattr(err, "getCondition", None)
        return not (callable(condition) and condition() in MISSING_SOURCE)
    return True


def connector_missing() -> EnvironmentProblem:
    """What ``--kafka-reader spark`` says when Spark's Kafka connector is not on the classpath."""
    return EnvironmentProblem(
        "--kafka-reader spark needs Spark's Kafka connector: add spark.jars.packages = "
        "\"org.apache.spark:spark-sql-kafka-0-10_2.13:<your Spark version>\" to --config's [spark] table (or "
        "--packages with spark-submit, or the jars to spark.jars), or use --kafka-reader python")


def spark_reader_options(opts: KafkaOptions, ranges: list[OffsetRange]) -> dict[str, str]:
    """Options for ``spark.read.format("kafka")`` covering exactly ``ranges``."""
    live = [r for r in ranges if r.end > r.start]
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for r in live:
        assign.setdefault(r.topic, []).append(r.partition)
        starting.setdefault(r.topic, {})[str(r.partition)] = r.start
        ending.setdefault(r.topic, {})[str(r.partition)] = r.end
    out = {f"kafka.{k}": v for k, v in opts.client_conf.items()}
    out |= {"kafka.bootstrap.servers": opts.bootstrap_servers, "assign": json.dumps(assign),
            "startingOffsets": json.dumps(starting), "endingOffsets": json.dumps(ending),
            "includeHeaders": "true", "failOnDataLoss": "true"}
    return out


def _time_filter(frame: DataFrame, opts: KafkaOptions) -> DataFrame:
    ms = F.unix_millis("timestamp")
    if opts.start_ms is not None:
        frame = frame.where(ms >= opts.start_ms)
    if opts.end_ms is not None:
        frame = frame.where(ms < opts.end_ms)
    return frame


def read_kafka(spark: SparkSession, options: Mapping[str, str], reader: str = "python",
               ranges: list[OffsetRange] | None = None) -> SourceResult:
    """A bounded window of Kafka records as a Kafka-source frame; ``reader`` python|spark|auto."""
    if reader not in READERS:
        raise UsageError(f"--kafka-reader {reader!r} is not one of {', '.join(READERS)}")
    opts = KafkaOptions.from_options(options)
    planned_at = time.time()
    if ranges is None:
        with BrokerInspector(opts) as insp:
            ranges = plan_ranges(opts, insp)
    available = reader != "python" and spark_kafka_available(spark)  # asked once: a probe of Spark's reader
    use_spark = reader == KafkaReader.SPARK or (reader == KafkaReader.AUTO and available)
    if use_spark and not available:
        raise connector_missing()
    if not any(r.end > r.start for r in ranges):
        frame = spark.createDataFrame([], KAFKA_SCHEMA)
    elif use_spark:
        frame = _time_filter(spark.read.format("kafka").options(**spark_reader_options(opts, ranges)).load(), opts)
        frame = frame.select(*KAFKA_COLUMNS)
    else:
        register(spark)
        planned = {k: v for k, v in options.items() if v is not None} | {PLANNED_RANGES: json.dumps([r.to_dict() for r in ranges])}
        frame = spark.read.format(FORMAT).options(**planned).load()
    description = opts.describe() | {
        "reader": "spark" if use_spark else "python", "planned_at_ms": int(planned_at * 1000),
        "ranges": [r.to_dict() for r in ranges],
    }
    return SourceResult(records=frame, rejects=None, description=description)

