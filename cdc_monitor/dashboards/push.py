"""Upload dashboards through Grafana's HTTP API (grafana-client). The token comes from the
environment, never from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cdc_monitor.errors import InputError, UsageError

FOLDER_UID = "cdc-monitor"


def _api(url: str, token: str, timeout: float):
    try:
        from grafana_client import GrafanaApi
    except ImportError:
        raise UsageError("dashboards push needs grafana-client: pip install -e '.[grafana]' (the grafana extra)") from None
    return GrafanaApi.from_url(url, credential=token, timeout=timeout)


def _call(what: str, url: str, func, *args: Any) -> Any:
    from grafana_client.client import GrafanaClientError, GrafanaException

    try:
        return func(*args)
    except GrafanaClientError as err:
        hint = "check the token's permissions (Editor or a service account with dashboards:write)" \
            if err.status_code in (401, 403) else "check the Grafana URL and version"
        raise InputError(f"Grafana at {url} refused {what} (HTTP {err.status_code}: {err.message}): {hint}") from None
    except GrafanaException as err:
        raise InputError(f"Grafana at {url} failed {what} ({err}): check the server's logs") from None
    except Exception as err:  # connection refused, DNS, TLS: niquests' exceptions
        raise InputError(f"cannot reach Grafana at {url} ({type(err).__name__}: {err}): check --grafana-url") from None


def push_dashboards(url: str, token: str, files: list[Path], folder: str | None = None,
                    timeout: float = 10.0) -> list[dict[str, Any]]:
    """Create or overwrite each dashboard (by uid), in ``folder`` (created when missing)."""
    if not files:
        raise UsageError("no dashboard files to push: run `cdc-monitor dashboards build` first")
    api = _api(url, token, timeout)
    folder_uid = None
    if folder:
        existing = _call("listing folders", url, api.folder.get_all_folders)
        match = next((f for f in existing if f.get("title") == folder), None)
        if match is None:
            match = _call("creating a folder", url, api.folder.create_folder, folder, FOLDER_UID)
        folder_uid = match["uid"]
    results = []
    for path in files:
        try:
            board = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise InputError(f"cannot read dashboard {path} ({err}): rebuild with `cdc-monitor dashboards build`") from None
        board.pop("id", None)
        body: dict[str, Any] = {"dashboard": board, "overwrite": True, "message": "cdc-monitor dashboards push"}
        if folder_uid:
            body["folderUid"] = folder_uid
        answer = _call(f"saving {path}", url, api.dashboard.update_dashboard, body)
        results.append({"file": str(path), "uid": answer.get("uid"), "url": answer.get("url"), "status": answer.get("status")})
    return results
