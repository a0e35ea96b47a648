"""A scan's first step: a source's records read into the window the checks judge.

The records decoded once (decoding/decoder.py) and checkpointed (job 1); a small window held in one
partition (engine/cache.py); unreadable capture lines read again only when the decode pass counted
some; the census (job 2, engine/facts.py); overlapping captures de-duplicated, only when the census
found copies. What the driver knows without reading records (a registry schema's findings, copies
of the input) comes back as findings beside the frames.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Observation
from pyspark.sql import functions as F

from cdc_monitor.checks.decode import capture_line_findings, duplicate_record_findings
from cdc_monitor.decoding import decode_records
from cdc_monitor.engine.facts import window_facts
from cdc_monitor.engine.window import WindowFrames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.checks.context import WindowFacts
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.engine.cache import FrameCache
    from cdc_monitor.runtime.session import SessionCaps
    from cdc_monitor.sources import SourceResult


@dataclass
class ReadWindow:
    """The window as read: its events (checkpointed), its census, and the findings known so far."""

    events: DataFrame
    facts: WindowFacts
    rejects_count: int = 0  # unreadable capture lines
    registry_ids: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # topic -> schema ids (Avro)
    driver_findings: list[dict[str, Any]] = field(default_factory=list)  # known without reading records
    other_findings: list[DataFrame] = field(default_factory=list)  # the unreadable lines'
    records: int = 0  # decoded records

    @property
    def frames(self) -> WindowFrames:
        return WindowFrames(self.events, self.driver_findings, self.other_findings)


def read_window(source: SourceResult, cfg: ScanConfig, cache: FrameCache, session: SessionCaps,
                lap: Callable[[str, str], None], sized: Callable[[int], None] = lambda records: None) -> ReadWindow:
    """``source`` decoded, held and counted (see the module) in ``session``; ``lap`` times the steps
    (``read_decode``, ``window``), ``sized`` is told the decoded records as soon as they are counted
    (the size an out-of-memory error names: runtime/failures.py)."""
    driver_findings: list[dict[str, Any]] = []
    records, registry_ids = _value_format(source.records, cfg, cache, driver_findings)
    counted = Observation("decoded")
    decoded = decode_records(records, cfg.roles, avro_json=cfg.avro_json, session=session)
    events = cache.materialize(decoded.observe(counted, F.count(F.lit(1)).alias("n")))
    # a small window is checked in one partition: no shuffles (engine/cache.py); a window read in
    # several is held again in one (a job more, only then: one partition plans every check without a shuffle).
    # (A Spark Connect session does not return observed metrics read from a checkpoint: counted instead, a job more)
    decoded = counted.get.get("n")
    decoded = events.count() if decoded is None else decoded
    sized(decoded)
    cache.one_partition = decoded <= cfg.one_partition_rows
    # (a Connect client cannot ask a frame its partitions: it holds the window in one again, a small job)
    if cache.one_partition and (not session.jvm or events.rdd.getNumPartitions() > 1):
        events = cache.materialize(events)
    lap("read_decode", "")
    window = ReadWindow(events, window_facts(events), registry_ids=registry_ids, driver_findings=driver_findings,
                        records=decoded)
    # the decode pass counted unreadable input lines: read them again only when there are some
    seen = source.rejects_observed.get.get("rejects") if source.rejects_observed is not None else None
    if source.rejects is not None and seen != 0:
        rejects = cache.keep(source.rejects)
        window.rejects_count = rejects.count()
        if window.rejects_count:
            window.other_findings.append(capture_line_findings(rejects))
    duplicates = {(p["topic"], p["partition"]): p["duplicates"] for p in window.facts.partitions if p.get("duplicates")}
    if duplicates:  # overlapping captures: each record once (three more jobs, only then)
        window.events = cache.materialize(events.dropDuplicates(["topic", "partition", "offset"]))
        window.facts = window_facts(window.events)
        window.driver_findings += duplicate_record_findings(duplicates)
    lap("window", f" ({len(window.facts.window['partitions'])} partitions)")
    return window


def _value_format(records: DataFrame, cfg: ScanConfig, cache: FrameCache,
                  driver_findings: list[dict[str, Any]]) -> tuple[DataFrame, dict[str, dict[str, list[int]]]]:
    """Avro input as the JSON text the decoder reads: with a schema registry, one small job finds
    the schema ids the window names (the records are kept, so the input is read once), the
    driver fetches each once and judges it, and the records are decoded in Arrow batches."""
    from cdc_monitor.decoding.avro_wire import avro_as_json

    avro = avro_as_json(records, cfg, cache)
    if avro.usage is None:
        return avro.records, {}
    from cdc_monitor.checks.registry_schemas import registry_findings, registry_ids

    driver_findings += registry_findings(avro.usage, avro.schemas, cfg.roles)
    return avro.records, registry_ids(avro.usage, avro.schemas)
