"""watch's stream of Kafka records, by either reader: the bundled Python data source (``cdc_kafka``:
its offsets in Spark's checkpoint, gap rows for offsets lost or rewound) or Spark's own Kafka
connector (``kafka``: Spark's offsets, checkpointed the same way; a loss fails the query, loudly,
as Spark's ``failOnDataLoss`` does). Both give the Kafka source's columns."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdc_monitor.sources.base import KAFKA_COLUMNS
from cdc_monitor.sources.kafka.options import DEFAULT_EXCLUDE
from cdc_monitor.vocabulary import KafkaReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PYTHON, SPARK = KafkaReader.PYTHON.value, KafkaReader.SPARK.value
# the options both readers read alike (the rest of the bundled reader's are its own)
SHARED = ("startingOffsets", "maxOffsetsPerTrigger")


def subscribe_pattern(options: Mapping[str, str], topics: list[str]) -> str:
    """Spark's ``subscribePattern`` (whole topic names) for what the bundled reader selects: the
    ``--topics`` regex (or every topic but internal ones) and the transaction topics it adds."""
    chosen = options.get("subscribePattern")
    wanted = f"(?:{chosen})" if chosen else f"(?!{DEFAULT_EXCLUDE.removeprefix('^')}).*"
    extra = [re.escape(t) for t in topics if not re.fullmatch(chosen or ".*", t)]
    return "|".join([wanted, *extra])


def spark_stream_options(options: Mapping[str, str], topics: list[str]) -> dict[str, str]:
    out = {k: v for k, v in options.items() if k.startswith("kafka.") or k in SHARED}
    out |= {"subscribePattern": subscribe_pattern(options, topics), "includeHeaders": "true", "failOnDataLoss": "true"}
    return out


def open_stream(spark: SparkSession, options: Mapping[str, str], reader: str = PYTHON,
                topics: list[str] | None = None) -> DataFrame:
    """The streaming frame of Kafka records ``options`` select; ``topics``: those selected at start."""
    if reader == SPARK:
        from cdc_monitor.sources.kafka.source import connector_missing, spark_kafka_available

        if not spark_kafka_available(spark):
            raise connector_missing()
        frame = spark.readStream.format("kafka").options(**spark_stream_options(options, topics or [])).load()
        return frame.select(*KAFKA_COLUMNS)
    from cdc_monitor.sources.kafka.datasource import FORMAT
    from cdc_monitor.sources.kafka.source import register

    register(spark)
    return spark.readStream.format(FORMAT).options(**options).load()
