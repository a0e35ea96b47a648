"""Seasonal traffic over days with labelled anomalies, for the history's anomaly rules
(checks/anomalies.py; benchmarks/anomalies.py; tests/test_history.py).

The model: each table has a base volume (change events per interval) and a base lag p99. Volume
follows a daily cycle (a sine peaking at 14:00 UTC, ``daily_amplitude``) and dips on weekends
(``weekend_factor``, eased over three hours either side of midnight), with Poisson noise and a
little more (real traffic is overdispersed). Lag p99 follows load a little, with log-normal noise.

Anomalies are injected from ``quiet_days`` on (the history needs a week to learn each hour of
the week), one at a time per table, labelled per interval with the rule that must find it:

- ``outage``: volume at 10% (``volume_anomaly``);
- ``spike``: volume x5 (``volume_anomaly``);
- ``silence``: no events at all, the server's other tables live (``table_silent``);
- ``lag_creep``: lag p99 rising from 4x to 50x its normal over the anomaly (``lag_anomaly``).

``history_rows`` gives the per-interval rows directly (the history's layout: four weeks of 20 tables
are 160k table-intervals, far too many events to generate); ``event_lines`` a small window of real
records (kcat -J lines) of the same model, for end-to-end scans.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cdc_monitor.checks.anomalies import LAG_ANOMALY, TABLE_SILENT, VOLUME_ANOMALY
from cdc_monitor.generator.flavours import FLAVOURS
from cdc_monitor.history.layout import DAY_MS, HISTORY_OPS
from cdc_monitor.history.measure import empty_row

MONDAY_MS = 1_764_547_200_000  # 2025-12-01 00:00 UTC, a Monday
KINDS = {"outage": VOLUME_ANOMALY.name, "spike": VOLUME_ANOMALY.name, "silence": TABLE_SILENT.name,
         "lag_creep": LAG_ANOMALY.name}
FACTORS = {"outage": 0.1, "spike": 5.0, "silence": 0.0}


@dataclass(frozen=True)
class Anomaly:
    kind: str
    server: str
    table: str
    start_ms: int
    intervals: int

    @property
    def rule(self) -> str:
        return KINDS[self.kind]


@dataclass
class SeasonalModel:
    tables: int = 20
    servers: int = 4
    days: int = 28
    interval_ms: int = 300_000
    start_ms: int = MONDAY_MS
    seed: int = 11
    anomalies_per_kind: int = 10
    quiet_days: int = 8
    daily_amplitude: float = 0.5
    weekend_factor: float = 0.6
    overdispersion: float = 0.04  # relative noise beyond Poisson's
    lag_noise: float = 0.12  # log-normal sigma of lag p99
    anomalies: list[Anomaly] = field(default_factory=list)

    def __post_init__(self) -> None:
        rng = random.Random(self.seed)
        self.names = [(f"app{t % self.servers + 1}", f"shop.t{t + 1:02d}") for t in range(self.tables)]
        self.base = {n: rng.uniform(300, 3000) for n in self.names}
        self.base_lag = {n: rng.uniform(150, 2000) for n in self.names}
        if not self.anomalies:
            self.anomalies = self._place(rng)

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.days * DAY_MS

    def starts(self) -> range:
        return range(self.start_ms, self.end_ms, self.interval_ms)

    def load(self, t: int) -> float:
        """The traffic's shape at time ``t`` (1 on average on weekdays)."""
        hour = (t % DAY_MS) / 3_600_000
        daily = 1 + self.daily_amplitude * math.sin(2 * math.pi * (hour - 8) / 24)
        return daily * self._weekday_factor(t)

    def _weekday_factor(self, t: int) -> float:
        def weekend(ms: int) -> bool:
            return (ms - MONDAY_MS) // DAY_MS % 7 >= 5
        # eased over three hours either side of midnight
        ease = 3 * 3_600_000
        into = (t % DAY_MS)
        here, before, after = weekend(t), weekend(t - DAY_MS), weekend(t + DAY_MS)
        f = self.weekend_factor if here else 1.0
        if into < ease and before != here:
            other = self.weekend_factor if before else 1.0
            f = other + (f - other) * (0.5 + into / ease / 2)
        elif into > DAY_MS - ease and after != here:
            other = self.weekend_factor if after else 1.0
            f = f + (other - f) * ((into - (DAY_MS - ease)) / ease / 2)
        return f

    def expected(self, name: tuple[str, str], t: int) -> float:
        return self.base[name] * self.load(t)

    def _place(self, rng: random.Random) -> list[Anomaly]:
        out: list[Anomaly] = []
        busy: dict[tuple[str, str], list[tuple[int, int]]] = {}
        first = self.start_ms + self.quiet_days * DAY_MS
        steps = (self.end_ms - first) // self.interval_ms
        for kind in KINDS:
            placed = 0
            while placed < self.anomalies_per_kind:
                name = self.names[rng.randrange(len(self.names))]
                length = {"outage": rng.randint(3, 12), "spike": rng.randint(1, 6), "silence": rng.randint(3, 12),
                          "lag_creep": rng.randint(6, 24)}[kind]
                start = first + rng.randrange(steps - length) * self.interval_ms
                span = (start - DAY_MS, start + length * self.interval_ms + DAY_MS)  # a day clear either side
                if any(a < span[1] and span[0] < b for a, b in busy.get(name, [])):
                    continue
                if kind == "silence" and any(x.kind == "silence" and abs(x.start_ms - start) < DAY_MS for x in out):
                    continue  # one silence at a time: the server's other tables stay alive
                busy.setdefault(name, []).append((start, start + length * self.interval_ms))
                out.append(Anomaly(kind, name[0], name[1], start, length))
                placed += 1
        return sorted(out, key=lambda a: (a.start_ms, a.server, a.table))

    def active(self, name: tuple[str, str], t: int) -> tuple[Anomaly, int] | None:
        for a in self.anomalies:
            if (a.server, a.table) == name and a.start_ms <= t < a.start_ms + a.intervals * self.interval_ms:
                return a, (t - a.start_ms) // self.interval_ms
        return None

    def labels(self) -> list[dict[str, Any]]:
        """One label per anomalous table-interval: server, table, interval_start_ms, rule, kind."""
        return [{"server": a.server, "table": a.table, "interval_start_ms": a.start_ms + i * self.interval_ms,
                 "rule": a.rule, "kind": a.kind} for a in self.anomalies for i in range(a.intervals)]

    def measure(self, name: tuple[str, str], t: int, rng: random.Random) -> tuple[int, float]:
        """(change events, lag p99 ms) of one table-interval, anomalies applied."""
        lam = self.expected(name, t) * max(0.0, rng.gauss(1, self.overdispersion))
        events = _poisson(lam, rng)
        lag = self.base_lag[name] * (1 + 0.3 * (self.load(t) - 1)) * math.exp(rng.gauss(0, self.lag_noise))
        hit = self.active(name, t)
        if hit is not None:
            a, i = hit
            if a.kind == "lag_creep":
                lag *= 4 + 46 * i / max(1, a.intervals - 1)
            else:
                events = _poisson(lam * FACTORS[a.kind], rng) if FACTORS[a.kind] else 0
        return events, lag

    def history_rows(self) -> Iterator[dict[str, Any]]:
        """Every table-interval as a history row (history/layout.py), in time order."""
        rng = random.Random(self.seed + 1)
        for t in self.starts():
            for name in self.names:
                events, lag = self.measure(name, t, rng)
                row = empty_row(name[0], name[1], f"{name[0]}.{name[1]}", t, self.interval_ms, self.interval_ms)
                split = _ops(events)
                row |= {"events": events, **{f"events_{op}": split.get(op, 0) for op in HISTORY_OPS}}
                if events:
                    row |= {"lag_count": events, "lag_p50_ms": int(lag / 3), "lag_p95_ms": int(lag * 0.8),
                            "lag_p99_ms": int(lag), "lag_max_ms": int(lag * 1.2)}
                yield row


