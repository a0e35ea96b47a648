"""watch against an Apache Kafka broker (tests/support/broker.py: scripts/jars.sh fetches it): the
catch-up of a backlog against the parse limit of the same records, the fault-to-metric latency and
the soak. Each a whole ``cdc-monitor watch`` process of each tree measured, one after the other."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from argparse import Namespace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.harness import PY, env_of, log, measurement, option, ratio, table, tree_mb, trees


def parse_limit(paths: list[str]) -> dict:
    """The machine's JSON-parse limit: every record's envelope, value and key parsed with orjson in as many
    processes as cores, nothing else."""
    procs = os.cpu_count() or 1
    chunks = []
    for p in paths:
        size = Path(p).stat().st_size
        step = max(1, size // procs)
        chunks += [(p, i * step, size if i == procs - 1 else (i + 1) * step) for i in range(procs)]
    started = time.perf_counter()
    with ProcessPoolExecutor(procs) as pool:
        n = sum(pool.map(_parse, chunks))
    return {"records": n, "seconds": round(time.perf_counter() - started, 3)}


def _parse(chunk: tuple[str, int, int]) -> int:
    import orjson

    path, start, end = chunk
    n = 0
    with open(path, "rb") as fh:
        if start:
            fh.seek(start - 1)
            fh.readline()  # the line straddling the boundary belongs to the previous chunk
        while fh.tell() < end and (line := fh.readline()):
            rec = orjson.loads(line)
            for field in ("payload", "key"):
                if rec.get(field) is not None:
                    orjson.loads(rec[field])
            n += 1
    return n


def scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    from tests.support.promtools import get

    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics").decode()):
        for s in fam.samples:
            key = s.name + ("{rule=" + s.labels["rule"] + "}" if "rule" in s.labels else "")
            out[key] = out.get(key, 0) + s.value
    return out


def wait(port: int, name: str, target: float, timeout: float = 1800) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if scrape(port).get(name, 0) >= target:
                return time.monotonic()
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{name} did not reach {target}")


class World:
    """A broker with generated traffic, and a watch process of a tree reading it from the earliest offsets."""

    def __init__(self, flavour: str = "mysql", events: int = 10_000, seed: int = 100, schemas: bool = True) -> None:
        from cdc_monitor.generator import generate
        from cdc_monitor.sources.kafka.options import KafkaOptions
        from tests.support.broker import ApacheKafka

        self.work = Path(tempfile.mkdtemp(prefix="cdc-watch-bench-"))
        self.broker = ApacheKafka(self.work / "kafka")
        self.kafka = KafkaOptions.from_options({"kafka.bootstrap.servers": self.broker.bootstrap})
        self.traffic = generate(flavour, events=events, seed=seed, schemas=schemas)
        self.watches = 0

    def produce(self, first: int = 0, last: int | None = None) -> int:
        from cdc_monitor.generator.produce import produce_traffic

        records = self.traffic.records[first:last]
        produce_traffic(self.traffic, self.kafka, records)
        return len(records)

    def watch(self, tree: Path, interval: str = "1s", extra: str = "") -> tuple[subprocess.Popen, int, Path]:
        from tests.support.broker import free_port

        self.watches += 1
        port, ckpt = free_port(), self.work / f"ckpt-{self.watches}"
        proc = subprocess.Popen([PY, "-P", "-m", "cdc_monitor", "watch", "--bootstrap-servers", self.broker.bootstrap,
                                 "--starting-offsets", "earliest", "--checkpoint", str(ckpt), "--listen", f"127.0.0.1:{port}",
                                 "--interval", interval, *shlex.split(extra)], env=env_of(tree),
                                stdout=(self.work / f"watch-{self.watches}.log").open("wb"), stderr=subprocess.STDOUT)
        return proc, port, ckpt

    def stop(self, proc: subprocess.Popen | None = None) -> None:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(120)
        else:
            self.broker.stop()
            shutil.rmtree(self.work, ignore_errors=True)


WATCH = (option("--interval", default="1s", help="watch's --interval"),
         option("--watch-args", default="", help="more flags of every watch, e.g. '--max-offsets-per-trigger 20000'"))


@measurement("catch-up", *WATCH, events="50000")
def catch_up(opts: Namespace) -> None:
    """watch's catch-up of a backlog (MySQL traffic in the broker before it starts; its start included)
    against the parse limit of the same records (orjson on every core, nothing else)."""
    from cdc_monitor.generator.kcat_writer import write_capture

    world = World(events=opts.events[0])
    try:
        n = world.produce()
        write_capture(world.traffic, world.work / "backlog.jsonl")
        limit = parse_limit([str(world.work / "backlog.jsonl")])
        rows = []
        for name, tree in trees(opts, "watch").items():
            started = time.monotonic()
            proc, port, _ = world.watch(tree, opts.interval, opts.watch_args)
            try:
                took = wait(port, "cdc_records_total", n) - started
            finally:
                world.stop(proc)
            rows.append([name, n, round(took, 1), round(n / took), ratio(n / took, limit["records"] / limit["seconds"])])
    finally:
        world.stop()
    table(f"a backlog of {n:,} records; the parse limit {limit['records'] / limit['seconds']:,.0f} records/s",
          ["tree", "records", "catch-up (s)", "records/s", "/ parse limit"], rows)


@measurement("latency", option("--probes", type=int, default=3), *WATCH, events="2000")
def latency(opts: Namespace) -> None:
    """An undecodable record produced to its ``cdc_findings_total{rule="invalid_json"}`` series, watch caught up."""
    from confluent_kafka import Producer

    world = World(events=opts.events[0])
    rows = []
    try:
        n = world.produce()
        for name, tree in trees(opts, "watch").items():
            proc, port, _ = world.watch(tree, opts.interval, opts.watch_args)
            seen = []
            try:
                wait(port, "cdc_records_total", n)
                for _ in range(opts.probes):
                    before = scrape(port).get("cdc_findings_total{rule=invalid_json}", 0)
                    p = Producer({"bootstrap.servers": world.broker.bootstrap})
                    started = time.monotonic()
                    p.produce("mysql_server_1.inventory.orders", key=b'{"id": 1}', value=b"{not json", partition=0)
                    p.flush(10)
                    seen.append(round(wait(port, "cdc_findings_total{rule=invalid_json}", before + 1) - started, 2))
                    time.sleep(2)
            finally:
                world.stop(proc)
            n += opts.probes
            rows.append([name, ", ".join(map(str, seen)), statistics.median(seen)])
    finally:
        world.stop()
    table(f"fault to metric, watch --interval {opts.interval}", ["tree", "probes (s)", "median (s)"], rows)


@measurement("soak", option("--minutes", type=float, default=10), option("--rate", type=int, default=40, help="records/s sent"),
             option("--sample", type=float, default=30, help="seconds between samples"), option("--flavour", default="mysql"),
             option("--no-schemas", action="store_true"), *WATCH, events="0")
def soak(opts: Namespace) -> None:
    """Steady traffic for a while, one watch (--interval 5s unless given); every --sample seconds: records
    sent and counted, driver Python RSS, the process tree's RSS, state rows, the checkpoint's size. Bounded
    means the last third grows no more than the middle third did."""
    world = World(opts.flavour, int(opts.rate * opts.minutes * 60 * 1.1) + 100, 5, not opts.no_schemas)
    world.produce(0, 50)  # the topics exist before watch starts
    interval = opts.interval if opts.interval != "1s" else "5s"
    proc, port, ckpt = world.watch(trees(opts, "watch")["watch"], interval, opts.watch_args)
    stop, sent = threading.Event(), [50]

    def steady() -> None:
        started = time.monotonic()
        while not stop.is_set() and sent[0] < len(world.traffic.records):
            due = 50 + int((time.monotonic() - started) * opts.rate)
            if due > sent[0]:
                world.produce(sent[0], due)
                sent[0] = due
            stop.wait(1.0)

    samples: list[dict] = []
    producer = threading.Thread(target=steady, daemon=True)
    producer.start()
    try:
        started = time.monotonic()
        while time.monotonic() - started < opts.minutes * 60:
            time.sleep(opts.sample)
            try:
                m = scrape(port)
            except OSError:
                continue
            samples.append({"at (s)": round(time.monotonic() - started), "sent": sent[0],
                            "counted": int(m.get("cdc_records_total", 0)),
                            "driver Python RSS (MB)": round(m.get("cdc_monitor_state_driver_rss_bytes", 0) / 2**20, 1),
                            "tree RSS (MB)": tree_mb(proc.pid), "state rows": int(m.get("cdc_monitor_state_rows", 0)),
                            "checkpoint (MB)": round(sum(p.stat().st_size for p in ckpt.rglob("*") if p.is_file()) / 1e6, 1)})
            log(json.dumps(samples[-1]))
    finally:
        stop.set()
        producer.join(60)
        world.stop(proc)
        world.stop()
    if not samples:
        log("no sample: watch's /metrics did not answer within --minutes")
    else:
        table(f"soak: {opts.rate:,} records/s for {opts.minutes} min, {opts.flavour}", list(samples[0]),
              [list(s.values()) for s in samples])
    if len(samples) >= 3:
        a, b, c = samples[len(samples) // 3 - 1], samples[2 * len(samples) // 3 - 1], samples[-1]
        table("growth", ["measure", "middle third", "last third"],
              [[k, round(b[k] - a[k], 1), round(c[k] - b[k], 1)] for k in list(samples[0])[3:]])
