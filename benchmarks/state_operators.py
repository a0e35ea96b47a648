"""Which of PySpark's stateful operators can carry watch's per-key history, and at what rate.

The same work three ways: a file stream of ``--batches`` micro-batches of ``--per-batch`` records
over ``--keys`` keys; per key, emit the held history plus the new records and keep the last 3
(JSON text state on the RocksDB provider), the output counted in ``foreachBatch`` as watch does.
Modes: ``apply`` (``applyInPandasWithState``, what watch used until its context moved to the JVM), ``tws`` (``transformWithState``,
rows) and ``twsp`` (``transformWithStateInPandas``). Each mode runs in its own process.
Usage: python -m benchmarks.state_operators [--keys 5000] [--per-batch 20000] [--batches 5] [--mode all]
(``CDC_MONITOR_TWS_TIME_MODE=ProcessingTime`` runs the transformWithState modes with timers/TTL enabled.)

Measured 2026-11-23 (2 cores, pyspark 4.3.0): 5,000 keys, 5 batches of 20,000: ``apply`` 33.1 s (cold 8.8 s, then
4.9-5.6 s per batch, ~4k new records/s). 2,000 keys, 2 batches of 5,000: ``apply`` 10.8 s (second batch 2.64 s),
``tws`` 13.4 s (2.13 s), ``twsp`` 17.3 s (4.53 s), all with time mode "None". With time mode "ProcessingTime" (what
TTL and timers need) ``tws`` failed at planning inside ``foreachBatch`` ([INTERNAL_ERROR] ... ``SparkPlan.session()``
is null) once and did not finish in 300 s on a second try; watch used ``applyInPandasWithState``, whose
processing-time timeouts work here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = "k string, offset long, value string, is_new boolean"


def _history(held: str | None, offsets: list[int], values: list[str]) -> tuple[list[int], list[str], str]:
    old_o, old_v = json.loads(held) if held else ([], [])
    return old_o, old_v, json.dumps([(old_o + offsets)[-3:], (old_v + values)[-3:]])


def _stream(spark, mode: str, src: str):
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.streaming.state import GroupStateTimeout

    df = spark.readStream.schema("k string, offset long, value string").option("maxFilesPerTrigger", 1).parquet(src)
    if mode == "apply":
        import pandas as pd

        def fn(key, pdfs, state):
            pdf = pd.concat(list(pdfs))
            old_o, old_v, new = _history(state.get[0] if state.exists else None, pdf["offset"].tolist(),
                                         pdf["value"].tolist())
            state.update((new,))
            pdf["is_new"] = True
            yield pd.concat([pd.DataFrame({"k": key[0], "offset": old_o, "value": old_v, "is_new": False}), pdf])

        return df.groupBy("k").applyInPandasWithState(fn, OUT, "h string", "append", GroupStateTimeout.NoTimeout)

    class Rows(StatefulProcessor):
        def init(self, handle):
            self.hist = handle.getValueState("h", "h string")

        def handleInputRows(self, key, rows, timerValues):
            rows = list(rows)
            if mode == "twsp":
                import pandas as pd

                pdf = pd.concat(rows)
                offsets, values = pdf["offset"].tolist(), pdf["value"].tolist()
            else:
                offsets, values = [r.offset for r in rows], [r.value for r in rows]
            old_o, old_v, new = _history(self.hist.get()[0] if self.hist.exists() else None, offsets, values)
            self.hist.update((new,))
            out = [(key[0], o, v, False) for o, v in zip(old_o, old_v, strict=True)]
            out += [(key[0], o, v, True) for o, v in zip(offsets, values, strict=True)]
            if mode == "twsp":
                import pandas as pd

                yield pd.DataFrame(out, columns=["k", "offset", "value", "is_new"])
            else:
                yield from (Row(k=a, offset=b, value=c, is_new=d) for a, b, c, d in out)

    grouped = df.groupBy("k")
    run = grouped.transformWithStateInPandas if mode == "twsp" else grouped.transformWithState
    return run(Rows(), OUT, "Append", os.environ.get("CDC_MONITOR_TWS_TIME_MODE", "None"))


def one(mode: str, keys: int, per_batch: int, batches: int, work: Path) -> dict:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider").getOrCreate())
    src = str(work / "src")
    if not (work / "src").exists():
        for i in range(batches):
            spark.range(i * per_batch, (i + 1) * per_batch).select(
                (F.col("id") % keys).cast("string").alias("k"), F.col("id").alias("offset"),
                F.lit("x" * 200).alias("value")).coalesce(1).write.mode("append").parquet(src)
    seconds: list[tuple[int, int, float]] = []

    def count(frame, batch_id):
        started = time.perf_counter()
        seconds.append((batch_id, frame.count(), round(time.perf_counter() - started, 2)))

    started = time.perf_counter()
    try:
        query = (_stream(spark, mode, src).writeStream.foreachBatch(count)
                 .option("checkpointLocation", str(work / f"ckpt-{mode}")).trigger(availableNow=True).start())
        query.awaitTermination(900)
        return {"mode": mode, "seconds": round(time.perf_counter() - started, 1), "batches": seconds}
    except Exception as err:  # a failing operator is a result here
        return {"mode": mode, "error": str(err).strip().splitlines()[0][:300]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--per-batch", type=int, default=20_000)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--mode", default="all", choices=["all", "apply", "tws", "twsp"])
    ap.add_argument("--work")
    args = ap.parse_args()
    if args.mode != "all":
        print(json.dumps(one(args.mode, args.keys, args.per_batch, args.batches, Path(args.work))))
        return
    work = Path(tempfile.mkdtemp(prefix="cdc-state-ops-"))
    for mode in ("apply", "tws", "twsp"):
        cmd = [sys.executable, "-m", "benchmarks.state_operators", "--mode", mode, "--keys", str(args.keys),
               "--per-batch", str(args.per_batch), "--batches", str(args.batches), "--work", str(work)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout.strip().splitlines()
            print(out[-1] if out else json.dumps({"mode": mode, "error": "no output"}))
        except subprocess.TimeoutExpired:
            print(json.dumps({"mode": mode, "error": "did not finish in 300 s"}))


if __name__ == "__main__":
    main()
