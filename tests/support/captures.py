"""Helpers shared by tests: write kcat -J captures from simple record dicts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any


def kcat_line(topic: str, partition: int, offset: int, key: str | None, value: str | None, ts: int,
              headers: list[str] | None = None) -> str:
    return json.dumps({"topic": topic, "partition": partition, "offset": offset, "tstype": "create", "ts": ts,
                       "broker": 0, "headers": headers, "key": key, "payload": value})


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def seed_cases() -> list[dict[str, Any]]:
    return json.loads((Path(__file__).parents[1] / "golden" / "seeds" / "seed_events.json").read_text())


def seed_capture(path: Path) -> Path:
    return write_lines(path, (
        kcat_line(c["topic"], c["partition"], c["offset"], c["key"], c["value"], 1_700_000_000_000 + c["offset"])
        for c in seed_cases()
    ))


# -- the producer's names replaced (tests/test_names_from_data.py) --------------------------------------------
def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)  # as the generator writes records


def _dotted(text: Any, names: Mapping[str, str]) -> Any:
    """A dotted name (``<server>.<db>.<table>``, ``<schema>.<table>``) with each part renamed."""
    return ".".join(names.get(p, p) for p in text.split(".")) if isinstance(text, str) else text


def _edited(text: str | None, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> str | None:
    """A JSON object's text edited; any other text (a fault's malformed value) as it is."""
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError:
        return text
    return _dumps(edit(doc)) if isinstance(doc, dict) else text


def renamed_line(line: str, names: Mapping[str, str], columns: Mapping[str, str]) -> str:
    """A kcat -J record of Debezium traffic with its producer's names replaced, consistently: the
    topic's dotted parts, ``source``'s name, db, schema, table and collection, the data collections
    of ``transaction`` blocks and markers, a heartbeat key's serverName (``names``: old -> new), and
    a data event's key and row-image columns (``columns``: old -> new)."""
    record = json.loads(line)
    topic = record["topic"]
    data = not topic.endswith(".transaction") and not topic.startswith("__debezium-heartbeat.")

    def key(doc: dict[str, Any]) -> dict[str, Any]:
        if not data:
            return {k: (names.get(v, v) if k == "serverName" and isinstance(v, str) else v) for k, v in doc.items()}
        return {columns.get(k, k): v for k, v in doc.items()}

    def value(doc: dict[str, Any]) -> dict[str, Any]:
        source = doc.get("source")
        if isinstance(source, dict):
            for field in ("name", "db", "schema", "table", "collection"):
                if isinstance(source.get(field), str):
                    source[field] = names.get(source[field], source[field])
        for image in ("before", "after"):
            if data and isinstance(doc.get(image), dict):
                doc[image] = {columns.get(k, k): v for k, v in doc[image].items()}
        if isinstance(doc.get("transaction"), dict):
            doc["transaction"]["data_collection"] = _dotted(doc["transaction"].get("data_collection"), names)
        for collection in doc.get("data_collections") or []:
            if isinstance(collection, dict):
                collection["data_collection"] = _dotted(collection.get("data_collection"), names)
        return doc

    record.update(topic=_dotted(topic, names), key=_edited(record["key"], key), payload=_edited(record["payload"], value))
    return json.dumps(record, ensure_ascii=False)
