"""What a check is given besides its frames: the window's facts, the scan settings it reads and
where its intermediate frames live. Checks import this module, never the engine that computes the
facts and holds the frames (``engine/facts.py`` fills ``WindowFacts`` from one aggregate;
``engine/cache.py``'s ``FrameCache`` is a ``Placement``). A check can run on a tiny hand-made frame
with ``CheckContext(session)``: no facts known, frames left as they are.

Each per-server or per-partition fact reaches a plan as one JSON text literal parsed into a map
(``fact_lookup``; Spark folds the parse into a map literal before the plan runs): one literal
however many entries, where a ``create_map`` of literals is a column expression per entry."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.config import ScanConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

    from cdc_monitor.runtime.session import SessionCaps



@dataclass
class WindowFacts:
    rows: list[Row]  # the census: one row per GRAIN
    partitions: list[dict[str, Any]]  # per (topic, partition), in that order
    data_start: dict[str, int] = field(default_factory=dict)  # server -> when every later-started data partition has records
    txn_span: dict[str, tuple[int, int]] = field(default_factory=dict)  # server -> record times its transaction topic covers
    read: dict[str, list[str]] = field(default_factory=dict)  # server -> data collections with decoded change events
    # "server|table" -> its first change event (record_ts_ms, topic, partition, offset)
    first_change: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def window(self) -> dict[str, Any]:
        starts = [p["min_ts_ms"] for p in self.partitions if p["min_ts_ms"] is not None]
        ends = [p["max_ts_ms"] for p in self.partitions if p["max_ts_ms"] is not None]
        return {"start_ms": min(starts, default=None), "end_ms": max(ends, default=None),
                "partitions": [{k: p[k] for k in ("topic", "partition", "first_offset", "last_offset", "records",
                                                  "from_start")} for p in self.partitions]}

    # What the window holds decides which checks can find anything: a check whose input is empty
    # is not planned (its findings would be none; fewer plans, stages and a job less per window).
    @property
    def has_transactions(self) -> bool:
        """A record of a transaction topic, or a data event naming a transaction."""
        return any(r["kind"] == "transaction" or r["in_txn"] for r in self.rows)

    @property
    def has_schema_changes(self) -> bool:
        """A record of a schema-change topic beside values with schemas (without both, no
        ``schema_change_without_ddl`` can be judged)."""
        return any(r["kind"] == "schema_change" for r in self.rows) and any(r["value_hashes"] for r in self.rows)

    @property
    def has_verdicts(self) -> bool:
        """A record the decoder found breaking a per-record rule."""
        return any(r["verdict_records"] for r in self.rows)

    @property
    def has_topic_flags(self) -> bool:
        """A record a per-topic rule counts (checks/schema.py, ``topic_flagged``)."""
        return any(r["topic_flagged"] for r in self.rows)

    @property
    def has_sequences(self) -> bool:
        """A PostgreSQL event with a ``source.sequence`` (checks/source_block.py, ``SEQUENCED``)."""
        return any(r["sequenced"] for r in self.rows)

    @property
    def ddl_servers(self) -> tuple[str, ...]:
        """The servers whose schema-change events the window holds."""
        return tuple(sorted({r["server"] for r in self.rows if r["kind"] == "schema_change" and r["server"] is not None}))

    @property
    def has_snapshot_events(self) -> bool:
        return any(r["snapshot_events"] for r in self.rows)

    def maps(self) -> dict[str, tuple[dict[str, Any], str]]:
        """Every fact a check looks up per record: name -> (mapping, type of its values)."""
        return {
            "from_start": ({f"{p['topic']}|{p['partition']}": p["from_start"] for p in self.partitions}, "boolean"),
            "data_start": (self.data_start, "bigint"),
            "read": (self.read, "array<string>"),
            "txn_lo": ({k: v[0] for k, v in self.txn_span.items()}, "bigint"),
            "txn_hi": ({k: v[1] for k, v in self.txn_span.items()}, "bigint"),
            "first_change": (self.first_change, "struct<record_ts_ms:bigint,topic:string,partition:int,offset:bigint>"),
        }

    def lookup(self, name: str, key: Column, default: Column | None = None) -> Column:
        """Per record: fact ``name`` for ``key`` (null, or ``default``, when absent)."""
        mapping, typ = self.maps()[name]
        return fact_lookup(mapping, key, typ, default)

    def from_start(self) -> Column:
        """Per record: was its partition read from offset 0 without gaps (false when unknown)."""
        return self.lookup("from_start", F.concat_ws("|", F.col("topic"), F.col("partition").cast("string")), F.lit(False))

    def lookup_sql(self, name: str, key: str, default: str | None = None) -> tuple[str, dict[str, str]]:
        """``lookup`` for checks written as SQL (checks/sql.py): the text over the key expression
        ``key``, and the named parameter it reads (``fact_<name>``, the mapping as JSON text)."""
        mapping, typ = self.maps()[name]
        param = f"fact_{name}"
        value = f"element_at(from_json(:{param}, 'map<string,{typ}>'), {key})"
        return (f"coalesce({value}, {default})" if default is not None else value), {param: _json_text(mapping)}

    def from_start_sql(self) -> tuple[str, dict[str, str]]:
        """``from_start`` as SQL text over a record's ``topic`` and ``partition``, and its parameter."""
        return self.lookup_sql("from_start", "concat_ws('|', topic, CAST(partition AS STRING))", "false")


def fact_lookup(mapping: dict[str, Any], key: Column, typ: str, default: Column | None = None) -> Column:
    """``mapping[key]``, ``mapping`` given to the plan as JSON text parsed into a map of values of
    type ``typ``; null, or ``default``, when absent."""
    value = F.element_at(F.from_json(F.lit(_json_text(mapping)), f"map<string,{typ}>"), key)
    return F.coalesce(value, default) if default is not None else value


def _json_text(mapping: dict[str, Any]) -> str:
    return json.dumps({str(k): v for k, v in mapping.items()}, separators=(",", ":"))


class Placement(Protocol):
    """Where a check's intermediate frames live (``engine/cache.py``'s ``FrameCache``)."""

    one_partition: bool

    def single(self, frame: DataFrame) -> DataFrame: ...
    def partition_by(self, frame: DataFrame, *columns: str) -> DataFrame: ...
    def keep(self, frame: DataFrame) -> DataFrame: ...


class AsIs:
    """Frames left as they are: nothing persisted, no partitioning asked for."""

    one_partition = False

    def single(self, frame: DataFrame) -> DataFrame:
        return frame

    def partition_by(self, frame: DataFrame, *columns: str) -> DataFrame:
        return frame

    def keep(self, frame: DataFrame) -> DataFrame:
        return frame


@dataclass(frozen=True)
class CheckContext:
    """Everything a check reads that is not a frame: the session's capabilities first (how its SQL
    and passes reach Spark: runtime/session.py), then what the window showed."""

    session: SessionCaps
    facts: WindowFacts = field(default_factory=lambda: WindowFacts(rows=[], partitions=[]))
    config: ScanConfig = field(default_factory=ScanConfig)
    placement: Placement = field(default_factory=AsIs)
