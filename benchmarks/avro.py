"""Decode rate of Avro (Confluent wire format) beside JSON, on the same records.

    python -m benchmarks.avro --events 100000 [--runs 2]

Generates a mixed MySQL/PostgreSQL/SQL Server/Oracle stream, writes its records twice as Parquet
with Spark's Kafka-source columns (values as the JSON converter writes them with schemas off, and
as the Avro converter writes them: wire format, schema ids assigned here as a registry would), then
measures side by side: the per-core limits of orjson and fastavro over the values alone, and
the scan's decode stage (read + [Avro -> JSON text in Arrow batches] + decode, checkpointed, one
job each), best of ``--runs`` in one warm session."""

from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path

WORK = Path(__file__).resolve().parent / ".work"
FLAVOURS = ("mysql", "postgresql", "sqlserver", "oracle")


def _records(events: int) -> tuple[list[dict], dict[int, str]]:
    import fastavro

    from cdc_monitor.avro.schemas import connect_to_avro, strip_logical_types, to_avro_datum
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.records import serialize

    ids: dict[str, int] = {}
    parsed: dict[int, object] = {}
    rows: list[dict] = []

    def wire(schema: dict, value: object) -> bytes:
        text = json.dumps(connect_to_avro(schema), separators=(",", ":"))
        sid = ids.setdefault(text, len(ids) + 1)
        if sid not in parsed:
            parsed[sid] = fastavro.parse_schema(strip_logical_types(json.loads(text)))
        out = io.BytesIO()
        out.write(b"\x00" + sid.to_bytes(4, "big"))
        fastavro.schemaless_writer(out, parsed[sid], to_avro_datum(schema, value))
        return out.getvalue()

    for i, flavour in enumerate(FLAVOURS):
        traffic = generate(flavour, events=events // len(FLAVOURS), seed=50 + i, value_format="avro")
        for rec in traffic.records:
            key, value = serialize(rec, False)
            rows.append({
                "topic": rec.topic, "partition": rec.partition or 0, "offset": rec.offset, "ts": rec.ts,
                "json_key": key.encode() if key is not None else None,
                "json_value": value.encode() if value is not None else None,
                "avro_key": wire(rec.key_schema, rec.key) if rec.key is not None else None,
                "avro_value": wire(rec.value_schema, rec.value) if rec.value is not None else None,
            })
    return rows, {sid: text for text, sid in ids.items()}


def _write(rows: list[dict], kind: str, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "key": pa.array([r[f"{kind}_key"] for r in rows], pa.binary()),
        "value": pa.array([r[f"{kind}_value"] for r in rows], pa.binary()),
        "topic": [r["topic"] for r in rows],
        "partition": pa.array([r["partition"] for r in rows], pa.int32()),
        "offset": pa.array([r["offset"] for r in rows], pa.int64()),
        "timestamp": pa.array([r["ts"] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0] * len(rows), pa.int32()),
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _python_limits(rows: list[dict], schemas: dict[int, str]) -> dict[str, float]:
    import fastavro
    import orjson

    from cdc_monitor.avro.schemas import strip_logical_types

    parsed = {sid: fastavro.parse_schema(strip_logical_types(json.loads(t))) for sid, t in schemas.items()}
    values = [r for r in rows if r["json_value"] is not None]
    started = time.perf_counter()
    for r in values:
        orjson.loads(r["json_value"])
    json_s = time.perf_counter() - started
    started = time.perf_counter()
    for r in values:
        data = r["avro_value"]
        fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed[int.from_bytes(data[1:5], "big")], None)
    avro_s = time.perf_counter() - started
    return {"orjson_values_per_s_one_core": round(len(values) / json_s), "fastavro_values_per_s_one_core":
            round(len(values) / avro_s), "values": len(values)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    from pyspark.sql import functions as F

    from cdc_monitor.decoding import decode_records
    from cdc_monitor.decoding.avro_wire import decode_wire_format
    from cdc_monitor.engine.cache import FrameCache
    from cdc_monitor.runtime.session import capabilities, get_spark

    folder = WORK / f"avro-{args.events}"
    rows, schemas = _records(args.events)
    for kind in ("json", "avro"):
        _write(rows, kind, folder / f"{kind}.parquet")
    limits = _python_limits(rows, schemas)
    spark = get_spark()
    caps = capabilities(spark)
    results: dict[str, object] = {"records": len(rows), **limits}
    for kind in ("json", "avro"):
        best = None
        for _ in range(args.runs):
            cache = FrameCache()
            records = spark.read.parquet(str(folder / f"{kind}.parquet")).withColumn(
                "headers", F.lit(None).cast("array<struct<key:string,value:binary>>"))
            if kind == "avro":
                records = decode_wire_format(records, schemas)
            started = time.perf_counter()
            events = cache.materialize(decode_records(records, session=caps))
            took = time.perf_counter() - started
            bad = events.where(F.col("decode_error").isNotNull()).count()
            cache.release()
            assert bad == 0, f"{bad} {kind} records did not decode"
            best = took if best is None else min(best, took)
        results[f"{kind}_decode_seconds"] = round(best, 2)
        results[f"{kind}_decode_records_per_s"] = round(len(rows) / best)
    (WORK / "avro.json").write_text(json.dumps(results, indent=1))
    print("| decode (same records) | seconds | records/s |\n| --- | ---: | ---: |")
    for kind in ("json", "avro"):
        print(f"| scan decode stage, {kind} | {results[f'{kind}_decode_seconds']} | {results[f'{kind}_decode_records_per_s']:,} |")
    print(f"| orjson, values only, one core | - | {limits['orjson_values_per_s_one_core']:,} |")
    print(f"| fastavro, values only, one core | - | {limits['fastavro_values_per_s_one_core']:,} |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
