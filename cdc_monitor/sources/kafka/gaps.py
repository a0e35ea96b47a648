"""What the streaming reader found missing from a partition, told in the data path.

A partition whose log no longer holds the offsets a micro-batch was to read (retention or
DeleteRecords moved its log start past them), or whose offsets went back (the topic was deleted
and created again), yields one *gap row* before its records: the Kafka source's columns with a
negative ``offset`` naming the kind and ``value`` = ``{"from": a, "to": b}``, the offsets concerned.
Real records never have a negative offset, so the rows travel with the batch (exactly once, with
its offsets in Spark's checkpoint) and watch turns them into findings (``checks/source_gaps.py``).
Spark-free.
"""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Any


class Gap(IntEnum):
    """A gap row's ``offset``."""

    RECORDS_LOST = -1  # offsets from..to-1 were deleted before they were read
    OFFSETS_RESET = -2  # the partition's offsets went back from ``from`` to ``to`` (its end now)


def gap_value(first: int, last: int) -> bytes:
    return json.dumps({"from": first, "to": last}).encode()


def gap_row(topic: str, partition: int, gap: Gap, first: int, last: int) -> dict[str, Any]:
    """One gap row, in the Kafka source's columns (the reader makes it a batch of its schema)."""
    return {"key": None, "value": gap_value(first, last), "topic": topic, "partition": partition, "offset": int(gap),
            "timestamp": None, "timestampType": 0, "headers": None}
