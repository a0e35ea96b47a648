"""Lag faults (mixed into generator/faults.FaultPlan): a spike, a negative lag, a source time or an
event time that is not valid milliseconds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.lag import INVALID_EVENT_TS, INVALID_SOURCE_TS, LAG_SPIKE, NEGATIVE_LAG
from cdc_monitor.generator.records import drop_fine_times, set_times

if TYPE_CHECKING:
    from cdc_monitor.generator.records import Rec
    from cdc_monitor.generator.traffic import Generator


SPIKE_MS = 120_000  # a lag spike's extra lag


class LagFaults:
    g: Generator
    spiked_ms: dict[str, int]  # FaultPlan's

    def label(self, rule: str, rec: Any, txn_id: str | None = None) -> None: ...  # FaultPlan's
    def variant(self, rule: str, advance: bool = False) -> int: ...

    def _shift_source(self, rec: Rec, delta_ms: int | None = None, absolute: int | None = None) -> None:
        src = rec.value["source"]
        if self.g.f.documents and absolute is None:  # MongoDB's source time is its position: delay the processing
            set_times(rec.value, rec.value["ts_ms"] - delta_ms)
            return
        if "ts_sec" in src:
            src["ts_sec"] = absolute if absolute is not None else src["ts_sec"] + delta_ms // 1000
            return
        set_times(src, absolute if absolute is not None else src["ts_ms"] + delta_ms)

    def _lag_spike(self, txn_no: int, hooks: dict[str, Any]) -> bool:
        recs = hooks["data_recs"]
        if len(recs) < 2 or recs[0].table != recs[1].table:
            return False
        if self.g.f.documents:
            # MongoDB's spike delays the processing time (ts_ms) by SPIKE_MS: a spike of the same table
            # within twice that is its neighbour by ts_ms, one run, one finding; later, then
            now = recs[0].value["ts_ms"]
            if now - self.spiked_ms.get(recs[0].table, now - 2 * SPIKE_MS) < 2 * SPIKE_MS:
                return False
            self.spiked_ms[recs[0].table] = now
        self._shift_source(recs[0], -SPIKE_MS)
        self.label(LAG_SPIKE.name, recs[0])
        return True

    def _negative_lag(self, txn_no: int, hooks: dict[str, Any]) -> None:
        rec = hooks["data_recs"][0]
        src = rec.value["source"]
        source_ms = src["ts_sec"] * 1000 if "ts_sec" in src else src["ts_ms"]
        set_times(rec.value, source_ms - 1500)
        self.label(NEGATIVE_LAG.name, rec)

    def _invalid_source_ts(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """Variants: 0; the time in microseconds; in nanoseconds (ts_us/ts_ns values in ts_ms).
        dtle's ts_sec gets 0 each time."""
        rec = hooks["data_recs"][0]
        variant = self.variant(INVALID_SOURCE_TS.name, advance=True) % 3
        src = rec.value["source"]
        if variant and "ts_ms" in src:
            src["ts_ms"] = src["ts_ms"] * (1_000 if variant == 1 else 1_000_000)
            drop_fine_times(src)
        else:
            self._shift_source(rec, absolute=0)
        self.label(INVALID_SOURCE_TS.name, rec)


    def _invalid_event_ts(self, txn_no: int, hooks: dict[str, Any]) -> None:
        """The envelope's ts_ms in another unit. Variants: nanoseconds (a real SQL Server example), microseconds,
        seconds."""
        rec = hooks["data_recs"][0]
        variant = self.variant(INVALID_EVENT_TS.name, advance=True) % 3
        ts = rec.value["ts_ms"]
        rec.value["ts_ms"] = ts * 1_000_000 if variant == 0 else ts * 1_000 if variant == 1 else ts // 1_000
        drop_fine_times(rec.value)
        self.label(INVALID_EVENT_TS.name, rec)
