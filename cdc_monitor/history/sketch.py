"""Lag percentiles that can be merged: ``watch`` measures an interval over several micro-batches,
so it keeps each interval's lags as counts per bucket and reads the percentiles from the merged
counts when the interval closes (``scan`` sees its whole window at once and keeps exact ones).

A lag of at most ``EXACT_MS`` milliseconds either way is its own bucket (exact). A larger one
falls in a bucket of relative width ``GAMMA``: bucket ``EXACT_MS + j`` holds lags in
``(EXACT_MS * GAMMA**(j-1), EXACT_MS * GAMMA**j]`` (negative lags mirrored), and reads back as the
bucket's middle, ``2 * EXACT_MS * GAMMA**j / (GAMMA + 1)``: within 0.5% of every lag in it, and
within 1% once rounded to a whole millisecond. A table's interval with lags from 10 ms to 10 min
needs at most ~1,100 buckets; real ones hold a few dozen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

EXACT_MS = 100
GAMMA = 1.01
_LOG_GAMMA = math.log(GAMMA)


def lag_bucket(lag_ms: Column) -> Column:
    """The bucket of a lag in milliseconds (null stays null): a bigint."""
    size = F.abs(lag_ms)
    far = F.lit(EXACT_MS) + F.ceil(F.log(size / EXACT_MS) / F.lit(_LOG_GAMMA))
    return F.when(size <= EXACT_MS, lag_ms).otherwise(F.signum(lag_ms) * far).cast("bigint")


def bucket_value(bucket: int) -> int:
    """A bucket's lag, in whole milliseconds."""
    size = abs(bucket)
    if size <= EXACT_MS:
        return bucket
    middle = 2 * EXACT_MS * GAMMA ** (size - EXACT_MS) / (GAMMA + 1)
    return int(math.copysign(round(middle), bucket))


def merge(into: dict[str, int], counts: Mapping[str, int]) -> dict[str, int]:
    """Add ``counts`` (bucket, as text: JSON keys, to a count) into ``into``."""
    for b, n in counts.items():
        into[b] = into.get(b, 0) + int(n)
    return into


def percentile(counts: Mapping[str, int], p: float, top: int | None = None) -> int | None:
    """The nearest-rank percentile ``p`` of the lags counted (``percentile_disc``, as the exact
    ones: the first bucket where the running count reaches ``ceil(p * n)``), no larger than ``top``
    (the interval's exact maximum). None without lags."""
    ordered = sorted((int(b), int(n)) for b, n in counts.items() if int(n) > 0)
    total = sum(n for _, n in ordered)
    if not total:
        return None
    rank, seen = max(1, math.ceil(p * total)), 0
    for b, n in ordered:
        seen += n
        if seen >= rank:
            value = bucket_value(b)
            return value if top is None else min(value, top)
    return None  # (unreachable: the running count reaches total)
