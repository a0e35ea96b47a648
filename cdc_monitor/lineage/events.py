"""A run's OpenLineage events, built from a verb's outcome (no Spark, no I/O): START at the time
the verb started, then COMPLETE (the verb reached a verdict, exit 0 or 1) or FAIL (it could not
run, exit 2) at the time it ended.

The job: namespace ``cdc-monitor``, name ``<verb>.<server>`` (the Debezium servers the window
holds, joined by ``+``; the verb alone when none is known, as when a run fails before reading),
both configurable. The run facets: ``processing_engine``, ``nominalTime`` (the window's first and
last record times), ``cdcMonitor_window`` (offsets per partition), ``cdcMonitor_verdict``,
``cdcMonitor_reports`` (links to the reports written) and, on FAIL, ``errorMessage``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from openlineage.client.constants import __version__ as CLIENT_VERSION
from openlineage.client.event_v2 import InputDataset, Job, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    error_message_run,
    job_type_job,
    nominal_time_run,
    processing_engine_run,
)

from cdc_monitor import __version__
from cdc_monitor.errors import EXIT_CANNOT_RUN, EXIT_FINDINGS, EXIT_OK
from cdc_monitor.lineage.datasets import reconcile_datasets, topic_datasets
from cdc_monitor.lineage.facets import (
    PRODUCER,
    REPORTS,
    VERDICT,
    WINDOW,
    ReportsRunFacet,
    VerdictRunFacet,
    WindowRunFacet,
)
from cdc_monitor.lineage.settings import DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from cdc_monitor.pipeline import ScanResult
    from cdc_monitor.reconcile.outcome import ReconcileOutcome
    from cdc_monitor.verbs.gate import Outcome as GateOutcome
    from cdc_monitor.verbs.scan import Outcome as ScanOutcome

ENGINE = "cdc-monitor"
INTEGRATION = "CDC_MONITOR"


@dataclass(frozen=True)
class RunInfo:
    """What every event of one run shares."""

    run_id: str
    verb: str  # scan, gate or reconcile
    started_at: float  # epoch seconds
    namespace: str = DEFAULT_NAMESPACE
    job: str | None = None  # configured; default <verb>.<server>
    capture_namespace: str | None = None
    reports: Mapping[str, str] = field(default_factory=dict)  # kind -> URL of what the run wrote


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def job_name(info: RunInfo, servers: Iterable[str | None]) -> str:
    if info.job:
        return info.job
    named = sorted({s for s in servers if s})
    return f"{info.verb}.{'+'.join(named)}" if named else info.verb


def scan_servers(result: ScanResult) -> list[str | None]:
    return ([r.get("server") for r in (*result.events_by_table, *result.lag, *result.heartbeats)]
            + list(result.transactions.get("by_server", {})))


def reconcile_servers(outcome: ReconcileOutcome) -> list[str | None]:
    """A table's topic is ``<server>.<schema>.<table>``: the server is what precedes the table."""
    return [topic.removesuffix(f".{t.table}") for t in outcome.tables for topic in t.topics if topic.endswith(f".{t.table}")]


def _job(info: RunInfo, name: str) -> Job:
    kind = job_type_job.JobTypeJobFacet(processingType="BATCH", integration=INTEGRATION, jobType=info.verb.upper(),
                                        producer=PRODUCER)
    return Job(namespace=info.namespace, name=name, facets={"jobType": kind})


def _engine() -> processing_engine_run.ProcessingEngineRunFacet:
    return processing_engine_run.ProcessingEngineRunFacet(version=__version__, name=ENGINE,
                                                          openlineageAdapterVersion=CLIENT_VERSION, producer=PRODUCER)


def _reports(info: RunInfo) -> dict[str, Any]:
    if not info.reports:
        return {}
    links = [{"kind": kind, "url": url} for kind, url in info.reports.items()]
    return {REPORTS: ReportsRunFacet(reports=links, producer=PRODUCER)}


