"""Kafka as a source: options, driver-side planning, the reader and the Spark data source."""
