"""The rules the generator injects a fault for, derived from the rules the checks declare: every
rule of the catalogue a generated stream can exhibit, and which of them a flavour and its settings
(schemas, tombstones, partitions, Avro, transaction metadata) leave applicable. Each has a handler
in ``faults.py`` (``_<rule name>``) that places it and labels the one record that breaks it."""

from __future__ import annotations

from cdc_monitor.checks.decode import INVALID_JSON
from cdc_monitor.checks.lag import INVALID_EVENT_TS, INVALID_SOURCE_TS, LAG_SPIKE, NEGATIVE_LAG
from cdc_monitor.checks.ordering import (
    DUPLICATE,
    EVENT_AFTER_DELETE,
    KEY_IN_MULTIPLE_PARTITIONS,
    MISSING_CREATE,
    POSITION_REGRESSION,
    REPLAYED_AFTER_RESTART,
    TOMBSTONE_WITHOUT_DELETE,
)
from cdc_monitor.checks.schema import (
    BEFORE_AFTER_MISMATCH,
    INVALID_AVRO_NAME,
    INVALID_OP,
    KEY_PAYLOAD_MISMATCH,
    KEY_SCHEMA_NAME_MISMATCH,
    MISSING_SOURCE_FIELD,
    NON_OPTIONAL_NULL,
    OP_MISSING,
    TYPE_MISMATCH,
)
from cdc_monitor.checks.snapshots import SNAPSHOT_OP_MISMATCH, SNAPSHOT_RESTARTED
from cdc_monitor.checks.source_block import INVALID_POSITION
from cdc_monitor.checks.transactions import (
    COLLECTION_COUNT_MISMATCH,
    COUNT_MISMATCH,
    END_BEFORE_BEGIN,
    MISSING_BEGIN,
    MISSING_END,
    ORDER_GAP,
    ORPHAN_EVENT,
)
from cdc_monitor.generator.wire_faults import AVRO_INEXPRESSIBLE, AVRO_WIRE_RULES
from cdc_monitor.vocabulary import SNAPSHOT_OPS_UNDOCUMENTED

TX_RULES = (MISSING_END.name, MISSING_BEGIN.name, COUNT_MISMATCH.name, COLLECTION_COUNT_MISMATCH.name, ORDER_GAP.name,
            ORPHAN_EVENT.name, END_BEFORE_BEGIN.name)
SCHEMA_ON_RULES = (KEY_SCHEMA_NAME_MISMATCH.name, TYPE_MISMATCH.name, NON_OPTIONAL_NULL.name, INVALID_AVRO_NAME.name)
ALL_RULES = (
    INVALID_JSON.name,
    LAG_SPIKE.name, NEGATIVE_LAG.name, INVALID_SOURCE_TS.name, INVALID_EVENT_TS.name,
    *TX_RULES,
    *SCHEMA_ON_RULES, OP_MISSING.name, INVALID_OP.name, BEFORE_AFTER_MISMATCH.name, MISSING_SOURCE_FIELD.name,
    INVALID_POSITION.name, KEY_PAYLOAD_MISMATCH.name,
    POSITION_REGRESSION.name, DUPLICATE.name, REPLAYED_AFTER_RESTART.name, MISSING_CREATE.name, EVENT_AFTER_DELETE.name,
    TOMBSTONE_WITHOUT_DELETE.name,
    KEY_IN_MULTIPLE_PARTITIONS.name, SNAPSHOT_RESTARTED.name, SNAPSHOT_OP_MISMATCH.name,
)




def applicable_rules(flavour: str, schemas: bool, tombstones: bool, partitions: int,
                     value_format: str = "json", transaction_metadata: bool = True) -> list[str]:
    rules = list(ALL_RULES)
    if value_format != "json":
        rules = [r for r in rules if r not in AVRO_INEXPRESSIBLE]
    if value_format == "avro":
        rules += AVRO_WIRE_RULES
    if flavour == "dtle" or not transaction_metadata:  # (dtle writes none)
        rules = [r for r in rules if r not in TX_RULES]
    if not schemas:
        rules = [r for r in rules if r not in SCHEMA_ON_RULES]
    if not tombstones:
        rules.remove(TOMBSTONE_WITHOUT_DELETE.name)
    if partitions < 2:
        rules.remove(KEY_IN_MULTIPLE_PARTITIONS.name)
    if flavour in SNAPSHOT_OPS_UNDOCUMENTED:  # (dtle's snapshot flag is not judged against its op)
        rules.remove(SNAPSHOT_OP_MISMATCH.name)
    if flavour == "mongodb":  # documents are JSON text to their schema: no column type or null to break
        rules = [r for r in rules if r not in (TYPE_MISMATCH.name, NON_OPTIONAL_NULL.name)]
    return rules