def _pair(info: RunInfo, name: str, state: RunState, finished_at: float, facets: dict[str, Any],
          inputs: list[InputDataset]) -> list[RunEvent]:
    """START, then the run's end."""
    job = _job(info, name)
    start = RunEvent(eventType=RunState.START, eventTime=iso(info.started_at), producer=PRODUCER, job=job,
                     run=Run(runId=info.run_id, facets={"processing_engine": _engine()}), inputs=[], outputs=[])
    end = RunEvent(eventType=state, eventTime=iso(finished_at), producer=PRODUCER, job=job,
                   run=Run(runId=info.run_id, facets={"processing_engine": _engine(), **facets}), inputs=inputs,
                   outputs=[])
    return [start, end]


def window_facets(result: ScanResult) -> dict[str, Any]:
    """``nominalTime`` and ``cdcMonitor_window`` from a scanned window."""
    window = result.window
    start, end = window.get("start_ms"), window.get("end_ms")
    parts = [{"topic": p["topic"], "partition": p["partition"], "firstOffset": p["first_offset"],
              "lastOffset": p["last_offset"], "records": p["records"]}
             for p in window.get("partitions", []) if p.get("first_offset") is not None]
    facets: dict[str, Any] = {WINDOW: WindowRunFacet(
        input=str(result.inputs.get("kind", "capture")), records=int(result.summary.get("records", 0)),
        startTime=iso(start / 1000) if start is not None else None, endTime=iso(end / 1000) if end is not None else None,
        partitions=parts, producer=PRODUCER)}
    if start is not None:
        facets["nominalTime"] = nominal_time_run.NominalTimeRunFacet(
            nominalStartTime=iso(start / 1000), nominalEndTime=iso(end / 1000) if end is not None else None,
            producer=PRODUCER)
    return facets


def _verdict(info: RunInfo, exit_code: int, verdict: str, fail_on: str | None = None) -> dict[str, Any]:
    return {VERDICT: VerdictRunFacet(verb=info.verb, exitCode=exit_code, verdict=verdict, failOn=fail_on,
                                     producer=PRODUCER)}


def scan_events(info: RunInfo, outcome: ScanOutcome, finished_at: float) -> list[RunEvent]:
    result = outcome.result
    facets = {**window_facets(result), **_verdict(info, outcome.exit_code, outcome.verdict, outcome.fail_on),
              **_reports(info)}
    return _pair(info, job_name(info, scan_servers(result)), RunState.COMPLETE, finished_at, facets,
                 topic_datasets(result, outcome.fail_on, info.capture_namespace))


def gate_events(info: RunInfo, outcome: GateOutcome, finished_at: float) -> list[RunEvent]:
    """A gate's scan as ``scan_events`` gives it; the verdict is the expectations'."""
    facets = {**_verdict(info, outcome.exit_code, outcome.verdict), **_reports(info)}
    inputs: list[InputDataset] = []
    servers: list[str | None] = []
    if outcome.scan is not None:
        result = outcome.scan.result
        facets = {**window_facets(result), **facets}
        inputs = topic_datasets(result, outcome.scan.fail_on, info.capture_namespace)
        servers = scan_servers(result)
    return _pair(info, job_name(info, servers), RunState.COMPLETE, finished_at, facets, inputs)


def reconcile_events(info: RunInfo, outcome: ReconcileOutcome, finished_at: float) -> list[RunEvent]:
    exit_code = EXIT_FINDINGS if outcome.mismatches else EXIT_OK
    facets = {WINDOW: WindowRunFacet(input=str(outcome.inputs.get("kind", "capture")), records=outcome.records,
                                     producer=PRODUCER),
              **_verdict(info, exit_code, f"{outcome.mismatches} mismatching row(s)"), **_reports(info)}
    return _pair(info, job_name(info, reconcile_servers(outcome)), RunState.COMPLETE, finished_at, facets,
                 reconcile_datasets(outcome, info.capture_namespace))


def fail_events(info: RunInfo, error: BaseException, finished_at: float) -> list[RunEvent]:
    """The verb could not run: its one-line error (a bug's type and first line)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if not hasattr(error, "exit_code"):
        message = f"{type(error).__name__}: {message}"
    facets = {"errorMessage": error_message_run.ErrorMessageRunFacet(message=message, programmingLanguage="python",
                                                                      producer=PRODUCER),
              **_verdict(info, int(getattr(error, "exit_code", EXIT_CANNOT_RUN)), message)}
    return _pair(info, job_name(info, []), RunState.FAIL, finished_at, facets, [])
