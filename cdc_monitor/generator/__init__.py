"""Synthetic Debezium traffic (every flavour, optional faults with ground-truth labels)."""

from cdc_monitor.generator.flavours import FLAVOUR_NAMES
from cdc_monitor.generator.records import Traffic
from cdc_monitor.generator.traffic import Generator, generate

__all__ = ["FLAVOUR_NAMES", "Generator", "Traffic", "generate"]
