"""Decoding: Kafka-source records -> one normalised events frame, in one from_json pass."""

from cdc_monitor.decoding.events import EVENT_KINDS, decode_records, without_texts

__all__ = ["EVENT_KINDS", "decode_records", "without_texts"]
