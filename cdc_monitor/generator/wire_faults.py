"""Faults of Avro traffic: which JSON faults Avro cannot carry, and the wire-format faults instead
(mixed into generator/faults.FaultPlan; the bytes are damaged when serialized, generator/avro_traffic.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.decode import INVALID_JSON
from cdc_monitor.checks.registry_schemas import UNDECODABLE_AVRO, UNKNOWN_SCHEMA_ID
from cdc_monitor.checks.schema import MISSING_SOURCE_FIELD, OP_MISSING
from cdc_monitor.generator.flavours import TABLES
from cdc_monitor.generator.records import STANDALONE_EV

if TYPE_CHECKING:
    from cdc_monitor.generator.traffic import Generator

# faults whose record no Avro schema of Debezium's can carry (a required field removed, text that is
# no encoding of the schema); Avro traffic has its own wire-format faults instead
AVRO_INEXPRESSIBLE = (INVALID_JSON.name, OP_MISSING.name, MISSING_SOURCE_FIELD.name)
AVRO_WIRE_RULES = (UNDECODABLE_AVRO.name, UNKNOWN_SCHEMA_ID.name)
VALUE_FORMATS = ("json", "avro", "avro-json")


class WireFaults:
    g: Generator

    def new_pk(self, table: Any) -> int: ...  # FaultPlan's
    def label(self, rule: str, rec: Any, txn_id: str | None = None) -> None: ...
    def variant(self, rule: str, advance: bool = False) -> int: ...

    def _wire_fault(self, rule: str, txn_no: int, fault: str) -> None:
        """A standalone create whose serialized value is damaged (``Rec.wire_fault``)."""
        g = self.g
        table = g.rng.choice(TABLES)
        pk = self.new_pk(table)
        rec = g.change(table, pk, "c", None, g.row(table, pk, 0), txn=None, txn_no=txn_no, ev=STANDALONE_EV,
                       commit_seq=g.seq)
        rec.wire_fault = fault
        self.label(rule, rec)

    def _undecodable_avro(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """Variants: the body cut short; bytes left over after the record."""
        variant = self.variant(UNDECODABLE_AVRO.name, advance=True) % 2
        self._wire_fault(UNDECODABLE_AVRO.name, txn_no, ("truncated", "trailing")[variant])

    def _unknown_schema_id(self, txn_no: int, hooks: dict[str, Any]) -> None:
        self._wire_fault(UNKNOWN_SCHEMA_ID.name, txn_no, "unknown_id")
