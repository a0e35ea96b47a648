"""``cdc-monitor``: a thin click layer over the pipeline. Exit codes: 0 clean, 1 findings at or above --fail-on,
2 could not run."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from cdc_monitor import __version__
from cdc_monitor.cli.help import epilog
from cdc_monitor.cli.kafka_flags import apply_format_flags, format_flags, kafka_flags, pop_kafka_flags
from cdc_monitor.cli.layered_config import scan_config
from cdc_monitor.cli.lineage_flags import lineage_flags, open_lineage
from cdc_monitor.errors import EXIT_CANNOT_RUN, CdcMonitorError, UsageError
from cdc_monitor.vocabulary import FAIL_ON, STREAM_READERS, KafkaReader


class _Group(click.Group):
    """Turns our errors into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except CdcMonitorError as err:
            click.echo(f"cdc-monitor: error: {err}", err=True)
            sys.exit(err.exit_code)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as err:  # Spark/JVM failures and bugs: one line, the traceback on request
            if os.environ.get("CDC_MONITOR_DEBUG"):
                raise
            from cdc_monitor.runtime.failures import explain

            known = explain(err)
            if known is not None:
                click.echo(f"cdc-monitor: error: {known}", err=True)
                sys.exit(known.exit_code)
            first = (str(err).strip().splitlines() or [""])[0][:300]
            log = os.environ.get("CDC_MONITOR_JVM_LOG")
            click.echo(f"cdc-monitor: error: {type(err).__name__}: {first} "
                       f"(set CDC_MONITOR_DEBUG=1 for the traceback{f'; Spark log: {log}' if log else ''})", err=True)
            sys.exit(EXIT_CANNOT_RUN)


REMOTE_HELP = "A Spark Connect server, sc://HOST:PORT, instead of a Spark in this process (no Java needed; docs/deploy.md)."
ALLOW_EMPTY_HELP = "Accept an input with no records (default: exit 2, so a CI gate never passes on no data)."


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cdc-monitor")
def cli() -> None:
    """Lag, transaction completeness, schema conformity and ordering checks for Debezium CDC topics."""


@cli.command(epilog=epilog("scan"))
@click.argument("paths", nargs=-1, type=click.Path())
@kafka_flags
@format_flags
@click.option("--config", "config_file", type=click.Path(), help="TOML config file (flags override it).")
@click.option("--transaction-topic", help="Transaction topic name (default: any '<prefix>.transaction').")
@click.option("--lag-threshold", help="Lag above which a lag_spike is reported (default 60s).")
@click.option("--output", "output_mode", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--report-file", type=click.Path(), help="Write the report here instead of stdout.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default=None,
              help="Exit 1 when findings at or above this severity exist (default error).")
@click.option("--max-findings", type=click.IntRange(1), default=None, help="Findings listed in the report.")
@click.option("--push-gateway", help="Push the window's metrics to this Prometheus Pushgateway URL.")
@click.option("--textfile", type=click.Path(), help="Write the metrics atomically to this .prom file (node_exporter).")
@click.option("--job", default="cdc-monitor", show_default=True, help="The job label of pushed/written metrics.")
@click.option("--spark-master", help="Spark master URL (default local[*]).")
@click.option("--remote", metavar="sc://HOST:PORT", help=REMOTE_HELP)
@click.option("--allow-empty", is_flag=True, help=ALLOW_EMPTY_HELP)
@click.option("--history", "history", metavar="LOCATION",
              help="Record per-table measurements in this Parquet dataset (a Spark path) and judge the window "
                   "against it: volume_anomaly, lag_anomaly, table_silent (docs/history.md).")
@lineage_flags
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def scan(paths: tuple[str, ...], config_file: str | None, transaction_topic: str | None,
         lag_threshold: str | None, output_mode: str, report_file: str | None, fail_on: str | None,
         max_findings: int | None, push_gateway: str | None, textfile: str | None, job: str,
         spark_master: str | None, remote: str | None, allow_empty: bool, quiet: bool, history: str | None,
         **kafka: Any) -> None:
    """Scan one bounded window of CDC records (kcat -J captures, or Kafka topics) and report."""
    from cdc_monitor.cli.output import Output, prepare_textfile
    from cdc_monitor.verbs import scan as verb

    out = Output(output_mode, report_file, quiet)
    prepare_textfile(textfile)
    cfg = scan_config(config_file, transaction_topic, lag_threshold=lag_threshold, fail_on=fail_on,
                      max_findings=max_findings, spark_master=spark_master, remote=remote, history=history)
    cfg = apply_format_flags(kafka, cfg)
    lineage = open_lineage(kafka, cfg, config_file, "scan")
    settings = verb.Settings(paths, pop_kafka_flags(kafka, transaction_topic, cfg.kafka_conf), cfg, allow_empty)
    with lineage.failing():
        outcome = verb.run(settings, out.log, live=out.live)
        out.report(outcome.result)
        lineage.complete(outcome, **{output_mode: report_file})
    from cdc_monitor.sinks.prometheus import MetricsSnapshot

    snapshot = MetricsSnapshot.from_outcome(outcome, job)
    snapshot.lineage = lineage.metrics()
    out.metrics(snapshot, textfile, push_gateway, outcome.verdict)
    out.log(f"cdc-monitor: scanned in {outcome.result.duration_seconds:.1f}s ({outcome.seconds:.1f}s with Spark's "
            f"start-up); {outcome.verdict}")
    lineage.require(outcome.verdict)
    sys.exit(outcome.exit_code)

