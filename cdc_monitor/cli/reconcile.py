"""``cdc-monitor reconcile``: replay a window of CDC topics into each table's latest state and
compare it with the source database (docs/reconcile.md)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from cdc_monitor.cli.help import epilog
from cdc_monitor.cli.kafka_flags import kafka_flags, pop_kafka_flags
from cdc_monitor.cli.lineage_flags import lineage_flags, open_lineage
from cdc_monitor.errors import EXIT_FINDINGS, EXIT_OK, EnvironmentProblem


@click.command(epilog=epilog("reconcile"))
@click.argument("paths", nargs=-1, type=click.Path())
@kafka_flags
@click.option("--jdbc-url", required=True, help="The source database, e.g. jdbc:postgresql://HOST:5432/DB (no password in it).")
@click.option("--jdbc-user", help="Database user (default: CDC_MONITOR_JDBC_USER).")
@click.option("--jdbc-password-file", type=click.Path(), help="File holding the password (default: CDC_MONITOR_JDBC_PASSWORD).")
@click.option("--jdbc-jar", type=click.Path(),
              help="The JDBC driver jar (default: the distribution's, e.g. /usr/share/java/postgresql.jar).")
@click.option("--tables", help="Comma-separated tables as the topics name them (schema.table; default: every table of the window).")
@click.option("--max-samples", type=click.IntRange(0), default=10, show_default=True, help="Keys listed per table and state.")
@click.option("--rows-per-partition", type=click.IntRange(1), default=500_000, show_default=True,
              help="Source rows per JDBC read partition (tables with one integer key column are read in key ranges).")
@click.option("--settle", help="Check mismatching keys again this much later (e.g. 30s), on a fresh read of the "
              "topics and the source: those that then agree were in flight (for live sources without row versions).")
@click.option("--config", "config_file", type=click.Path(), help="TOML config file (flags override it).")
@click.option("--transaction-topic", help="Transaction topic name (default: any '<prefix>.transaction').")
@click.option("--output", "output_mode", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--report-file", type=click.Path(), help="Write the report here instead of stdout.")
@click.option("--push-gateway", help="Push cdc_reconcile_rows to this Prometheus Pushgateway URL.")
@click.option("--textfile", type=click.Path(), help="Write the metrics atomically to this .prom file (node_exporter).")
@click.option("--job", default="cdc-monitor-reconcile", show_default=True, help="The job label of the metrics.")
@click.option("--spark-master", help="Spark master URL (default local[*]).")
@click.option("--remote", metavar="sc://HOST:PORT",
              help="A Spark Connect server, sc://HOST:PORT, instead of a Spark in this process (no Java needed; docs/deploy.md).")
@lineage_flags
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def reconcile(paths: tuple[str, ...], jdbc_url: str, jdbc_user: str | None, jdbc_password_file: str | None,
              jdbc_jar: str | None, tables: str | None, max_samples: int, rows_per_partition: int, settle: str | None,
              config_file: str | None, transaction_topic: str | None, output_mode: str, report_file: str | None,
              push_gateway: str | None, textfile: str | None, job: str, spark_master: str | None, remote: str | None, quiet: bool,
              **kafka: Any) -> None:
    """Did every row of the source database reach the topic? Exit 1 on a missing, extra or differing row."""
    from cdc_monitor.cli.layered_config import scan_config
    from cdc_monitor.cli.output import Output, prepare_textfile
    from cdc_monitor.config import parse_duration_ms
    from cdc_monitor.reconcile.connection import jdbc_settings
    from cdc_monitor.sources.inputs import prepare_input

    out = Output(output_mode, report_file, quiet)
    prepare_textfile(textfile)
    names = tuple(t.strip() for t in (tables or "").split(",") if t.strip())
    jdbc = jdbc_settings(jdbc_url, jdbc_user, jdbc_password_file, jdbc_jar)
    jdbc.probe()  # an unreachable database: exit 2 before Spark starts
    from cdc_monitor.decoding.decoder import NEEDS
    from cdc_monitor.runtime.jvm import operator_jar_problem

    if problem := operator_jar_problem(NEEDS):
        raise EnvironmentProblem(problem)
    cfg = scan_config(config_file, transaction_topic, spark_master=spark_master, remote=remote)
    lineage = open_lineage(kafka, cfg, config_file, "reconcile")
    started = time.time()
    settle_s = parse_duration_ms(settle, "--settle") / 1000 if settle else None
    flags = pop_kafka_flags(kafka, transaction_topic, cfg.kafka_conf)
    with lineage.failing():
        source_input = prepare_input(paths, flags)
        out.log("cdc-monitor: starting Spark ...")
        from cdc_monitor.reconcile.run import run_reconcile
        from cdc_monitor.runtime.session import get_spark

        conf = dict(cfg.spark_conf)
        conf["spark.jars"] = ",".join(j for j in (conf.get("spark.jars"), str(jdbc.jar)) if j)
        spark = get_spark(cfg.spark_master, conf, small_input=source_input.small, remote=cfg.spark_remote)
        out.log(f"cdc-monitor: reconciling against {jdbc.shown_url} ...")
        again = (settle_s, lambda: prepare_input(paths, flags).read(spark)) if settle_s is not None else None
        outcome = run_reconcile(source_input.read(spark), jdbc, names, cfg.roles, max_samples, rows_per_partition,
                                progress=lambda line: out.log(f"cdc-monitor: {line}"), settle=again, live=out.live)
        out.reconcile_report(outcome)
        lineage.complete(outcome, **{output_mode: report_file})
    from cdc_monitor.sinks import prometheus

    verdict = f"{outcome.mismatches} mismatching row(s)"
    snapshot = prometheus.MetricsSnapshot.from_outcome(outcome, job)
    snapshot.lineage = lineage.metrics()
    out.metrics(snapshot, textfile, push_gateway, verdict)
    out.log(f"cdc-monitor: reconciled {len(outcome.tables)} table(s) in {outcome.duration_seconds:.1f}s "
            f"({time.time() - started:.1f}s with Spark's start-up); {verdict}")
    lineage.require(verdict)
    sys.exit(EXIT_FINDINGS if outcome.mismatches else EXIT_OK)
