"""Records -> the events frame: the one decoder (a Java UDF) and the Avro stage before it."""

from cdc_monitor.decoding.events import EVENT_KINDS, decode_records

__all__ = ["EVENT_KINDS", "decode_records"]
