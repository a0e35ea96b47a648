"""Dashboards: reproducible from code; `dashboards push` speaks Grafana's HTTP API.

No Grafana server can run here, so push is tested against a loopback HTTP server that answers
like Grafana's /api/folders and /api/dashboards/db and records what it was sent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from cdc_monitor.dashboards.build import DASHBOARDS, render

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_committed_dashboard_is_what_the_code_builds(name):
    committed = (ROOT / "dashboards" / name).read_text()
    assert committed == render(name), "run `cdc-monitor dashboards build` and commit dashboards/"


def test_volume_and_lag_panels_draw_the_recorded_baseline_band():
    """One panel per selected table for the event rate and the lag p99, each with the series the
    anomaly rules record: the current value, the baseline and the band, filled between its edges."""
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "cdc-anomalies.rules.yml").read_text())
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    board = json.loads(render("cdc-monitor.json"))
    bands = {p["title"]: p for p in board["panels"] if p.get("repeat") == "table"}
    assert sorted(bands) == ["Event rate against its baseline band: $table", "Lag p99 against its baseline: $table"]
    for title, panel in bands.items():
        names = [re.search(r"cdc:[a-z0-9_:]+", t["expr"]).group(0) for t in panel["targets"]]
        assert set(names) <= recorded, title
        kind = names[0].rsplit(":", 1)[0]
        edges = {"baseline", "band_upper"} | ({"band_lower"} if "events" in kind else set())
        assert {n.rsplit(":", 1)[1] for n in names[1:]} == edges, title
        legends = {t["legendFormat"] for t in panel["targets"]}
        props = {o["matcher"]["options"]: {x["id"]: x["value"] for x in o["properties"]}
                 for o in panel["fieldConfig"]["overrides"]}
        floor = "band lower" if "band_lower" in edges else "baseline"
        assert props["band upper"]["custom.fillBelowTo"] == floor and floor in legends, title


def test_dashboard_has_server_and_table_variables_and_unique_panel_ids():
    board = json.loads(render("cdc-monitor.json"))
    names = [v["name"] for v in board["templating"]["list"]]
    assert names == ["datasource", "server", "table"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for p in board["panels"]:
        if p["type"] != "row":
            assert p["targets"] and all(any(v in t["expr"] for v in ("$server", "$table", "job"))
                                      for t in p["targets"]), p["title"]


class FakeGrafana(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []
    folders: ClassVar[list[dict]] = []
    status = 200

    def _send(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        entry = {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        FakeGrafana.requests.append(entry)
        return entry

    def do_GET(self):
        self._record()
        if FakeGrafana.status != 200:
            return self._send(FakeGrafana.status, {"message": "invalid API key"})
        self._send(200, FakeGrafana.folders)

    def do_POST(self):
        entry = self._record()
        if FakeGrafana.status != 200:
            return self._send(FakeGrafana.status, {"message": "invalid API key"})
        if self.path.startswith("/api/folders"):
            folder = {"uid": entry["body"]["uid"], "title": entry["body"]["title"], "id": 7}
            FakeGrafana.folders.append(folder)
            return self._send(200, folder)
        uid = entry["body"]["dashboard"]["uid"]
        self._send(200, {"id": 1, "uid": uid, "url": f"/d/{uid}/x", "status": "success", "version": 1})

    def log_message(self, *args):
        pass


@pytest.fixture
def grafana():
    FakeGrafana.requests, FakeGrafana.folders, FakeGrafana.status = [], [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGrafana)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def push_cli(url: str, *extra: str, token: str | None = "s3cret") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GRAFANA_TOKEN"}
    if token is not None:
        env["GRAFANA_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "cdc_monitor", "dashboards", "push", "--grafana-url", url,
                           "--dir", str(ROOT / "dashboards"), *extra], capture_output=True, text=True, env=env, timeout=60)


def test_push_creates_the_folder_and_overwrites_dashboards_with_the_token(grafana):
    proc = push_cli(grafana)
    assert proc.returncode == 0, proc.stderr
    posts = [r for r in FakeGrafana.requests if r["method"] == "POST"]
    assert [r["path"] for r in posts] == ["/api/folders", "/api/dashboards/db"]
    assert all(r["auth"] == "Bearer s3cret" for r in FakeGrafana.requests)
    saved = posts[1]["body"]
    assert saved["overwrite"] is True and saved["folderUid"] == "cdc-monitor"
    assert saved["dashboard"] == {k: v for k, v in json.loads(render("cdc-monitor.json")).items() if k != "id"}
    assert "s3cret" not in proc.stderr
    # a second push finds the folder instead of creating it again
    FakeGrafana.requests.clear()
    assert push_cli(grafana).returncode == 0
    assert [r["path"] for r in FakeGrafana.requests if r["method"] == "POST"] == ["/api/dashboards/db"]


def test_push_errors_are_one_line_exit_2(grafana):
    proc = push_cli(grafana, token=None)
    assert proc.returncode == 2 and "export GRAFANA_TOKEN" in proc.stderr
    FakeGrafana.status = 401
    proc = push_cli(grafana)
    assert proc.returncode == 2 and "HTTP 401" in proc.stderr and "permissions" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = push_cli("http://127.0.0.1:1")
    assert proc.returncode == 2 and "cannot reach Grafana" in proc.stderr
