"""watch soak (on demand): steady traffic into an Apache Kafka broker for a while, one watch
reading it; every ``--sample`` seconds the driver's Python RSS, the whole process tree's RSS (the
JVM included), the state store's rows and the checkpoint's size on disk. Bounded means the last
third of the run grows no more than the middle third did (what warming up adds comes first).
Usage: python -m benchmarks.soak [--minutes 10] [--rate 40] [--sample 30] [--reader python|spark]"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.watch import reader_args, rss_mb, scrape
from cdc_monitor.generator import generate
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.support.broker import ApacheKafka, free_port


def folder_mb(root: Path) -> float:
    return round(sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6, 2) if root.exists() else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=int, default=40, help="records per second produced")
    ap.add_argument("--sample", type=float, default=30)
    ap.add_argument("--reader", default="python", choices=["python", "spark"])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cdc-soak-"))
    broker = ApacheKafka(work / "kafka")
    opts = KafkaOptions.from_options({"kafka.bootstrap.servers": broker.bootstrap})
    # one continuous history (positions only grow), more than the run needs
    traffic = generate("mysql", events=int(args.rate * args.minutes * 60 * 1.1) + 100, seed=5)
    produce_traffic(traffic, opts, traffic.records[:50])  # the topics exist before watch starts
    port, ckpt = free_port(), work / "ckpt"
    proc = subprocess.Popen([sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", broker.bootstrap,
                             "--starting-offsets", "earliest", "--checkpoint", str(ckpt), "--listen", f"127.0.0.1:{port}",
                             "--interval", "5s", *reader_args(args.reader, work)],
                            stdout=(work / "watch.log").open("wb"), stderr=subprocess.STDOUT)
    stop = threading.Event()
    sent = [50]

    def steady() -> None:
        i, started = 50, time.monotonic()
        while not stop.is_set() and i < len(traffic.records):
            due = 50 + int((time.monotonic() - started) * args.rate)
            if due > i:
                produce_traffic(traffic, opts, traffic.records[i:due])
                i = due
                sent[0] = i
            stop.wait(1.0)

    samples = []
    producer = threading.Thread(target=steady, daemon=True)
    try:
        producer.start()
        started = time.monotonic()
        while time.monotonic() - started < args.minutes * 60:
            time.sleep(args.sample)
            try:
                m = scrape(port)
            except OSError:
                continue
            samples.append({"t_s": round(time.monotonic() - started), "sent": sent[0],
                            "counted": int(m.get("cdc_records_total", 0)),
                            "driver_python_rss_mb": round(m.get("cdc_monitor_state_driver_rss_bytes", 0) / 2**20, 1),
                            "tree_rss_mb": rss_mb(proc.pid), "state_rows": m.get("cdc_monitor_state_rows", 0),
                            "checkpoint_mb": folder_mb(ckpt)})
            print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        broker.stop()
    third = max(1, len(samples) // 3)
    growth = {}
    for name in ("driver_python_rss_mb", "tree_rss_mb", "state_rows", "checkpoint_mb"):
        middle = samples[2 * third - 1][name] - samples[third - 1][name] if len(samples) >= 3 else None
        last = samples[-1][name] - samples[2 * third - 1][name] if len(samples) >= 3 else None
        growth[name] = {"middle_third": middle, "last_third": last}
    print(json.dumps({"reader": args.reader, "rate": args.rate, "minutes": args.minutes, "samples": samples,
                      "growth": growth}, indent=2))


if __name__ == "__main__":
    main()
