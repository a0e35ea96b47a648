"""``cdc-monitor history compact``: each old date's committed batches of a history as one
(docs/history.md#compaction)."""

from __future__ import annotations

import time

import click

from cdc_monitor.cli.help import epilog


@click.group()
def history() -> None:
    """The --history dataset: upkeep (docs/history.md)."""


@history.command("compact", epilog=epilog("history compact"))
@click.argument("location")
@click.option("--before", metavar="YYYY-MM-DD",
              help="Compact the dates before this one (default: yesterday, UTC, so the days watch still writes are left alone).")
@click.option("--config", "config_file", type=click.Path(), help="TOML config file: its [spark] settings (e.g. s3a:// credentials).")
@click.option("--spark-master", help="Spark master URL (default local[*]).")
def compact(location: str, before: str | None, config_file: str | None, spark_master: str | None) -> None:
    """Rewrite each date's committed batches as one batch and delete the folders and markers it
    replaces. Readers see the same rows throughout; safe to kill and run again."""
    from cdc_monitor.cli.layered_config import scan_config
    from cdc_monitor.history.compact import compact as run
    from cdc_monitor.history.compact import open_history, parse_before
    from cdc_monitor.runtime.session import get_spark

    until = parse_before(before, time.strftime("%Y-%m-%d", time.gmtime()))
    files = open_history(location)  # (before Spark starts: a wrong location is exit 2 at once)
    cfg = scan_config(config_file, None, spark_master=spark_master)
    spark = get_spark(cfg.spark_master, cfg.spark_conf, small_input=True)
    started = time.monotonic()
    done = run(spark, files, until, click.echo)
    click.echo(f"cdc-monitor: compacted {location} before {until} in {time.monotonic() - started:.1f}s: "
               f"{len(done.dates)} date(s), {sum(len(d.replaced) for d in done.dates)} folder(s) replaced, "
               f"{sum(d.rows_kept for d in done.dates)} row(s) kept", err=True)
