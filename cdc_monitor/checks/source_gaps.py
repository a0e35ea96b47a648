"""source check: what the Kafka stream itself lost or rewound, told by the reader's gap rows
(``sources/kafka/gaps.py``) and judged by watch once per micro-batch.

- ``records_lost``: offsets deleted (retention, DeleteRecords) before watch read them; counted once
  per offset skipped, never a silent skip.
- ``offsets_reset``: a partition's log is a new one (its topic deleted and created again: a new topic
  id, or offsets that went back); counted once per partition reset. Its earlier records are no
  longer the context of its new ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cdc_monitor.sources.kafka.gaps import Gap
from cdc_monitor.vocabulary import STREAM_CHECKS, Rule, Severity, TopicRoles

CHECK = STREAM_CHECKS[0]
RECORDS_LOST = Rule("records_lost", CHECK, Severity.ERROR, "record",
    "offsets of a partition were deleted (retention, DeleteRecords) before watch read them: counted per offset "
    "skipped")
OFFSETS_RESET = Rule("offsets_reset", CHECK, Severity.WARNING, "table",
    "a partition's offsets went back (its topic deleted and created again): its records are read again from "
    "the log start; counted per partition reset")
RULES = (RECORDS_LOST, OFFSETS_RESET)
RULE_OF = {Gap.RECORDS_LOST: RECORDS_LOST, Gap.OFFSETS_RESET: OFFSETS_RESET}


@dataclass(frozen=True)
class GapRow:
    topic: str
    partition: int
    gap: Gap
    first: int
    last: int

    @classmethod
    def parse(cls, topic: str, partition: int, offset: int, value: bytes) -> GapRow:
        span = json.loads(bytes(value))
        return cls(topic, int(partition), Gap(int(offset)), int(span["from"]), int(span["to"]))

    @property
    def count(self) -> int:
        """What a finding counts: offsets skipped, or one reset."""
        return max(0, self.last - self.first) if self.gap is Gap.RECORDS_LOST else 1


def gap_findings(gaps: list[GapRow], roles: TopicRoles) -> list[dict[str, Any]]:
    """Grouped finding counts (watch's shape: server, table, check, rule, severity, count)."""
    counts: dict[tuple[str, str, Gap], int] = {}
    for g in gaps:
        server = roles.server(g.topic)
        table = g.topic[len(server) + 1:] if g.topic.startswith(server + ".") else g.topic
        counts[(server, table, g.gap)] = counts.get((server, table, g.gap), 0) + g.count
    return [{"server": s, "table": t, "check": CHECK, "rule": RULE_OF[gap].name,
             "severity": str(RULE_OF[gap].severity), "count": n}
            for (s, t, gap), n in sorted(counts.items()) if n]
