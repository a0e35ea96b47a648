"""What every source hands to the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import types as T

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation

# Exactly the columns (names, types, order) of Spark's built-in Kafka source.
KAFKA_SCHEMA = T.StructType(
    [
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField(
            "headers",
            T.ArrayType(
                T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
            ),
        ),
    ]
)
KAFKA_COLUMNS = [f.name for f in KAFKA_SCHEMA.fields]


@dataclass
class SourceResult:
    """Records in Kafka-source shape, plus input that could not even be read as a record.

    ``rejects`` has columns ``file`` and ``line`` (the text, truncated); it is None for sources
    that cannot produce such input (Kafka itself). ``rejects_observed``, when set, counts them
    (metric ``rejects``) as a side effect of the first action on ``records``: a pipeline that has
    run one can skip a second pass over the input when it is 0.
    """

    records: DataFrame
    rejects: DataFrame | None = None
    rejects_observed: Observation | None = None
    description: dict[str, object] = field(default_factory=dict)

    @property
    def topics_read(self) -> set[str] | None:
        """The topics a Kafka window read, silent ones included (None for a capture: it names only
        the topics that had records)."""
        if self.description.get("kind") != "kafka":
            return None
        ranges: Any = self.description.get("ranges") or ()
        return {r["topic"] for r in ranges}
