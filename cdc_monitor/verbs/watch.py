"""``watch``: every check on every micro-batch of the Kafka stream, metrics served on /metrics,
until SIGTERM or SIGINT (``watch/runner.py`` runs the query). What can be checked before Spark
starts is: the checkpoint's format and reader, the broker and its topics, the operator jar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cdc_monitor.errors import EnvironmentProblem

if TYPE_CHECKING:
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.sinks.web_config import WebConfig
    from cdc_monitor.sources.inputs import KafkaFlags


@dataclass(frozen=True)
class Settings:
    kafka: KafkaFlags
    config: ScanConfig
    checkpoint: Path
    interval_ms: int
    host: str
    port: int
    job: str
    grace_ms: int
    key_ttl_ms: int
    starting_offsets: str = "latest"
    max_offsets_per_trigger: int | None = None
    reader: str = "python"  # the bundled reader, or Spark's Kafka connector ("spark")
    web_config: WebConfig | None = None  # TLS and basic auth for /metrics


@dataclass
class Outcome:
    exit_code: int  # 0 stopped by a signal, 2 too many failed windows
    batches: int  # micro-batches this process applied
    failures: int  # failed windows (each retried from the checkpoint)


def run(settings: Settings, log: Callable[[str], None] | None = None, live: bool = False) -> Outcome:
    """``live``: the catch-up on a live line (a terminal's: watch/catchup.py)."""
    from cdc_monitor.sources.kafka.client import BrokerInspector
    from cdc_monitor.sources.kafka.options import KafkaOptions
    from cdc_monitor.sources.kafka.planner import select_topics
    from cdc_monitor.watch.batch import WatchSettings
    from cdc_monitor.watch.state import StateStore

    StateStore.check(settings.checkpoint, settings.reader)  # another format or reader: exit 2 before Spark starts
    cfg = settings.config
    options = settings.kafka.source_options()
    options["startingOffsets"] = settings.starting_offsets
    if settings.max_offsets_per_trigger:
        options["maxOffsetsPerTrigger"] = str(settings.max_offsets_per_trigger)
    opts = KafkaOptions.from_options(options)
    with BrokerInspector(opts) as insp:  # unreachable broker or no topic: exit 2 before Spark starts
        existing = insp.topics()
        chosen = select_topics(opts, existing)
    from cdc_monitor.watch.carry import MAX_KEYS

    batch_settings = WatchSettings(scan=cfg, key_ttl_ms=settings.key_ttl_ms, grace_ms=settings.grace_ms,
                                   max_keys=MAX_KEYS if cfg.watch_max_keys is None else cfg.watch_max_keys,
                                   transaction_servers=cfg.roles.transaction_servers(chosen),
                                   topic_partitions=tuple((t, existing[t]) for t in chosen))
    if log is not None:
        log(f"cdc-monitor watch: {len(chosen)} topic(s): {', '.join(chosen[:8])}{' ...' if len(chosen) > 8 else ''}")
    from cdc_monitor.runtime.jvm import operator_jar_problem
    from cdc_monitor.runtime.session import capabilities, get_spark
    from cdc_monitor.watch.runner import Watcher, WatchOptions

    if problem := operator_jar_problem():  # before Spark starts
        raise EnvironmentProblem(problem)
    spark = get_spark(cfg.spark_master, cfg.spark_conf, micro_batches=True)
    watcher = Watcher(capabilities(spark), WatchOptions(options, settings.checkpoint.resolve(), settings.interval_ms / 1000,
                                          settings.host, settings.port, settings.job, batch_settings,
                                          web_config=settings.web_config, reader=settings.reader, live=live), log)
    code = watcher.run()
    return Outcome(code, watcher.applied, watcher.failures)
