"""cdc-monitor: lag, completeness, conformity and ordering checks for Debezium-style CDC topics."""

__version__ = "0.1.0"
