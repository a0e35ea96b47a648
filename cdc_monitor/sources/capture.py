"""kcat ``-J`` JSON-lines captures (plain or gzip; a file or a folder) as Kafka-source frames.

One line per record: ``{"topic","partition","offset","tstype","ts","broker","headers","key","payload"}``
with ``headers`` as a flat ``[k1, v1, k2, v2, ...]`` list and ``payload`` null for tombstones.
Blank lines are skipped; a line that is not such an object is returned in ``rejects`` so the
pipeline can count it as a finding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.errors import AnalysisException
from pyspark.sql import Column, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_monitor.errors import InputError
from cdc_monitor.sources.base import KAFKA_SCHEMA, SourceResult
from cdc_monitor.vocabulary import LABELS_SUFFIX

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

KCAT_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("tstype", T.StringType()),
        T.StructField("ts", T.LongType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("headers", T.ArrayType(T.StringType())),
        T.StructField("key", T.StringType()),
        T.StructField("payload", T.StringType()),
        T.StructField("_corrupt", T.StringType()),
    ]
)
_TSTYPES = {"create": 0, "logappend": 1}
REJECT_TEXT_CHARS = 200


def _nullable(col: Column) -> Column:
    """The same value, typed nullable as in Spark's Kafka source schema (a constant condition
    would be folded away; every kept record has a topic)."""
    return F.when(F.col("r.topic").isNotNull(), col)


def expand_paths(paths: Iterable[str | Path]) -> list[str]:
    """Files named, and the non-hidden files under folders named, sorted; errors name the path."""
    files: list[str] = []
    for raw in paths:
        if "://" in str(raw):  # hdfs://, s3a://, file://: Spark lists it (a cluster's shared storage)
            files.append(str(raw))
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(  # hidden files and folders inside the folder are skipped (not the folder's own path),
                # and so are the generator's fault labels (ground truth, not records)
                p for p in path.rglob("*") if p.is_file() and not any(s.startswith(".") for s in p.relative_to(path).parts)
                and not p.name.endswith(LABELS_SUFFIX)
            )
            if not found:
                raise InputError(f"capture folder {path} holds no files: point at kcat -J captures")
            files.extend(str(p.resolve()) for p in found)
        elif path.is_file():
            files.append(str(path.resolve()))
        else:
            raise InputError(f"capture path {path} does not exist: check the path, or use --bootstrap-servers")
    if not files:
        raise InputError("no capture paths given: pass kcat -J files or folders, or --bootstrap-servers")
    return files


TS_FLOOR_MS, TS_CEILING_MS = -62_135_596_800_000, 253_402_300_799_999  # 0001-01-01 .. 9999-12-31


def read_capture(spark: SparkSession, paths: Sequence[str | Path]) -> SourceResult:
    files = expand_paths(paths)
    try:
        lines = spark.read.text(files).withColumn("file", F.input_file_name())
    except AnalysisException as exc:  # a URL only Spark could check
        if "PATH_NOT_FOUND" not in str(exc):
            raise
        raise InputError(f"capture path not found: {str(exc).splitlines()[0][:300]}: check the URL") from None
    lines = lines.where(F.trim("value") != "")
    parsed = lines.select(
        "file",
        "value",
        F.from_json(
            "value", KCAT_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"}
        ).alias("r"),
    )
    ok = (
        F.col("r").isNotNull()
        & F.col("r._corrupt").isNull()
        & F.col("r.topic").isNotNull()
        & F.col("r.partition").isNotNull()
        & F.col("r.offset").isNotNull()
    )
    observed = Observation("capture_rejects")
    parsed = parsed.observe(observed, F.count_if(~ok).alias("rejects"))
    tstype = F.coalesce(
        *[F.when(F.col("r.tstype") == name, F.lit(code)) for name, code in _TSTYPES.items()], F.lit(-1)
    )
    headers = F.when(
        F.col("r.headers").isNotNull(),
        F.transform(
            F.sequence(F.lit(0), F.floor(F.size("r.headers") / 2).cast("int") - 1),
            lambda i: _nullable(F.struct(
                F.element_at("r.headers", i * 2 + 1).alias("key"),
                F.encode(F.element_at("r.headers", i * 2 + 2), "UTF-8").alias("value"),
            )),
        ),
    )
    records = parsed.where(ok).select(
        F.encode("r.key", "UTF-8").alias("key"),
        F.encode("r.payload", "UTF-8").alias("value"),
        F.col("r.topic").alias("topic"),
        F.col("r.partition").alias("partition"),
        F.col("r.offset").alias("offset"),
        # a time Spark can hold (years 1..9999); any other value is no record time, not a failed read
        F.when(F.col("r.ts").between(TS_FLOOR_MS, TS_CEILING_MS), F.timestamp_millis("r.ts")).alias("timestamp"),
        _nullable(tstype).alias("timestampType"),
        F.when(F.size("r.headers") > 1, headers).alias("headers"),
    )
    rejects = parsed.where(~ok).select(
        "file", F.substring(F.col("value"), 1, REJECT_TEXT_CHARS).alias("line")
    )
    assert records.schema == KAFKA_SCHEMA, records.schema  # the Kafka source's columns, exactly
    return SourceResult(records=records, rejects=rejects, rejects_observed=observed,
                        description={"kind": "capture", "files": files})
