"""Write generated traffic as kcat ``-J`` captures and its fault labels as JSON lines."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.generator.records import Traffic, serialize
from cdc_monitor.vocabulary import LABELS_SUFFIX

if TYPE_CHECKING:
    from cdc_monitor.runtime.progress import Counter


def kcat_lines(traffic: Traffic) -> Iterator[str]:
    """kcat -J lines; Avro traffic as ``kcat -s avro -J`` prints it (key and payload as Avro-JSON objects)."""
    for rec in traffic.records:
        key, value = serialize(rec, traffic.schemas)
        if traffic.value_format != "json":
            from cdc_monitor.generator.avro_traffic import avro_json

            key = avro_json(rec.key_schema or {}, rec.key) if rec.key is not None else None
            value = avro_json(rec.value_schema or {}, rec.value) if rec.value is not None else None
        headers = None
        if rec.headers:
            headers = [x for pair in rec.headers for x in pair]
        yield json.dumps({
            "topic": rec.topic, "partition": rec.partition, "offset": rec.offset, "tstype": "create",
            "ts": rec.ts, "broker": 0, "headers": headers, "key": key, "payload": value,
        }, ensure_ascii=False)


def finding_key(key: str | None) -> str | None:
    """A record's key as findings name it: the payload of a key with an embedded schema, compact
    (as Spark writes JSON), otherwise the key text itself."""
    try:
        doc = json.loads(key) if key is not None else None
    except ValueError:
        return key
    if isinstance(doc, dict) and doc.get("schema") is not None and doc.get("payload") is not None:
        payload = doc["payload"]  # a string payload comes out bare, as get_json_object gives it
        return payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return key


def label_dicts(traffic: Traffic) -> list[dict[str, Any]]:
    out = []
    for lab in traffic.labels:
        key, _ = serialize(lab.rec, traffic.schemas)
        out.append({"check": CATALOGUE[lab.rule].check, "rule": lab.rule, "topic": lab.rec.topic,
                    "partition": lab.rec.partition, "offset": lab.rec.offset, "key": finding_key(key), "txn_id": lab.txn_id})
    return sorted(out, key=lambda d: (d["check"], d["rule"], d["topic"], d["partition"], d["offset"]))


def _open(path: Path) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        return gzip.open(path, "wt", encoding="utf-8")
    return path.open("w", encoding="utf-8")


def write_capture(traffic: Traffic, path: str | Path, labels_path: str | Path | None = None,
                  counter: Counter | None = None) -> dict[str, Any]:
    """``counter``: counts the records written (a terminal's live line: runtime/progress.py)."""
    path = Path(path)
    n = 0
    lines = kcat_lines(traffic) if counter is None else counter.counting(kcat_lines(traffic))
    with _open(path) as fh:
        for line in lines:
            fh.write(line + "\n")
            n += 1
    written: dict[str, Any] = {"capture": str(path), "records": n}
    if labels_path is not None:
        written |= {"labels": str(labels_path), "faults": write_labels(traffic, labels_path)}
    return written


def write_labels(traffic: Traffic, labels_path: str | Path) -> int:
    labels = label_dicts(traffic)
    with _open(Path(labels_path)) as fh:
        for lab in labels:
            fh.write(json.dumps(lab) + "\n")
    return len(labels)


def default_labels_path(capture: str | Path) -> Path:
    p = Path(capture)
    name = p.name[:-3] if p.name.endswith(".gz") else p.name
    return p.with_name(name.rsplit(".", 1)[0] + LABELS_SUFFIX)  # a folder scan skips these
