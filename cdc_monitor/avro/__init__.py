"""Avro values and keys: Kafka Connect schemas as Avro schemas, the Confluent wire format, a Schema
Registry client, and Avro-JSON text (``kafka-avro-console-consumer`` / ``kcat -s avro``)."""
