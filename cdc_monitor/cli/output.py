"""Where results and messages go: reports to stdout (or a file), everything else to stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cdc_monitor.errors import UsageError

if TYPE_CHECKING:
    from cdc_monitor.gate.evaluate import GateResult
    from cdc_monitor.pipeline import ScanResult
    from cdc_monitor.reconcile.outcome import ReconcileOutcome
    from cdc_monitor.sinks.prometheus import MetricsSnapshot


def prepare_output_path(path: str | None, flag: str) -> None:
    """Before any work: the file's folder exists (created as needed) and is writable, so a run never
    loses its result to a bad output path at the end."""
    if not path:
        return
    folder = Path(path).expanduser().resolve().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{flag} {path}: cannot create the folder {folder} ({err.strerror}): choose a writable "
                         "path") from None
    target = folder / Path(path).name
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{flag} {path}: not writable: choose a writable path")


def prepare_textfile(path: str | None) -> None:
    """``--textfile``: a ``.prom`` file (node_exporter reads no other) in a writable folder."""
    if path and not path.endswith(".prom"):
        raise UsageError(f"--textfile {path}: node_exporter only reads files ending in .prom")
    prepare_output_path(path, "--textfile")


class Output:
    def __init__(self, mode: str = "text", report_file: str | None = None, quiet: bool = False):
        if mode not in ("text", "json", "html"):
            raise UsageError(f"--output {mode!r} is not supported: use text, json or html")
        self.mode = mode
        prepare_output_path(report_file, "--report-file")
        self.report_file = report_file
        self.quiet = quiet
        from cdc_monitor.runtime.progress import on_terminal

        self.live = on_terminal(quiet)  # the running step on a live line (runtime/progress.py)

    def log(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)

    def _emit(self, text: str) -> None:
        if self.report_file:
            path = Path(self.report_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            self.log(f"cdc-monitor: report written to {path}")
        else:
            sys.stdout.write(text)

    def gate_report(self, result: GateResult) -> None:
        import json

        if self.mode == "json":
            self._emit(json.dumps(result.to_json_dict(), indent=2, default=str) + "\n")
            return
        lines = [f"Gate {'FAILED' if result.failed else 'passed'}: {len(result.outcomes) - len(result.failed)} of "
                 f"{len(result.outcomes)} expectations passed"]
        for o in result.failed:
            lines.append(f"  FAIL [{o.suite}] {o.title}")
            lines.append(f"       observed: {o.observed()}")
        self._emit("\n".join(lines) + "\n")

    def reconcile_report(self, outcome: ReconcileOutcome) -> None:
        from cdc_monitor.sinks import reconcile_report

        if self.mode == "json":
            self._emit(outcome.to_json())
        elif self.mode == "html":
            self._emit(reconcile_report.render_html(outcome))
        else:
            self._emit(reconcile_report.render_text(outcome))

    def report(self, result: ScanResult) -> None:
        from cdc_monitor.sinks.report import render_json, render_text, text_width

        if self.mode == "json":
            self._emit(render_json(result))
        elif self.mode == "html":
            from cdc_monitor.sinks.html_report import render_html

            self._emit(render_html(result))
        else:
            import io

            buf = io.StringIO()
            on_terminal = not self.report_file and sys.stdout.isatty()
            render_text(result, buf, width=text_width(sys.stdout) if not self.report_file else 120,
                        colour=on_terminal and not os.environ.get("NO_COLOR"))
            self._emit(buf.getvalue())

    def metrics(self, snapshot: MetricsSnapshot, textfile: str | None, gateway: str | None, verdict: str) -> None:
        """A run's metrics to a node_exporter textfile, then pushed to a Pushgateway: last, so a
        gateway that is down loses the push, never the report or the textfile (the error says the
        run's ``verdict``)."""
        if not (textfile or gateway):
            return
        from cdc_monitor.errors import CdcMonitorError
        from cdc_monitor.sinks import prometheus

        if textfile:
            prometheus.write_textfile(snapshot, textfile)
            self.log(f"cdc-monitor: metrics written to {textfile}")
        if gateway:
            try:
                groups = prometheus.push(snapshot, gateway)
            except CdcMonitorError as err:
                raise type(err)(f"{err}; the run finished and its report was written ({verdict}), "
                                "the metrics were not pushed") from None
            self.log(f"cdc-monitor: metrics pushed to {gateway} ({len(groups)} group(s))")
