"""One verb's run as OpenLineage sees it, as the CLI holds it: opened before the verb starts (the
target checked, the client made, the start time kept), its events built and sent once the verb
has ended, START and COMPLETE after its report is written, START and FAIL when it raised.

Both events go out at the end: the job's default name needs the window's servers, known once the
window is read, and an endpoint that is slow or down then never delays a scan; START still carries
the time the run started. A delivery that fails is one warning line and the
``cdc_monitor_openlineage_events{result="failed"}`` metric, and the exit code stays the verb's,
unless ``required`` (``--openlineage-required``): then it exits 2 after the report and metrics, as
a failed Pushgateway push does."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import InputError
from cdc_monitor.lineage.delivery import Delivered, deliver, make_client
from cdc_monitor.lineage.settings import LineageSettings

if TYPE_CHECKING:
    from openlineage.client.event_v2 import RunEvent

    from cdc_monitor.lineage.events import RunInfo


def report_links(paths: Mapping[str, str | None]) -> dict[str, str]:
    """What a run wrote for people to open (kind -> ``file://`` URI of the absolute path)."""
    return {kind: Path(p).expanduser().resolve().as_uri() for kind, p in paths.items() if p}


class LineageRun:
    def __init__(self, settings: LineageSettings, verb: str, warn: Callable[[str], None]) -> None:
        self.client = make_client(settings)  # (first: a missing package is exit 2 with the fix)
        from openlineage.client.uuid import generate_new_uuid

        self.settings = settings
        self.verb = verb
        self.warn = warn
        self.run_id = str(generate_new_uuid())
        self.started_at = time.time()
        self.delivered: Delivered | None = None
        self.reports: dict[str, str] = {}

    def info(self) -> RunInfo:
        from cdc_monitor.lineage.events import RunInfo

        s = self.settings
        return RunInfo(run_id=self.run_id, verb=self.verb, started_at=self.started_at, namespace=s.namespace,
                       job=s.job, capture_namespace=s.capture_namespace, reports=dict(self.reports))

    @contextmanager
    def failing(self) -> Iterator[LineageRun]:
        """The verb's work: if it raises before ``complete``, START and FAIL are sent, then it raises on."""
        try:
            yield self
        except Exception as err:
            if self.delivered is None:
                from cdc_monitor.lineage.events import fail_events

                self._send(fail_events(self.info(), err, time.time()))
            raise

    def complete(self, outcome: Any, **reports: str | None) -> None:
        """START and COMPLETE for the verb's ``outcome``, linking the ``reports`` it wrote (kind=path:
        html, json, text, junit, data_docs)."""
        from cdc_monitor.lineage import events

        build = {"scan": events.scan_events, "gate": events.gate_events, "reconcile": events.reconcile_events}[self.verb]
        self.reports.update(report_links(reports))
        self._send(build(self.info(), outcome, time.time()))

    def _send(self, events: list[RunEvent]) -> None:
        self.delivered = deliver(self.client, events)
        if self.delivered.failed and not self.settings.required:
            self.warn(f"cdc-monitor: warning: {self.delivered.failed} of {len(events)} OpenLineage event(s) not "
                      f"delivered to {self.settings.shown} ({self.delivered.error}); the run's result stands "
                      "(--openlineage-required makes this exit 2)")

    def metrics(self) -> Mapping[str, int] | None:
        """Events delivered and failed, for the run's metrics (None before any was sent)."""
        if self.delivered is None:
            return None
        return {"delivered": self.delivered.sent, "failed": self.delivered.failed}

    def require(self, verdict: str) -> None:
        """With ``required``, a failed delivery is exit 2 (the report and metrics already written)."""
        d = self.delivered
        if self.settings.required and d is not None and d.failed:
            raise InputError(f"cannot deliver OpenLineage events to {self.settings.shown} ({d.error}): check "
                             f"--openlineage; the run finished and its report was written ({verdict}), "
                             f"{d.failed} event(s) were not delivered")
