"""``scan``: one bounded window of CDC records (captures or Kafka topics), checked and summarised."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from cdc_monitor.errors import EXIT_FINDINGS, EXIT_OK, EnvironmentProblem
from cdc_monitor.sources.inputs import no_records, prepare_input

if TYPE_CHECKING:
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.pipeline import ScanResult
    from cdc_monitor.sources.inputs import KafkaFlags, PreparedInput


@dataclass(frozen=True)
class Settings:
    paths: tuple[str, ...]  # kcat -J captures, or none with Kafka flags
    kafka: KafkaFlags
    config: ScanConfig
    allow_empty: bool = False  # an input with no records is a result, not an error
    keep_events: bool = False  # the window's events stay cached on the result until ``result.release()``


@dataclass
class Outcome:
    metrics_kind: ClassVar[str] = "scan"  # (MetricsSnapshot.from_outcome: its result's metrics)
    result: ScanResult
    fail_on: str
    failing: int  # findings at or above ``fail_on``
    seconds: float  # the whole run, Spark's start-up included

    @property
    def verdict(self) -> str:
        return f"{self.failing} finding(s) at or above --fail-on {self.fail_on}"

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.failing else EXIT_OK


def require_records(result: ScanResult, allow_empty: bool, paths: tuple[str, ...]) -> None:
    """Files that held only blank lines, or a time window that matched nothing: exit 2."""
    if not allow_empty and result.summary["records"] == 0 and result.summary["unreadable_lines"] == 0:
        raise no_records(", ".join(paths) if paths else "the Kafka window")


def run(settings: Settings, log: Callable[[str], None] = lambda line: None, live: bool = False) -> Outcome:
    """Read, decode, check and summarise the window. The input is checked before Spark starts.
    ``live``: the running step on a live line (a terminal's: runtime/progress.py)."""
    started = time.time()
    return scan_prepared(settings, prepare(settings), started, log, live)


def prepare(settings: Settings) -> PreparedInput:
    """The input, checked before Spark starts: files exist and hold lines, brokers answer, topics exist,
    and the decoder's jar is there for this pyspark."""
    from cdc_monitor.decoding.decoder import NEEDS
    from cdc_monitor.runtime.jvm import operator_jar_problem

    if problem := operator_jar_problem(NEEDS):
        raise EnvironmentProblem(problem)
    return prepare_input(settings.paths, settings.kafka, allow_empty=settings.allow_empty)


def scan_prepared(settings: Settings, source_input: PreparedInput, started: float,
                  log: Callable[[str], None] = lambda line: None, live: bool = False) -> Outcome:
    """``run`` after ``prepare`` (``gate`` prepares its suites in between)."""
    cfg = settings.config
    log("cdc-monitor: starting Spark ...")
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.runtime.session import capabilities, get_spark

    spark = get_spark(cfg.spark_master, cfg.spark_conf, small_input=source_input.small, remote=cfg.spark_remote)
    session = capabilities(spark)
    what = (f"{len(source_input.ranges)} Kafka partition(s)" if source_input.ranges is not None
            else f"{len(settings.paths)} path(s)")
    log(f"cdc-monitor: scanning {what} ...")
    result = run_scan(source_input.read(spark), cfg, progress=lambda line: log(f"cdc-monitor: {line}"),
                      keep_events=settings.keep_events, live=live, session=session)
    try:
        require_records(result, settings.allow_empty, settings.paths)
    except Exception:
        result.release()
        raise
    return Outcome(result, cfg.fail_on, result.worst_count(cfg.fail_on), round(time.time() - started, 3))
