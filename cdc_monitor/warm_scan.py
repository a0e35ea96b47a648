"""What ``cdc-monitor warm-up`` runs under ``spark-submit`` (cdc_monitor/runtime/jvm.py): a scan of a small
generated faulty capture (and twice with ``--history``), so the driver JVM loads the classes a scan loads, then writes them to
its class archive when it exits. Usage: spark-submit ... warm_scan.py FOLDER"""

from __future__ import annotations

import sys
from pathlib import Path


def main(folder: str) -> None:
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import get_spark
    from cdc_monitor.sources.capture import read_capture

    path = Path(folder) / "postgresql.jsonl"
    write_capture(generate("postgresql", events=120, seed=3, faults=True), path)
    spark = get_spark(small_input=True)
    run_scan(read_capture(spark, [str(path)]), ScanConfig())
    # --history: the first scan writes a batch (Parquet and JSON writers), the second reads it
    history = ScanConfig(history=str(Path(folder) / "history"))
    for _ in range(2):
        run_scan(read_capture(spark, [str(path)]), history)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
