"""watch benchmark (on demand): sustained throughput with state size over several rounds, and
latency from producing a faulty record to the metric showing it.
``--backlog``: every round's records are in the broker before watch starts (a backlog to catch up
on, as after an outage), and a round's time runs from watch's start, its process start included.
``--compare-readers``: the backlog caught up by each Kafka reader in turn (the bundled one and
Spark's connector, from scripts/jars.sh), side by side over the same broker and records.
Usage: python -m benchmarks.watch [--rounds 4] [--events 10000] [--latency-probes 3] [--backlog]
       python -m benchmarks.watch --compare-readers [--events 10000]"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import parse_limit
from benchmarks.measure import _rss_and_kind, _tree
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.support.broker import ApacheKafka, free_port, spark_kafka_jars
from tests.support.promtools import get


def scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics").decode()):
        for s in fam.samples:
            key = s.name + ("{rule=" + s.labels["rule"] + "}" if "rule" in s.labels else "")
            out[key] = out.get(key, 0) + s.value
    return out


def wait(port: int, name: str, target: float, timeout: float = 900) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if scrape(port).get(name, 0) >= target:
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{name} did not reach {target}")


def state_mb(ckpt: Path) -> float:
    """The checkpoint's state folder (Spark's state store snapshots and change logs, all versions kept)."""
    root = ckpt / "spark" / "state"
    return round(sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6, 2) if root.exists() else 0.0


def rss_mb(pid: int) -> float:
    return round(sum(_rss_and_kind(p)[0] for p in _tree(pid)) / 2**20, 1)


def reader_args(reader: str, work: Path) -> list[str]:
    """watch's flags for ``reader``: Spark's connector comes with a config putting its jars on spark.jars."""
    if reader == "python":
        return []
    config = work / f"{reader}.toml"
    config.write_text(f'[spark]\n"spark.jars" = "{",".join(spark_kafka_jars())}"\n')
    return ["--kafka-reader", reader, "--config", str(config)]


def compare_readers(events: int, interval: str) -> None:
    """One backlog in the broker; each reader's watch, from its start, until every record is counted."""
    work = Path(tempfile.mkdtemp(prefix="cdc-watch-readers-"))
    broker = ApacheKafka(work / "kafka")
    traffic = generate("mysql", events=events, seed=100)
    produce_traffic(traffic, KafkaOptions.from_options({"kafka.bootstrap.servers": broker.bootstrap}))
    n = len(traffic.records)
    results: dict = {"records": n}
    try:
        for reader in ("python", "spark"):
            port = free_port()
            log = (work / f"watch-{reader}.log").open("wb")
            started = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", broker.bootstrap,
                                     "--starting-offsets", "earliest", "--checkpoint", str(work / f"ckpt-{reader}"),
                                     "--listen", f"127.0.0.1:{port}", "--interval", interval, *reader_args(reader, work)],
                                    stdout=log, stderr=subprocess.STDOUT)
            try:
                took = wait(port, "cdc_records_total", n) - started
                findings = {k: v for k, v in scrape(port).items() if k.startswith("cdc_findings_total{") and v}
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
            results[reader] = {"catch_up_s": round(took, 1), "records_per_s": round(n / took), "findings": findings}
            print(json.dumps({reader: results[reader]}), file=sys.stderr)
    finally:
        broker.stop()
    results["spark_vs_python"] = round(results["python"]["catch_up_s"] / results["spark"]["catch_up_s"], 2)
    print(json.dumps(results, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--events", type=int, default=10_000, help="data events per round")
    ap.add_argument("--latency-probes", type=int, default=3)
    ap.add_argument("--interval", default="1s")
    ap.add_argument("--max-per-batch", type=int, help="--max-offsets-per-trigger of the watch (catch-up in batches of N)")
    ap.add_argument("--backlog", action="store_true", help="produce every round before watch starts")
    ap.add_argument("--compare-readers", action="store_true", help="catch up on one backlog with each Kafka reader")
    ap.add_argument("--kafka-reader", default="python", choices=["python", "spark"])
    args = ap.parse_args()
    if args.compare_readers:
        compare_readers(args.events, args.interval)
        return
    work = Path(tempfile.mkdtemp(prefix="cdc-watch-bench-"))
    broker = ApacheKafka(work / "kafka")
    opts = KafkaOptions.from_options({"kafka.bootstrap.servers": broker.bootstrap})
    port, ckpt = free_port(), work / "ckpt"
    # one continuous history, produced in rounds (a second generator run would replay positions)
    traffic = generate("mysql", events=args.events * args.rounds, seed=100)
    n = len(traffic.records)
    slices = [traffic.records[max(10, n * i // args.rounds):n * (i + 1) // args.rounds] for i in range(args.rounds)]
    produce_traffic(traffic, opts, traffic.records[:10])  # topics exist before watch starts
    if args.backlog:
        for records in slices:
            produce_traffic(traffic, opts, records)
    log = (work / "watch.log").open("wb")
    launched = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", broker.bootstrap,
                             "--starting-offsets", "earliest", "--checkpoint", str(ckpt), "--listen", f"127.0.0.1:{port}",
                             "--interval", args.interval, *(["--max-offsets-per-trigger", str(args.max_per_batch)]
                                                            if args.max_per_batch else []),
                             *reader_args(args.kafka_reader, work)], stdout=log, stderr=subprocess.STDOUT)
    results: dict = {"rounds": [], "latency_s": []}
    try:
        done = wait(port, "cdc_records_total", 10)
        total = 10
        for records in slices:
            started = launched if args.backlog else time.monotonic()
            if not args.backlog:
                produce_traffic(traffic, opts, records)
            total += len(records)
            done = wait(port, "cdc_records_total", total)
            took = done - started
            results["rounds"].append({"records": len(records), "seconds": round(took, 1),
                                      "records_per_s": round(len(records) / took), "state_mb": state_mb(ckpt),
                                      "state_rows": scrape(port).get("cdc_monitor_state_rows", 0),
                                      "driver_python_rss_mb": round(
                                          scrape(port).get("cdc_monitor_state_driver_rss_bytes", 0) / 2**20, 1),
                                      "rss_mb": rss_mb(proc.pid)})
            print(json.dumps(results["rounds"][-1]), file=sys.stderr)
        for _ in range(args.latency_probes):
            before = scrape(port).get("cdc_findings_total{rule=invalid_json}", 0)
            from confluent_kafka import Producer

            p = Producer({"bootstrap.servers": broker.bootstrap})
            started = time.monotonic()
            p.produce("mysql_server_1.inventory.orders", key=b'{"id": 1}', value=b"{not json", partition=0)
            p.flush(10)
            seen = wait(port, "cdc_findings_total{rule=invalid_json}", before + 1)
            results["latency_s"].append(round(seen - started, 2))
            time.sleep(2)
        # the traffic is clean: every finding but the probes' undecodable records is a false one
        results["findings"] = {k: v for k, v in scrape(port).items()
                               if k.startswith("cdc_findings_total{") and v and "invalid_json" not in k}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        broker.stop()
    results["latency_median_s"] = statistics.median(results["latency_s"]) if results["latency_s"] else None
    if args.backlog:  # the target's yardstick: the same records parsed with orjson on every core, nothing else
        write_capture(traffic, work / "backlog.jsonl")
        limit = parse_limit.run([str(work / "backlog.jsonl")])
        results["parse_limit_records_per_s"] = round(limit["records"] / limit["seconds"])
        rate = sum(r["records"] for r in results["rounds"]) / max(r["seconds"] for r in results["rounds"])
        results["catch_up_vs_parse_limit"] = round(rate / results["parse_limit_records_per_s"], 4)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
