"""Decode's JSON parsing two ways on the same records: Spark's ``from_json`` (what ``decode_records``
does: value and key parsed with their partial schemas, each checked to be one document) against
Arrow batches parsed by orjson in Python workers (``mapInArrow``), which the engine issue asks to
measure before adopting. Both produce the same intermediate columns (``v``, ``k`` as the partial
schemas shape them, nested objects as JSON text, and the one-document flags); the rest of decoding
(column expressions over them) would be the same either way, so it is timed once for reference.
Usage: python -m benchmarks.decode_arrow CAPTURE... [--runs 3]

The orjson path is a prototype for timing: numbers re-printed by Python (``1.0E10`` becomes
``10000000000.0``) and objects re-serialized by orjson differ from Spark's text in places."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any

import orjson


def _text(x: Any) -> str | None:
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return repr(x)
    return orjson.dumps(x).decode()


def _struct(d: Any, names: list[str], nested: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(d, dict):
        return None
    out = {}
    for name in names:
        x = d.get(name)
        shape = nested.get(name)
        if shape is None:
            out[name] = _text(x)
        elif isinstance(shape, list):  # array of structs
            out[name] = [_struct(e, *shape) for e in x] if isinstance(x, list) else None
        else:
            out[name] = _struct(x, *shape)
    return out


def _shapes() -> tuple[tuple[list[str], dict[str, Any]], tuple[list[str], dict[str, Any]]]:
    from pyspark.sql import types as T

    from cdc_monitor.decoding.envelope import KEY_SCHEMA, VALUE_SCHEMA

    def shape(st: T.StructType) -> tuple[list[str], dict[str, Any]]:
        nested: dict[str, Any] = {}
        for f in st.fields:
            if isinstance(f.dataType, T.StructType):
                nested[f.name] = shape(f.dataType)
            elif isinstance(f.dataType, T.ArrayType) and isinstance(f.dataType.elementType, T.StructType):
                nested[f.name] = list(shape(f.dataType.elementType))
        return [f.name for f in st.fields], nested

    return shape(VALUE_SCHEMA), shape(KEY_SCHEMA)


def batch_parser(out: Any) -> Any:
    """The ``mapInArrow`` function producing ``out``'s columns."""
    return lambda batches: _parse_batches(batches, out)


def _parse_batches(batches: Iterator[Any], out: Any) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from cdc_monitor.decoding.envelope import CORRUPT

    (vnames, vnested), (knames, knested) = _shapes()
    schema = to_arrow_schema(out)

    def parse(raw: bytes | None, names: list[str], nested: dict[str, Any]) -> tuple[dict[str, Any] | None, bool | None]:
        if raw is None:
            return None, None
        try:
            d = orjson.loads(raw)  # strict: anything after the first document is an error
        except orjson.JSONDecodeError:
            return None, False
        if not isinstance(d, dict):
            return {**dict.fromkeys(names), CORRUPT: raw.decode("utf-8", "replace")}, True
        return _struct(d, names, nested), True

    for batch in batches:
        vs, ks = batch.column("value").to_pylist(), batch.column("key").to_pylist()
        v_rows, v_one, k_rows, k_one = [], [], [], []
        for raw in vs:
            row, one = parse(raw, vnames, vnested)
            v_rows.append(row)
            v_one.append(one)
        for raw in ks:
            row, one = parse(raw, knames, knested)
            k_rows.append(row)
            k_one.append(one)
        yield pa.RecordBatch.from_arrays(
            [pa.array(v_rows, schema.field("v").type), pa.array(k_rows, schema.field("k").type),
             pa.array(v_one, pa.bool_()), pa.array(k_one, pa.bool_())], schema=schema)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.decoding.envelope import JSON_OPTIONS, KEY_SCHEMA, VALUE_SCHEMA
    from cdc_monitor.decoding.events import _one_document
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    spark = get_spark()
    out = T.StructType([T.StructField("v", VALUE_SCHEMA), T.StructField("k", KEY_SCHEMA),
                        T.StructField("value_one", T.BooleanType()), T.StructField("key_one", T.BooleanType())])
    records = read_capture(spark, args.paths).records.localCheckpoint()  # every way reads these
    n = records.count()
    value, key = F.col("value").cast("string"), F.col("key").cast("string")
    ways = {
        "spark from_json": records.select(F.from_json(value, VALUE_SCHEMA, JSON_OPTIONS).alias("v"),
                                          F.from_json(key, KEY_SCHEMA, JSON_OPTIONS).alias("k"),
                                          F.when(value.isNotNull(), _one_document(value)).alias("value_one"),
                                          F.when(key.isNotNull(), _one_document(key)).alias("key_one")),
        "orjson in Arrow batches": records.select("key", "value").mapInArrow(batch_parser(out), out),
        "whole decode (reference)": decode_records(records),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.runs + 1):  # the first round warms up
        for name, frame in ways.items():
            started = time.perf_counter()
            frame.write.format("noop").mode("overwrite").save()
            seconds[name].append(round(time.perf_counter() - started, 2))
    best = {name: min(s[1:]) for name, s in seconds.items()}
    # the two parsers agree on which values are not one JSON document (a sanity check, not a test)
    flagged = {name: ways[name].where(~F.col("value_one")).count() for name in list(ways)[:2]}
    print(json.dumps({"records": n, "values_not_one_document": flagged, "seconds": seconds, "best": best,
                      "records_per_s": {name: round(n / s) for name, s in best.items()}}, indent=1))


if __name__ == "__main__":
    main()
