"""Helpers shared by tests: write kcat -J captures from simple record dicts."""

from __future__ import annotations

import json
from collections.abc import Iterable
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