def _poisson(lam: float, rng: random.Random) -> int:
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _ops(events: int) -> dict[str, int]:
    """70% inserts, 25% updates, the rest deletes."""
    c, u = events * 7 // 10, events // 4
    return {"c": c, "u": u, "d": events - c - u}


def event_lines(model: SeasonalModel, start_ms: int, intervals: int, scale: float = 0.05,
                factors: dict[str, float] | None = None, heartbeats: bool = True) -> list[str]:
    """kcat -J lines of real Debezium MySQL change events (inserts, no schemas) for ``intervals`` of
    the model from ``start_ms``: each table's expected volume times ``scale`` (a test's window small),
    times ``factors[table]`` (``{"shop.t02": 0.1}``: a dropped table), evenly spaced, each event's lag its table's base
    lag; a heartbeat per server per minute. Noise-free: the same model's ``history_rows`` with the same
    ``scale`` (``scaled_rows``) is its history."""
    flavour = FLAVOURS["mysql"]
    lines: list[tuple[int, dict[str, Any]]] = []
    offsets: dict[str, int] = {}
    seq = 0
    for name in model.names:
        server, collection = name
        table = collection.split(".", 1)[1]
        f = replace(flavour, server=server, db="shop")
        topic = f.topic(table)
        for i in range(intervals):
            t = start_ms + i * model.interval_ms
            n = round(model.expected(name, t) * scale * (factors or {}).get(collection, 1.0))
            for j in range(n):
                ts = t + (j * model.interval_ms) // max(n, 1) + 1
                lag = int(model.base_lag[name])
                src = f.source(table, seq, seq, 0, ts - 1 - lag, "false", "c", seq)
                pk = seq + 1
                value = {"before": None, "after": {"id": pk, "v": j}, "source": src, "op": "c", "ts_ms": ts - 1}
                lines.append((ts, {"topic": topic, "partition": 0, "key": json.dumps({"id": pk}),
                                   "payload": json.dumps(value, separators=(",", ":"))}))
                seq += 1
    if heartbeats:
        for server in sorted({s for s, _ in model.names}):
            for ts in range(start_ms, start_ms + intervals * model.interval_ms, 60_000):
                lines.append((ts + 2, {"topic": f"__debezium-heartbeat.{server}", "partition": 0,
                                       "key": json.dumps({"serverName": server}), "payload": json.dumps({"ts_ms": ts + 2})}))
    out = []
    for ts, rec in sorted(lines, key=lambda x: x[0]):
        off = offsets.get(rec["topic"], 0)
        offsets[rec["topic"]] = off + 1
        out.append(json.dumps({"topic": rec["topic"], "partition": 0, "offset": off, "tstype": "create", "ts": ts,
                               "broker": 0, "headers": None, "key": rec["key"], "payload": rec["payload"]}))
    return out


def scaled_rows(model: SeasonalModel, scale: float, until_ms: int) -> Iterator[dict[str, Any]]:
    """``history_rows`` before ``until_ms`` with volumes times ``scale`` (the history of ``event_lines``)."""
    for row in model.history_rows():
        if row["interval_start_ms"] >= until_ms:
            return
        n = round(row["events"] * scale)
        split = _ops(n)
        yield row | {"events": n, "lag_count": n, **{f"events_{op}": split.get(op, 0) for op in HISTORY_OPS}}