@cli.command(epilog=epilog("gate"))
@click.argument("paths", nargs=-1, type=click.Path())
@kafka_flags
@format_flags
@click.option("--suite", "suite_files", multiple=True, required=True, type=click.Path(),
              help="Great Expectations suite JSON, or a folder of them (repeatable), e.g. --suite expectations/.")
@click.option("--junit", type=click.Path(), help="Write JUnit XML here (one test case per expectation).")
@click.option("--data-docs", type=click.Path(), help="Write Great Expectations Data Docs (HTML) into this folder.")
@click.option("--config", "config_file", type=click.Path(), help="TOML config file (flags override it).")
@click.option("--transaction-topic", help="Transaction topic name (default: any '<prefix>.transaction').")
@click.option("--lag-threshold", help="Lag above which a lag_spike is reported (default 60s).")
@click.option("--output", "output_mode", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--report-file", type=click.Path(), help="Write the gate report here instead of stdout.")
@click.option("--spark-master", help="Spark master URL (default local[*]).")
@click.option("--remote", metavar="sc://HOST:PORT", help=REMOTE_HELP)
@click.option("--allow-empty", is_flag=True, help=ALLOW_EMPTY_HELP)
@click.option("--history", "history", metavar="LOCATION",
              help="Record per-table measurements in this Parquet dataset (a Spark path) and judge the window "
                   "against it: volume_anomaly, lag_anomaly, table_silent (docs/history.md).")
@lineage_flags
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def gate(paths: tuple[str, ...], suite_files: tuple[str, ...], junit: str | None, data_docs: str | None,
         config_file: str | None, transaction_topic: str | None, lag_threshold: str | None, output_mode: str,
         report_file: str | None, spark_master: str | None, remote: str | None, allow_empty: bool, quiet: bool,
         history: str | None, **kafka: Any) -> None:
    """CI data-quality gate: scan, then run Great Expectations suites over the results. Exit 0 pass, 1 fail."""
    from cdc_monitor.cli.output import Output, prepare_output_path
    from cdc_monitor.gate.suites import load_suites
    from cdc_monitor.verbs import gate as verb
    from cdc_monitor.verbs import scan

    out = Output(output_mode, report_file, quiet)
    prepare_output_path(junit, "--junit")
    suites = tuple(load_suites(suite_files))
    cfg = scan_config(config_file, transaction_topic, lag_threshold=lag_threshold, spark_master=spark_master,
                      remote=remote, history=history)
    cfg = apply_format_flags(kafka, cfg)
    lineage = open_lineage(kafka, cfg, config_file, "gate")
    scanning = scan.Settings(paths, pop_kafka_flags(kafka, transaction_topic, cfg.kafka_conf), cfg, allow_empty)
    with lineage.failing():
        outcome = verb.run(verb.Settings(scanning, suites, data_docs), out.log, live=out.live)
        if junit:
            from cdc_monitor.gate.junit import write_junit

            write_junit(outcome.result.outcomes, junit)
            out.log(f"cdc-monitor: JUnit written to {junit}")
        if data_docs:
            out.log(f"cdc-monitor: Data Docs in {data_docs}/index.html")
        out.gate_report(outcome.result)
        lineage.complete(outcome, **{output_mode: report_file}, junit=junit,
                         data_docs=f"{data_docs}/index.html" if data_docs else None)
    out.log(f"cdc-monitor: gate {'failed' if outcome.result.failed else 'passed'} in {outcome.seconds:.1f}s: "
            f"{outcome.verdict}")
    lineage.require(outcome.verdict)
    sys.exit(outcome.exit_code)

@cli.command(epilog=epilog("generate"))
@click.option("--flavour", type=click.Choice(["mysql", "dtle", "postgresql", "sqlserver", "oracle", "yugabyte", "mongodb"]),
              default="mysql", show_default=True)
@click.option("--events", type=click.IntRange(1), default=1000, show_default=True, help="Data change events.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--faults", is_flag=True, help="Inject every applicable rule's fault and write a labels file.")
@click.option("--schemas/--no-schemas", default=True, show_default=True, help="JSON converter schemas on/off.")
@click.option("--tombstones/--no-tombstones", default=True, show_default=True)
@click.option("--partitions", type=click.IntRange(1), default=3, show_default=True)
@click.option("--output", "output_path", type=click.Path(), help="Capture file to write (kcat -J lines; .gz for gzip).")
@click.option("--bootstrap-servers", help="Produce to Kafka at HOST:PORT instead (topics created when missing).")
@click.option("-X", "--kafka-option", "kafka_option", multiple=True, metavar="KEY=VALUE", help="librdkafka producer setting.")
@click.option("--labels", "labels_path", type=click.Path(), help="Labels file (default: next to the capture).")
@click.option("--decimal-format", type=click.Choice(["base64", "numeric"]), default="base64", show_default=True,
              help="How Decimal columns are written (the JsonConverter's decimal.format).")
@click.option("--connector", "connector_name", metavar="NAME",
              help="Write this source.connector instead of the flavour's (an unknown one writes no transaction metadata).")
@click.option("--flatten", is_flag=True, help="Values as ExtractNewRecordState writes them (rows only, no envelope).")
@click.option("--heartbeats", is_flag=True, help="Debezium heartbeat records on __debezium-heartbeat.<server> too.")
@click.option("--format", "value_format", type=click.Choice(["json", "avro"]), default="json", show_default=True,
              help="avro: the Avro converter's wire format to Kafka (needs --schema-registry), Avro-JSON text "
              "(as kcat -s avro prints it) in captures.")
@click.option("--schema-registry", "schema_registry_url", metavar="URL",
              help="Schema Registry the Avro schemas are registered in (credentials: CDC_MONITOR_SCHEMA_REGISTRY_*).")
def generate(flavour: str, events: int, seed: int, faults: bool, schemas: bool, tombstones: bool,
             partitions: int, output_path: str | None, bootstrap_servers: str | None, kafka_option: tuple[str, ...],
             labels_path: str | None, decimal_format: str, connector_name: str | None, flatten: bool,
             heartbeats: bool, value_format: str, schema_registry_url: str | None) -> None:
    """Write synthetic Debezium traffic (optionally with labelled faults) as a kcat -J capture or to Kafka."""
    from cdc_monitor.generator import Generator
    from cdc_monitor.generator.kcat_writer import default_labels_path, write_capture, write_labels
    from cdc_monitor.runtime.progress import Counter, live_steps, on_terminal

    if bool(output_path) == bool(bootstrap_servers):
        raise UsageError("give exactly one of --output PATH and --bootstrap-servers HOST:PORT")
    if faults and events < 500:
        raise UsageError("--faults needs --events 500 or more to place every fault apart")
    if faults and bootstrap_servers and not labels_path:
        raise UsageError("--faults with --bootstrap-servers needs --labels PATH for the fault labels")
    if faults and (flatten or connector_name):
        raise UsageError("--faults labels Debezium envelopes of a known connector: drop --flatten/--connector")
    if value_format == "avro" and bootstrap_servers and not schema_registry_url:
        raise UsageError("--format avro to Kafka needs --schema-registry URL (the schemas are registered there)")
    if schema_registry_url and value_format != "avro":
        raise UsageError("--schema-registry is for --format avro")
    fmt = "json" if value_format == "json" else ("avro" if bootstrap_servers else "avro-json")
    generator = Generator(flavour, events=events, seed=seed, schemas=schemas, tombstones=tombstones,
                          partitions=partitions, faults=faults, decimal_format=decimal_format, connector=connector_name,
                          flatten=flatten, heartbeats=heartbeats, value_format=fmt)
    # on a terminal, a live line: the events generated of --events, then the records written of all
    with live_steps(on_terminal(), "generate", lambda: Counter("events", events, read=lambda: generator.data_events)) as steps:
        traffic = generator.run()
        if bootstrap_servers:
            from cdc_monitor.config import load_config
            from cdc_monitor.generator.produce import produce_traffic
            from cdc_monitor.sources.inputs import KafkaFlags
            from cdc_monitor.sources.kafka.options import KafkaOptions

            flags = KafkaFlags(bootstrap_servers=bootstrap_servers, options=kafka_option,
                               client_conf=load_config(None).kafka_conf)
            registry = load_config(None).schema_registry | ({"url": schema_registry_url} if schema_registry_url else {})
            sent = produce_traffic(traffic, KafkaOptions.from_options(flags.source_options()), registry=registry,
                                   counter=steps.counter("produce", "records", len(traffic.records)))
            msg = f"produced {sent['records']} records to {len(sent['topics'])} topic(s) at {bootstrap_servers}"
            if faults and labels_path:
                msg += f" and {write_labels(traffic, labels_path)} fault labels to {labels_path}"
        else:
            assert output_path is not None
            labels = (labels_path or default_labels_path(output_path)) if faults else None
            written = write_capture(traffic, output_path, labels,
                                    counter=steps.counter("write", "records", len(traffic.records)))
            msg = f"wrote {written['records']} records to {written['capture']}"
            if labels:
                msg += f" and {written['faults']} fault labels to {written['labels']}"
    click.echo(msg, err=True)


@cli.command(epilog=epilog("watch"))
@click.option("--bootstrap-servers", required=True, help="Kafka at HOST:PORT[,...].")
@click.option("--topics", help="Regex of topics (whole names; default: all but internal topics).")
@click.option("--transaction-topic", help="Transaction topic name (default: '<prefix>.transaction' of the topics).")
@click.option("-X", "--kafka-option", "kafka_option", multiple=True, metavar="KEY=VALUE", help="librdkafka setting.")
@click.option("--listen", default="127.0.0.1:9464", show_default=True, help="HOST:PORT serving /metrics.")
@click.option("--web-config", type=click.Path(), help="Exporter-toolkit web config: TLS and basic auth for /metrics.")
@click.option("--checkpoint", default="cdc-monitor-checkpoint", show_default=True, type=click.Path(),
              help="Folder for Spark's offsets and cdc-monitor's state (restarts resume from it).")
@click.option("--interval", default="30s", show_default=True, help="Micro-batch interval.")
@click.option("--grace", default="10m", show_default=True,
              help="An open transaction older than this shows as 'overdue' (quiet systems delay END legitimately).")
@click.option("--starting-offsets", type=click.Choice(["latest", "earliest"]), default="latest", show_default=True,
              help="Where a new checkpoint starts.")
@click.option("--max-offsets-per-trigger", type=click.IntRange(1), help="Cap on records per micro-batch.")
@click.option("--kafka-reader", type=click.Choice(STREAM_READERS), default=KafkaReader.PYTHON.value, show_default=True,
              help="python: the bundled reader (reports records_lost/offsets_reset); spark: Spark's Kafka connector "
                   "(spark-sql-kafka on the classpath). Fixed for the life of a checkpoint.")
@click.option("--key-ttl", default="24h", show_default=True, help="Keys idle this long (wall-clock time) leave the state store.")
@click.option("--job", default="cdc-monitor-watch", show_default=True, help="The job label of the metrics.")
@click.option("--config", "config_file", type=click.Path(), help="TOML config file (flags override it).")
@click.option("--lag-threshold", help="Lag above which a lag_spike is reported (default 60s).")
@click.option("--spark-master", help="Spark master URL (default local[*]).")
@click.option("--remote", metavar="sc://HOST:PORT", help="Refused: watch needs a classic Spark session (exit 2).")
@click.option("--schema-registry", "schema_registry_url", metavar="URL",
              help="Schema Registry for Avro keys and values in the wire format (credentials: CDC_MONITOR_SCHEMA_REGISTRY_*).")
@click.option("--history", "history", metavar="LOCATION",
              help="Append per-table measurements (a row per table and interval of record time, written once the "
                   "interval is over) to this history, for scans' anomaly rules (docs/history.md).")
def watch(bootstrap_servers: str, topics: str | None, transaction_topic: str | None, kafka_option: tuple[str, ...],
          listen: str, web_config: str | None, checkpoint: str, interval: str, grace: str, starting_offsets: str,
          max_offsets_per_trigger: int | None, kafka_reader: str, key_ttl: str, job: str, config_file: str | None,
          lag_threshold: str | None, spark_master: str | None, remote: str | None, schema_registry_url: str | None,
          history: str | None) -> None:
    """Monitor continuously: all checks on every micro-batch, metrics on /metrics, until SIGTERM."""
    from pathlib import Path

    from cdc_monitor.config import parse_duration_ms
    from cdc_monitor.runtime.connect import WATCH_REFUSED
    from cdc_monitor.sinks.web_config import load_web_config
    from cdc_monitor.sources.inputs import KafkaFlags
    from cdc_monitor.verbs import watch as verb

    if remote:
        raise UsageError(WATCH_REFUSED)
    web = load_web_config(web_config) if web_config else None  # so is a web config that cannot serve
    cfg = scan_config(config_file, transaction_topic, lag_threshold=lag_threshold, spark_master=spark_master,
                      history=history)
    if cfg.spark_remote:  # SPARK_REMOTE or [spark] remote
        raise UsageError(WATCH_REFUSED)
    cfg = apply_format_flags({"schema_registry_url": schema_registry_url, "avro_json": None}, cfg)
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--listen {listen!r} is not HOST:PORT (e.g. 0.0.0.0:9464)")
    interval_ms = parse_duration_ms(interval, "--interval")
    if interval_ms < 100:
        raise UsageError("--interval must be at least 100ms")
    flags = KafkaFlags(bootstrap_servers=bootstrap_servers, topics=topics, transaction_topic=transaction_topic,
                       options=kafka_option, client_conf=cfg.kafka_conf)
    settings = verb.Settings(
        flags, cfg, Path(checkpoint), interval_ms, host or "0.0.0.0", int(port), job,
        grace_ms=parse_duration_ms(grace, "--grace"), key_ttl_ms=parse_duration_ms(key_ttl, "--key-ttl"),
        starting_offsets=starting_offsets, max_offsets_per_trigger=max_offsets_per_trigger, reader=kafka_reader,
        web_config=web)
    from cdc_monitor.runtime.progress import on_terminal

    # (print, not click.echo: on a terminal the lines go above the catch-up's live line)
    sys.exit(verb.run(settings, lambda line: print(line, file=sys.stderr, flush=True), live=on_terminal()).exit_code)

@cli.group()
def dashboards() -> None:
    """Grafana dashboards: build them from code, push them with the HTTP API."""


@dashboards.command("build", epilog=epilog("dashboards build"))
@click.option("--output-dir", default="dashboards", show_default=True, type=click.Path())
def dashboards_build(output_dir: str) -> None:
    """Write the dashboard JSON files."""
    from cdc_monitor.dashboards.build import write_all

    for path in write_all(output_dir):
        click.echo(f"wrote {path}", err=True)


@dashboards.command("push", epilog=epilog("dashboards push"))
@click.option("--grafana-url", required=True, help="Grafana base URL, e.g. https://grafana.example.com")
@click.option("--token-env", default="GRAFANA_TOKEN", show_default=True,
              help="Environment variable holding the API token (service account token).")
@click.option("--folder", default="CDC", show_default=True, help="Grafana folder (created when missing).")
@click.option("--dir", "folder_path", default="dashboards", show_default=True, type=click.Path(),
              help="Folder of dashboard JSON files.")
def dashboards_push(grafana_url: str, token_env: str, folder: str, folder_path: str) -> None:
    """Upload the dashboards (overwriting by uid). The token is read from --token-env, never a flag."""
    from pathlib import Path

    from cdc_monitor.dashboards.push import push_dashboards

    token = os.environ.get(token_env, "").strip()
    if not token:
        raise UsageError(f"no Grafana token: export {token_env}=<service account token> (never pass it as a flag)")
    files = sorted(Path(folder_path).glob("*.json"))
    for r in push_dashboards(grafana_url, token, files, folder or None):
        click.echo(f"pushed {r['file']} -> {r['url'] or r['uid']} ({r['status']})", err=True)


@cli.command("warm-up", epilog=epilog("warm-up"))
@click.option("--if-missing", is_flag=True, help="Keep the archive already written for this Java, pyspark and jars.")
def warm_up(if_missing: bool) -> None:
    """Write the JVM class archive that makes every later run start seconds faster (runs once by
    itself otherwise; for images and CI set-up). CDC_MONITOR_JVM_CACHE=off disables the archive."""
    from cdc_monitor.verbs import warm_up as verb

    outcome = verb.run(verb.Settings(if_missing=if_missing))
    if not outcome.written:
        click.echo(f"cdc-monitor: {outcome.archive} is up to date", err=True)
        return
    tidied = f"; removed {len(outcome.removed)} older cache file(s)" if outcome.removed else ""
    click.echo(f"cdc-monitor: wrote {outcome.archive} ({outcome.archive.stat().st_size / 1e6:.0f} MB) in "
               f"{outcome.seconds:.1f}s{tidied}", err=True)

from cdc_monitor.cli.history import history  # noqa: E402  (verbs of their own modules)
from cdc_monitor.cli.reconcile import reconcile  # noqa: E402

cli.add_command(reconcile)
cli.add_command(history)


def main() -> None:
    try:
        cli.main(standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("cdc-monitor: interrupted", err=True)
        sys.exit(EXIT_CANNOT_RUN)


if __name__ == "__main__":
    main()

