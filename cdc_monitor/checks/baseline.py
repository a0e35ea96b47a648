"""A table's baseline from its own history (the anomaly rules', checks/anomalies.py), on the driver:
the history a window reads is small (tables x intervals, a few thousand rows), so no Spark job, and
a user can redo it by hand.

For one table, metric and interval ``t`` of a window starting at ``w``:

1. the table's committed intervals at the same hour of the week (UTC) as ``t`` in earlier weeks
   (before ``w`` and before the hour of ``t`` began, so an anomaly's own first intervals never
   widen its band), the most recent ``n`` of them: when there are at least ``min_n``, they are the
   baseline;
2. else its intervals in the ``n`` intervals of record time before ``w``: when at least ``min_n``;
3. else no verdict ("too little history", said in the report).

Of those values: the median ``m``, the median absolute deviation ``mad``, the spread
``s = max(1.4826 * mad, floor * m, 1)`` (1.4826 makes a MAD a standard deviation for normal noise;
the floor keeps a flat history from making every wobble an anomaly), and the band
``[m - k * s, m + k * s]`` with ``k`` the sensitivity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAD_SCALE = 1.4826
VOLUME_OPS = ("c", "u", "d", "t")  # what volume counts: change events (snapshot reads are not traffic)
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
WEEK_MS = 7 * DAY_MS
SAME_HOUR = "same_hour_of_week"
RECENT = "recent_intervals"


@dataclass(frozen=True)
class BaselineSettings:
    sensitivity: float = 6.0  # k
    intervals: int = 24  # n
    min_intervals: int = 8  # min_n
    floor: float = 0.1

    @classmethod
    def of(cls, cfg: Any) -> BaselineSettings:
        return cls(cfg.anomaly_sensitivity, cfg.anomaly_baseline_intervals, cfg.anomaly_min_intervals, cfg.anomaly_floor)


@dataclass(frozen=True)
class Baseline:
    source: str  # SAME_HOUR or RECENT
    intervals: int  # how many values
    median: float
    mad: float
    lower: float
    upper: float

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": round(self.median, 3), "band": [round(self.lower, 3), round(self.upper, 3)],
                "mad": round(self.mad, 3), "baseline_from": self.source, "baseline_intervals": self.intervals}


def hour_of_week(ms: int) -> int:
    """0..167, from Thursday 1970-01-01 00:00 UTC (any fixed origin serves: only equality is used)."""
    return ms % WEEK_MS // HOUR_MS


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def robust(values: Sequence[float], source: str, settings: BaselineSettings) -> Baseline:
    m = median(values)
    mad = median([abs(v - m) for v in values])
    spread = max(MAD_SCALE * mad, settings.floor * m, 1.0)
    return Baseline(source, len(values), m, mad, m - settings.sensitivity * spread, m + settings.sensitivity * spread)


def choose(same_hour: Sequence[float], recent: Sequence[float], settings: BaselineSettings) -> Baseline | None:
    """``same_hour`` and ``recent``: the candidates of steps 1 and 2, oldest first."""
    seasonal = list(same_hour)[-settings.intervals:]
    if len(seasonal) >= settings.min_intervals:
        return robust(seasonal, SAME_HOUR, settings)
    last = list(recent)[-settings.intervals:]
    if len(last) >= settings.min_intervals:
        return robust(last, RECENT, settings)
    return None


def volume(row: dict[str, Any]) -> float | None:
    """Change events in the interval, scaled to a whole interval; None when the window covered less
    than half of it (too partial to judge or to learn from)."""
    if row["covered_ms"] * 2 < row["interval_ms"]:
        return None
    return sum(row[f"events_{op}"] for op in VOLUME_OPS) * row["interval_ms"] / row["covered_ms"]


def lag_p99(row: dict[str, Any]) -> float | None:
    return float(row["lag_p99_ms"]) if row["lag_count"] and row["lag_p99_ms"] is not None else None


METRICS = {"events": volume, "lag_p99_ms": lag_p99}


class HistoryIndex:
    """A table's committed rows by hour of the week, oldest first, for ``candidates``. Rows are added
    in time order (``add``); the benchmark adds each interval as it judges the next."""

    def __init__(self, interval_ms: int, settings: BaselineSettings, lookback_ms: int) -> None:
        self.interval_ms, self.settings, self.lookback_ms = interval_ms, settings, lookback_ms
        self._hours: dict[tuple[str, str, int], list[tuple[int, dict[str, float | None]]]] = {}
        self._all: dict[tuple[str, str], list[tuple[int, dict[str, float | None]]]] = {}

    def add(self, row: dict[str, Any]) -> None:
        values = {name: f(row) for name, f in METRICS.items()}
        entry = (row["interval_start_ms"], values)
        self._hours.setdefault((row["server"], row["table"], hour_of_week(row["interval_start_ms"])), []).append(entry)
        self._all.setdefault((row["server"], row["table"]), []).append(entry)

    def tables(self) -> list[tuple[str, str]]:
        return sorted(self._all)

    def candidates(self, server: str, table: str, metric: str, t: int, window_start: int) -> tuple[list[float], list[float]]:
        """Steps 1 and 2's values for interval ``t`` of a window starting at ``window_start``, oldest first."""
        n = self.settings.intervals
        same: list[float] = []
        before = min(window_start, t - t % HOUR_MS)  # earlier weeks only: not this hour's first intervals
        for start, values in reversed(self._hours.get((server, table, hour_of_week(t)), [])):
            if start < window_start - self.lookback_ms or len(same) == n:
                break
            if start < before and values[metric] is not None:
                same.append(values[metric])  # type: ignore[arg-type]
        recent: list[float] = []
        for start, values in reversed(self._all.get((server, table), [])):
            if start < window_start - n * self.interval_ms:
                break
            if start < window_start and values[metric] is not None:
                recent.append(values[metric])  # type: ignore[arg-type]
        return same[::-1], recent[::-1]

    def baseline(self, server: str, table: str, metric: str, t: int, window_start: int) -> Baseline | None:
        return choose(*self.candidates(server, table, metric, t, window_start), self.settings)
