"""`cdc-monitor watch` end to end on a real broker: faulty traffic produced in two bursts (transactions
spanning them and topics; the first burst's transaction markers arrive with the second), a kill -9
between saving the first batch and Spark committing it, the second burst while the monitor is down,
a restart, exact fault counts on /metrics, overdue, the state store's size, SIGTERM.
Batch boundaries inside one run: tests/test_watch_engine.py (the same engine)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from prometheus_client.parser import text_string_to_metric_families

from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.support.broker import free_port
from tests.support.promtools import get


def metrics(port: int) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(get(f"http://127.0.0.1:{port}/metrics").decode()):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def total(samples: dict[str, list], name: str, **labels: str) -> float:
    return sum(s.value for s in samples.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items()))


def start_watch(bootstrap: str, checkpoint, port: int, log, *extra: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cdc_monitor", "watch", "--bootstrap-servers", bootstrap,
         "--topics", r"sqlserver1\..*|__debezium-heartbeat\.sqlserver1",
         "--starting-offsets", "earliest", "--checkpoint", str(checkpoint), "--listen", f"127.0.0.1:{port}",
         "--interval", "1s", "--grace", "3s", "--job", "watch-test", *extra],
        stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_for(port: int, proc: subprocess.Popen, records: int, timeout: float = 240) -> dict[str, list]:
    deadline = time.monotonic() + timeout
    last: dict[str, list] = {}
    while time.monotonic() < deadline:
        assert proc.poll() is None, "watch exited early"
        try:
            last = metrics(port)
        except OSError:
            time.sleep(0.5)
            continue
        if total(last, "cdc_records_total") >= records:
            return last
        time.sleep(0.5)
    raise AssertionError(f"watch processed {total(last, 'cdc_records_total')} of {records} records in {timeout}s")


def test_watch_counts_every_fault_once_across_bursts_and_a_restart(kafka_broker, request, tmp_path):
    """With CDC_MONITOR_WATCH_ON_CLUSTER=1 the restart moves the watch from local mode to the
    session's Spark standalone cluster (executors whose Python has no cdc-monitor but what the
    driver ships) and resumes from the same checkpoint (~30 s more: off by default for the suite's
    time budget)."""
    on_cluster = os.environ.get("CDC_MONITOR_WATCH_ON_CLUSTER") == "1"
    extra = request.getfixturevalue("spark_cluster")["args"] if on_cluster else []
    traffic = generate("sqlserver", events=250, seed=17, faults=True, fault_repeats=1, heartbeats=True)  # each fault once
    opts = KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker})
    recs = traffic.records
    cuts = [0, len(recs) // 2, len(recs)]
    bursts = [recs[a:b] for a, b in itertools.pairwise(cuts)]
    # the first burst's markers come with the second (the transaction topic exists from the start):
    # the first batch holds transactions' events and no marker of their server yet
    marker = [r.topic == traffic.flavour.transaction_topic for r in bursts[0]]
    bursts = [[r for r, m in zip(bursts[0], marker, strict=True) if not m],
              [r for r, m in zip(bursts[0], marker, strict=True) if m] + bursts[1]]
    port, ckpt = free_port(), tmp_path / "ckpt"
    log = (tmp_path / "watch.log").open("wb")

    produce_traffic(traffic, opts, bursts[0])
    # kill -9 right after the driver saved its first batch, before Spark committed it: on restart
    # Spark runs that batch again (its state store from the version before) and the driver skips it
    crash = dict(os.environ, CDC_MONITOR_WATCH_CRASH_AFTER_SAVE="1")
    proc = start_watch(kafka_broker, ckpt, port, log, env=crash)
    try:
        assert proc.wait(300) == -signal.SIGKILL  # the first batch, cold: ~100 s alone, more on a loaded machine
        produce_traffic(traffic, opts, bursts[1])  # produced while the monitor is down
        proc = start_watch(kafka_broker, ckpt, port, log, *extra)
        after = wait_for(port, proc, len(recs))
        # counters continued from the checkpoint: nothing lost, nothing counted twice
        assert total(after, "cdc_records_total") == len(recs)
        found = Counter()
        for s in after["cdc_findings_total"]:
            found[s.labels["rule"]] += int(s.value)
        expected = Counter(d["rule"] for d in label_dicts(traffic))
        assert +found == expected
        # the connector's newest heartbeat, for the stalled-server alert (idle is not stalled)
        beats = [r.value["ts_ms"] for r in recs if r.topic.startswith("__debezium-heartbeat.")]
        assert total(after, "cdc_last_heartbeat_timestamp_seconds", server="sqlserver1") == max(beats) / 1000
        # Debezium's newest transaction stays open; past the 3 s grace it shows as overdue. Spark runs
        # the batch it had not committed again, and the driver skips it
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            samples = metrics(port)
            if (total(samples, "cdc_window_transactions", status="overdue") == 1
                    and "was already applied; skipped" in (tmp_path / "watch.log").read_text()
                    and total(samples, "cdc_monitor_last_success_timestamp_seconds", job="watch-test") > time.time() - 90
                    and total(samples, "cdc_monitor_state_rows", job="watch-test") > 0):  # reported after the batch
                break
            time.sleep(0.5)
        else:
            raise AssertionError("no overdue transaction, skipped re-run, completed window or state size reported")
        assert total(samples, "cdc_records_total") == len(recs)  # the re-run counted nothing twice
        # the state lives in Spark's state store: its size is reported, the driver holds no per-key state
        assert total(samples, "cdc_monitor_state_driver_rss_bytes", job="watch-test") > 0
        proc.send_signal(signal.SIGTERM)  # a graceful stop
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        log.close()
