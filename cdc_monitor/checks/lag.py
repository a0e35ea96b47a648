"""lag check: ``ts_ms - source.ts_ms`` per table, plus record-time lag.

When both the processing and the source time come in microseconds or nanoseconds too (Debezium
2.x's ``ts_us``/``ts_ns``), the lag table and ``negative_lag`` use them: sub-millisecond lags.
The lag table aggregates microseconds; ``lag_row_ms`` gives its figures in milliseconds (whole
numbers stay integers, so millisecond-only streams report exactly as before).

Change events are ``c``/``u``/``d`` that are not snapshot events and decoded cleanly. Invalid
source and event timestamps and negative lags are findings per record, judged by the decoder
(checks/verdicts.py); negative lags still count in the percentiles. A spike is a run of
consecutive (by ``ts_ms``) events of one table above the table's threshold: one ``lag_spike``
finding per run, listing its records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_monitor.decoding.events import TS_MAX_MS, TS_MIN_MS, foreign_producer, valid_ts_us
from cdc_monitor.vocabulary import Rule, Severity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LAG_SPIKE = Rule("lag_spike", "lag", Severity.WARNING, "table", "lag above the table's threshold (one finding per run of events)")
NEGATIVE_LAG = Rule("negative_lag", "lag", Severity.WARNING, "record", "ts_ms before source.ts_ms (clock skew)")
INVALID_SOURCE_TS = Rule("invalid_source_ts", "lag", Severity.WARNING, "record",
    "source timestamp missing or not an integer ms time in 2000..2100 (change events, and snapshot records with a "
    "time: op r, or any op source.snapshot marks; not another producer's: non_debezium_producer)")
INVALID_EVENT_TS = Rule("invalid_event_ts", "lag", Severity.WARNING, "record",
    "ts_ms present but not an integer ms time in 2000..2100 (e.g. nanoseconds): the event is left out of lag")
RULES = (LAG_SPIKE, NEGATIVE_LAG, INVALID_SOURCE_TS, INVALID_EVENT_TS)


QUANTILES = (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99))
GROUP = ["server", "topic", "table"]
# upper bounds (seconds) of the lag histogram: CDC lag runs from tens of milliseconds on a healthy
# connector to hours behind a stalled one; the same buckets on every table and instance, so
# histogram_quantile can aggregate them
HISTOGRAM_LE_S = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 21600)


def decoded_data(events: DataFrame) -> DataFrame:
    return events.where("data_event")


def change_events(events: DataFrame) -> DataFrame:
    """Decoded c/u/d events that are not part of a snapshot."""
    return events.where("change_event")


def _valid_sql(ts: str, raw: str) -> str:
    """``valid_source_ts(ts)`` and ``raw`` an integer text, as SQL (one definition for both kinds of check)."""
    return f"({ts} IS NOT NULL AND {ts} >= {TS_MIN_MS} AND {ts} < {TS_MAX_MS} AND {raw} RLIKE '^-?\\\\d+$')"


VALID_SOURCE_TS = _valid_sql("source_ts_ms", "source_ts_raw")
VALID_EVENT_TS = _valid_sql("ts_ms", "ts_ms_raw")


def _valid_source_ts() -> Column:
    return F.expr(VALID_SOURCE_TS)


def _valid_event_ts() -> Column:
    """The event's ts_ms can be measured against: an integer ms time in 2000..2100 (a missing ts_ms
    is not judged: the field is optional)."""
    return F.expr(VALID_EVENT_TS)


def _judged() -> Column:
    """The events whose source time is judged (``invalid_source_ts``, java/Verdicts.java): change events
    and snapshot records that carry a time (op r, or any op a source.snapshot flag marks: left out of lag,
    but a time of 0 is as implausible; one without is missing_source_field's alone), Debezium's: another
    producer's (schema's non_debezium_producer) is not."""
    timed_snapshot = F.col("snapshot_event") & F.col("source_ts_raw").isNotNull()
    return (F.col("change_event") | timed_snapshot) & ~foreign_producer()


def judged_source_ts_valid() -> Column:
    """``invalid_source_ts``'s judgement of an event's source time: true or false where the rule judges
    (change events and snapshot records, Debezium's), null elsewhere (truncates, messages, another
    producer's). The lag table and the gate's events frame both read it."""
    return F.when(_judged(), _valid_source_ts())


def _record_lag_ms() -> Column:
    # the record time is the capture's or broker's: any value, so the difference may overflow (null then)
    return F.try_subtract(F.col("record_ts_ms"), F.col("source_ts_ms"))


def with_lag(changes: DataFrame) -> DataFrame:
    valid = _valid_source_ts()
    return changes.withColumn("source_ts_valid", valid).withColumn(
        "lag_ms", F.when(valid & _valid_event_ts(), F.col("ts_ms") - F.col("source_ts_ms"))
    ).withColumn("record_lag_ms", F.when(valid, _record_lag_ms()))


def lag_us() -> Column:
    """The lag in microseconds, from the finest pair of times both sides send (each plausible: a
    microsecond pair outside 2000..2100 falls back to the millisecond one). Over events whose ts_ms
    and source time are valid (both within 2000..2100), so no difference overflows."""
    fine = valid_ts_us(F.col("ts_us")) & valid_ts_us(F.col("source_ts_us"))
    return F.when(fine, F.col("ts_us") - F.col("source_ts_us")).otherwise((F.col("ts_ms") - F.col("source_ts_ms")) * 1000)


def lag_row_ms(row: dict) -> dict:
    """A lag-table row with its microsecond figures (``*_us``) as milliseconds (``*_ms``), in place."""
    def ms(v):
        if v is None:
            return None
        return int(v) // 1000 if int(v) % 1000 == 0 else round(int(v) / 1000, 3)
    return {(k[:-3] + "_ms" if k.endswith("_us") else k): (ms(v) if k.endswith("_us") else v) for k, v in row.items()}


def nearest_rank(col: str, p: float) -> Column:
    """The exact nearest-rank percentile ``p`` of ``col`` in an aggregate (the lag table's, the history's)."""
    return F.expr(f"percentile_disc({p}) WITHIN GROUP (ORDER BY {col})").cast("bigint")


def lag_table(events: DataFrame) -> DataFrame:
    """One row per (server, topic, table) with change or snapshot events: exact nearest-rank
    percentiles and counts, in one aggregate (snapshot events counted beside the lags)."""
    change = F.col("change_event")
    valid = _valid_source_ts()
    lagged = decoded_data(events).select(
        *GROUP, change.alias("change"), F.col("snapshot_event").alias("snap"),
        judged_source_ts_valid().alias("source_ts_valid"),
        F.when(change & valid & _valid_event_ts(), lag_us()).alias("lag_us"),
        F.when(change & valid, _record_lag_ms()).alias("record_lag_ms"),
        F.when(change & valid, F.col("source_ts_ms")).alias("valid_source_ts_ms"),
    )
    return lagged.groupBy(*GROUP).agg(
        F.count("lag_us").alias("count"),
        F.sum("lag_us").alias("sum_us"),
        *[nearest_rank("lag_us", p).alias(name.replace("_ms", "_us")) for name, p in QUANTILES],
        F.max("lag_us").alias("max_us"),
        # cumulative counts per HISTOGRAM_LE_S bound (the +Inf bucket is ``count``)
        F.array(*[F.count(F.when(F.col("lag_us") <= int(le * 1_000_000), 1)) for le in HISTOGRAM_LE_S]).alias("le_counts"),
        F.coalesce(F.sum((F.col("lag_us") < 0).cast("int")), F.lit(0)).alias("negative"),
        F.coalesce(F.sum((~F.col("source_ts_valid")).cast("int")), F.lit(0)).alias(INVALID_SOURCE_TS.name),
        *[nearest_rank("record_lag_ms", p).alias("record_" + name) for name, p in QUANTILES],
        F.max("record_lag_ms").alias("record_max_ms"),
        F.max("valid_source_ts_ms").alias("last_source_ts_ms"),
        F.sum(F.col("snap").cast("int")).alias("snapshot_excluded"),
        F.max("change").alias("has_change"),
    ).where(F.col("has_change") | (F.col("snapshot_excluded") > 0)).drop("has_change")
