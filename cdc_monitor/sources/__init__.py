"""Sources: the only modules that read. Each returns frames with Spark's Kafka-source columns."""

from cdc_monitor.sources.base import KAFKA_COLUMNS, KAFKA_SCHEMA, SourceResult

__all__ = ["KAFKA_COLUMNS", "KAFKA_SCHEMA", "SourceResult"]
