"""Where a run's OpenLineage events go and under which job: ``--openlineage`` over the config
file's ``[openlineage]`` table over the client's own environment (``OPENLINEAGE_URL``,
``OPENLINEAGE_API_KEY``, ``OPENLINEAGE_ENDPOINT``, ``OPENLINEAGE_CONFIG``), settled before Spark
starts. The OpenLineage client is not imported here."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_monitor.errors import UsageError

DEFAULT_NAMESPACE = "cdc-monitor"
DEFAULT_TIMEOUT_S = 5.0
CONSOLE = "console"
FILE_PREFIX = "file:"
# no target of our own: the client resolves its transport from its environment and config file
CLIENT = "client"
CLIENT_ENV = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG")
TARGET_HELP = "an http(s):// URL, file:PATH or console"


@dataclass(frozen=True)
class LineageSettings:
    target: str  # an http(s) URL, "file:PATH", "console", or CLIENT
    namespace: str = DEFAULT_NAMESPACE  # the job's namespace
    job: str | None = None  # the job's name (default: <verb>.<server>)
    capture_namespace: str | None = None  # the namespace of topics read from capture files
    required: bool = False  # a failed delivery exits 2
    endpoint: str | None = None  # the HTTP API path (default: OPENLINEAGE_ENDPOINT, else the client's)
    timeout: float = DEFAULT_TIMEOUT_S
    api_key: str | None = field(default=None, repr=False)  # HTTP: a bearer token (default: OPENLINEAGE_API_KEY)

    @property
    def file_path(self) -> str | None:
        return self.target[len(FILE_PREFIX):].removeprefix("//") if self.target.startswith(FILE_PREFIX) else None

    @property
    def is_http(self) -> bool:
        return self.target.startswith(("http://", "https://"))

    @property
    def shown(self) -> str:
        """Where events go, as messages name it (a URL without its query, where a token may sit)."""
        if self.target == CLIENT:
            url = os.environ.get("OPENLINEAGE_URL")
            return url.split("?", 1)[0] if url else "the OpenLineage client's configured transport"
        return self.target.split("?", 1)[0]


def _setting(origin: str, key: str) -> str:
    return f"{origin}: [openlineage] {key}"


def _target(value: str, origin: str) -> str:
    what = "--openlineage" if origin == "flags" else _setting(origin, "url")
    text = value.strip()
    if text == CONSOLE or (text.startswith(("http://", "https://")) and text.split("://", 1)[1].strip("/")):
        return text
    if text.startswith(FILE_PREFIX) and text[len(FILE_PREFIX):].removeprefix("//"):
        return text
    raise UsageError(f"{what} {value!r}: give {TARGET_HELP} (e.g. http://marquez:5000, file:lineage.jsonl)")


def _text(table: Mapping[str, Any], key: str, origin: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{_setting(origin, key)}: give a non-empty string")
    return value.strip()


def lineage_settings(table: Mapping[str, Any], target: str | None = None, required: bool = False,
                     origin: str = "the config file", env: Mapping[str, str] | None = None) -> LineageSettings | None:
    """The run's lineage settings, or None when nothing asks for events (or ``OPENLINEAGE_DISABLED``
    turns them off): ``target`` and ``required`` are the flags, ``table`` the config file's
    ``[openlineage]`` table (read from ``origin``)."""
    env = os.environ if env is None else env
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":  # as the client honours it
        return None
    if target is not None:
        chosen = _target(target, "flags")
    elif table.get("url") is not None:
        chosen = _target(str(table["url"]), origin)
    elif any(env.get(name) for name in CLIENT_ENV):
        chosen = CLIENT
    else:
        if required:
            raise UsageError("--openlineage-required: no OpenLineage target: give --openlineage URL|file:PATH|console, "
                             "[openlineage] url in the config file, or OPENLINEAGE_URL")
        return None
    timeout = table.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise UsageError(f"{_setting(origin, 'timeout')} {timeout!r}: give a number of seconds above 0")
    required_setting = table.get("required", False)
    if not isinstance(required_setting, bool):
        raise UsageError(f"{_setting(origin, 'required')} {required_setting!r}: give true or false")
    capture = _text(table, "capture_namespace", origin)
    if capture is not None and "://" not in capture:
        raise UsageError(f"{_setting(origin, 'capture_namespace')} {capture!r}: give a namespace URI, "
                         "e.g. kafka://broker:9092 (the broker the capture came from)")
    return LineageSettings(
        target=chosen, namespace=_text(table, "namespace", origin) or DEFAULT_NAMESPACE, job=_text(table, "job", origin),
        capture_namespace=capture, required=required or required_setting, endpoint=_text(table, "endpoint", origin),
        timeout=float(timeout), api_key=_text(table, "api_key", origin))

