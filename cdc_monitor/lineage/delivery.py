"""Events to their target through the openlineage-python client: an HTTP endpoint (Marquez's
``/api/v1/lineage`` and every consumer of the spec's HTTP API), a JSON Lines file, stderr, or
whatever the client's own configuration names (``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``, ...).

A delivery that fails is counted, never raised: the run's result does not depend on it. After the
first failure the run's later events are not tried (an endpoint that refused START refuses
COMPLETE too; each try costs a timeout), and are counted as failed."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc_monitor.errors import EnvironmentProblem
from cdc_monitor.lineage.settings import CLIENT, CONSOLE, LineageSettings

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import RunEvent
    from openlineage.client.transport import Transport

DEFAULT_ENDPOINT = "api/v1/lineage"
# a few quick tries: a lineage endpoint that is down must not hold a run's exit for long
RETRY = {"total": 2, "connect": 2, "read": 2, "backoff_factor": 0.2,
         "status_forcelist": [500, 502, 503, 504], "allowed_methods": ["POST"]}
CONSOLE_LOGGER = "openlineage.client.transport.console"


@dataclass
class Delivered:
    """What became of a run's events."""

    sent: int = 0
    failed: int = 0
    error: str | None = None  # the first failure, one line


class _Stderr(logging.Handler):
    """The console transport's events (it logs each at INFO) as lines on stderr; stdout keeps the report."""

    def emit(self, record: logging.LogRecord) -> None:
        print(record.getMessage(), file=sys.stderr, flush=True)


def _console_to_stderr() -> None:
    logger = logging.getLogger(CONSOLE_LOGGER)
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        logger.addHandler(_Stderr())
    logger.setLevel(logging.INFO)
    logger.propagate = False


def transport_for(settings: LineageSettings) -> Transport | None:
    """The transport ``settings`` name; None: the client's own configuration decides."""
    if settings.target == CLIENT:
        return None
    if settings.target == CONSOLE:
        from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport

        _console_to_stderr()
        return ConsoleTransport(ConsoleConfig())
    path = settings.file_path
    if path is not None:
        from openlineage.client.transport.file import FileConfig, FileTransport

        return FileTransport(FileConfig(log_file_path=path, append=True))
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    config: dict[str, Any] = {"url": settings.target, "timeout": settings.timeout, "retry": RETRY,
                              "endpoint": settings.endpoint or os.environ.get("OPENLINEAGE_ENDPOINT") or DEFAULT_ENDPOINT}
    api_key = settings.api_key or os.environ.get("OPENLINEAGE_API_KEY")
    if api_key:
        config["auth"] = {"type": "api_key", "apiKey": api_key}
    return HttpTransport(HttpConfig.from_dict(config))


def make_client(settings: LineageSettings) -> OpenLineageClient:
    """The client for ``settings`` (before Spark starts: a missing package or a transport the client
    refuses is exit 2 now, not a lost event later)."""
    try:
        from openlineage.client import OpenLineageClient
    except ImportError:
        raise EnvironmentProblem("--openlineage needs the openlineage-python package: pip install "
                                 "'cdc-monitor[openlineage]'") from None
    try:
        transport = transport_for(settings)
        return OpenLineageClient(transport=transport) if transport is not None else OpenLineageClient()
    except (ValueError, KeyError, RuntimeError, TypeError) as err:
        raise EnvironmentProblem(f"the OpenLineage client refused its configuration for {settings.shown} ({err}): "
                                 "check --openlineage, [openlineage] and the OPENLINEAGE_* environment") from None


def _one_line(err: BaseException) -> str:
    """``ConnectionError: Failed to establish a new connection: [Errno 111] Connection refused``:
    requests wraps urllib3's retries, whose ``reason`` says what happened."""
    reason = getattr(err.args[0], "reason", None) if err.args else None
    text = str(reason if reason is not None else err).split(">: ", 1)[-1]
    text = (text.strip().splitlines() or [""])[0][:300]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def deliver(client: OpenLineageClient, events: Sequence[RunEvent]) -> Delivered:
    """Each event in order until one fails; the rest counted as failed with it."""
    out = Delivered()
    for i, event in enumerate(events):
        try:
            client.emit(event)
        except Exception as err:  # the transport's errors (requests', OSError, RuntimeError): a lost event
            out.failed = len(events) - i
            out.error = _one_line(err)
            break
        out.sent += 1
    try:
        client.close(timeout=5.0)
    except Exception as err:  # an asynchronous transport that could not flush
        out.error = out.error or _one_line(err)
    return out
