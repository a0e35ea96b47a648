"""Continuous monitoring: micro-batches over the Kafka stream reader with state carried between them."""
