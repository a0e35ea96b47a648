"""Spark settings for one machine and for clusters, each with the measurement behind it (plain
data: the session applies them, the class archive's warm-up JVM reads the driver's memory)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# a quick-to-compile JVM for small inputs: C1 only, the serial collector
SMALL_INPUT = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # One shuffle partition per core, planned up front: adaptive execution runs every shuffle
    # stage as a job of its own and broadcasts each small join side in another (a scan was ~58
    # jobs with it, 5 without; a 1.5k-record scan 8.4 s warm instead of 11.5 s, measured), and
    # with a partition per core there is nothing left for it to coalesce.
    "spark.sql.shuffle.partitions": str(os.cpu_count() or 2),
    "spark.default.parallelism": str(os.cpu_count() or 2),
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Interpreted expressions instead of generated code: a scan runs ~60 Spark jobs over little
    # data per core, and compiling their code cost more than it saved (measured on 2 cores:
    # 100k events 46.7 s vs 51.4 s, 25k 28.2 vs 31.9 s, a 1,776-record capture 22 vs 25 s).
    # On a cluster with more data per task codegen pays off, so this is a local-mode default.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
# Needed wherever it runs: UTC times; JSON objects with a repeated key (seed 001's MySQL update
# repeats "name") parse as from_json does, last one wins, instead of failing as variants.
# A scan generates ~350 classes; Spark keeps 100 compiled, so every window (watch's micro-batches,
# repeated scans in one session) compiled them all again: ~5 s per window, measured.
CLUSTER_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.variant.allowDuplicateKeys": "true",
    "spark.sql.codegen.cache.maxEntries": "2000",
    # PySpark records the Python call site of every column function for error messages: two
    # extra JVM round trips per call, ~1 s of a small scan's planning (18k instead of 31k calls)
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A frame held in one partition (a small window, engine/cache.py) is joined as it is, however
    # large Spark estimates it: above this size Spark shuffles it (a checkpoint's estimate is often
    # unknown, so "huge"), and every join of a small window would shuffle again
    "spark.sql.maxSinglePartitionBytes": str(2**62),
}
LOCAL_DEFAULTS |= CLUSTER_DEFAULTS
# what a Spark Connect client can set in its session (the others are the server's, fixed at its start)
STATIC = ("spark.sql.codegen.cache.maxEntries", "spark.python.sql.dataFrameDebugging.enabled")
SESSION_DEFAULTS: dict[str, str] = {k: v for k, v in CLUSTER_DEFAULTS.items() if k not in STATIC}
# A small input on a cluster is a small input in cold executors: what local mode does for every
# input (interpreted expressions, no adaptive re-planning) and a quick-to-compile JVM (jvm.py).
# An 800-record capture on a two-worker standalone cluster: 33.6 s as Spark's defaults, 23.1 s so.
# watch's micro-batches are small inputs too: the same plan choices (its executors keep the
# default JIT: they live as long as the watch).
SMALL_PLANS_ON_A_CLUSTER: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
SMALL_ON_A_CLUSTER: dict[str, str] = {**SMALL_PLANS_ON_A_CLUSTER, "spark.executor.extraJavaOptions": SMALL_INPUT}


# what a large window's checks run with where the session runs interpreted (local mode's default above)
GENERATED_CODE: dict[str, str] = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


@contextmanager
def generated_code(spark: Any, on: bool) -> Iterator[None]:
    """Within the block, ``spark``'s plans use generated code when ``on`` (a large window: its checks'
    compiled classes cost a fixed few seconds and save a share of every record's cost; a session
    already generating code is left as it is, a Spark Connect one is never asked: session.SessionCaps);
    the session's settings after."""
    if not on or spark.conf.get("spark.sql.codegen.wholeStage", "true") == "true":
        yield
        return
    before = {k: spark.conf.get(k, None) for k in GENERATED_CODE}
    for k, v in GENERATED_CODE.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
