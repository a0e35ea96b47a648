"""Avro checks: records in the Confluent wire format that do not decode, and the registry's schemas
of each topic judged against Debezium's naming and envelope (once per topic and schema id, on the
driver: schemas are few)."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.findings import finding_row
from cdc_monitor.vocabulary import Rule, Severity, TopicRoles

if TYPE_CHECKING:
    pass

UNDECODABLE_AVRO = Rule("undecodable_avro", "decode", Severity.ERROR, "record",
    "a wire-format (Avro) key or value that does not decode with its registry schema")
UNKNOWN_SCHEMA_ID = Rule("unknown_schema_id", "decode", Severity.ERROR, "record",
    "a wire-format key or value naming a schema id the schema registry does not know")
AVRO_SCHEMA_NAME = Rule("avro_schema_name", "schema", Severity.WARNING, "table",
    "a topic's registry key/value schema is not named as Debezium names it (<topic>.Key, <topic>.Envelope)")
AVRO_ENVELOPE_FIELDS = Rule("avro_envelope_fields", "schema", Severity.ERROR, "table",
    "a topic's registry value schema lacks a field every Debezium envelope has (before, after, source, op)")
RULES = (UNDECODABLE_AVRO, UNKNOWN_SCHEMA_ID, AVRO_SCHEMA_NAME, AVRO_ENVELOPE_FIELDS)
ENVELOPE_FIELDS = ("before", "after", "source", "op")
# Debezium's own fixed schemas (transaction metadata, heartbeats, schema changes) are named io.debezium.*
OWN_SCHEMAS = "io.debezium."


def avro_name(topic: str) -> str:
    """A topic as Debezium spells it in schema names: each dotted part made a valid Avro name
    (invalid characters to ``_``, a leading digit prefixed with ``_``)."""
    parts = [re.sub(r"[^A-Za-z0-9_]", "_", p) for p in topic.split(".")]
    return ".".join("_" + p if p[:1].isdigit() else p for p in parts)


def _full_name(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    name = str(schema.get("name", ""))
    namespace = schema.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def judge_schema(topic: str, role: str, text: str) -> list[tuple[Rule, str]]:
    """(rule, message) for one registry schema of a topic's keys or values."""
    try:
        schema = json.loads(text)
    except ValueError:
        return []
    name = _full_name(schema)
    if name is not None and name.startswith(OWN_SCHEMAS):
        return []
    expected = f"{avro_name(topic)}.{'Key' if role == 'key' else 'Envelope'}"
    out = []
    if name != expected:
        out.append((AVRO_SCHEMA_NAME, f"{role} schema is named {name or '(not a record)'}, Debezium names it {expected}"))
    if role == "value" and isinstance(schema, dict):
        present = {f.get("name") for f in schema.get("fields", []) if isinstance(f, dict)}
        missing = [f for f in ENVELOPE_FIELDS if f not in present]
        if missing:
            out.append((AVRO_ENVELOPE_FIELDS, f"value schema {name} has no {', '.join(missing)}: not a Debezium envelope"))
    return out


def registry_findings(usage: list[dict[str, Any]], schemas: dict[int, str], roles: TopicRoles) -> list[dict[str, Any]]:
    """One finding per topic, schema id and rule broken, for the data topics' registry schemas."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, int]] = set()
    for use in sorted(usage, key=lambda u: (u["topic"], u["key_id"] or 0, u["value_id"] or 0)):
        topic = use["topic"]
        if roles.is_transaction(topic) or roles.is_heartbeat(topic):
            continue
        for role in ("key", "value"):
            sid = use[f"{role}_id"]
            if sid is None or sid not in schemas or (topic, role, sid) in seen:
                continue
            seen.add((topic, role, sid))
            server = topic.split(".", 1)[0]  # (the topic's prefix)
            rows += [finding_row(rule, f"schema id {sid}: {msg}", topic=topic, server=server)
                     for rule, msg in judge_schema(topic, role, schemas[sid])]
    return rows


def registry_ids(usage: list[dict[str, Any]], known: dict[int, str]) -> dict[str, dict[str, list[int]]]:
    """Per topic, the registry ids its keys and values name that the registry knows (the report's
    schema versions; unknown ids are unknown_schema_id findings)."""
    out: dict[str, dict[str, set[int]]] = {}
    for use in usage:
        per = out.setdefault(use["topic"], {"key": set(), "value": set()})
        for role in ("key", "value"):
            if use[f"{role}_id"] is not None and use[f"{role}_id"] in known:
                per[role].add(int(use[f"{role}_id"]))
    return {t: {r: sorted(ids) for r, ids in per.items()} for t, per in sorted(out.items())}
