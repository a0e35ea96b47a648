"""A Schema Registry for tests: the REST API Confluent's clients and cdc-monitor call, served from a
loopback HTTP server (no real registry can run here). Schemas get global ids, identical schema
text gets the same id (as the real registry does), errors have the registry's bodies."""

from __future__ import annotations

import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, user_info: str | None = None):
        self.user_info = user_info
        self.lock = threading.Lock()
        self.by_id: dict[int, dict[str, Any]] = {}
        self.ids: dict[str, int] = {}  # canonical schema text -> id
        self.subjects: dict[str, list[int]] = {}  # subject -> ids by version
        self.requests: list[tuple[str, str, str | None]] = []  # method, path, Authorization header

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        canonical = json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":")) if schema_type == "AVRO" else schema
        with self.lock:
            sid = self.ids.get(canonical)
            if sid is None:
                sid = len(self.by_id) + 1
                self.ids[canonical] = sid
                self.by_id[sid] = {"schema": schema, "schemaType": schema_type}
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            return sid


def _handler(reg: Registry) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, code: int, message: str) -> None:
            self._send(status, {"error_code": code, "message": message})

        def _authorized(self) -> bool:
            auth = self.headers.get("Authorization")
            reg.requests.append((self.command, self.path, auth))
            if reg.user_info is None:
                return True
            if auth == "Basic " + base64.b64encode(reg.user_info.encode()).decode():
                return True
            self._error(401, 40101, "Unauthorized")
            return False

        def do_GET(self) -> None:
            if not self._authorized():
                return
            path = self.path.split("?", 1)[0]
            if path == "/subjects":
                return self._send(200, sorted(reg.subjects))
            if path == "/config":
                return self._send(200, {"compatibilityLevel": "BACKWARD"})
            if m := re.fullmatch(r"/schemas/ids/(\d+)", path):
                entry = reg.by_id.get(int(m.group(1)))
                if entry is None:
                    return self._error(404, 40403, f"Schema {m.group(1)} not found")
                body = {"schema": entry["schema"]}
                if entry["schemaType"] != "AVRO":
                    body["schemaType"] = entry["schemaType"]
                return self._send(200, body)
            if m := re.fullmatch(r"/subjects/([^/]+)/versions", path):
                if m.group(1) not in reg.subjects:
                    return self._error(404, 40401, f"Subject '{m.group(1)}' not found.")
                return self._send(200, list(range(1, len(reg.subjects[m.group(1)]) + 1)))
            if m := re.fullmatch(r"/subjects/([^/]+)/versions/(latest|\d+)", path):
                subject, which = m.group(1), m.group(2)
                versions = reg.subjects.get(subject)
                if not versions:
                    return self._error(404, 40401, f"Subject '{subject}' not found.")
                n = len(versions) if which == "latest" else int(which)
                if not 1 <= n <= len(versions):
                    return self._error(404, 40402, f"Version {which} not found.")
                sid = versions[n - 1]
                return self._send(200, {"subject": subject, "version": n, "id": sid, "schema": reg.by_id[sid]["schema"]})
            return self._error(404, 404, "HTTP 404 Not Found")

        def do_POST(self) -> None:
            if not self._authorized():
                return
            path = self.path.split("?", 1)[0]
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if m := re.fullmatch(r"/subjects/([^/]+)/versions", path):
                try:
                    sid = reg.register(m.group(1), body["schema"], body.get("schemaType", "AVRO"))
                except (KeyError, ValueError):
                    return self._error(422, 42201, "Invalid schema")
                return self._send(200, {"id": sid})
            if m := re.fullmatch(r"/subjects/([^/]+)", path):
                subject = m.group(1)
                canonical = json.dumps(json.loads(body["schema"]), sort_keys=True, separators=(",", ":"))
                sid = reg.ids.get(canonical)
                if subject not in reg.subjects:
                    return self._error(404, 40401, f"Subject '{subject}' not found.")
                if sid is None or sid not in reg.subjects[subject]:
                    return self._error(404, 40403, "Schema not found")
                return self._send(200, {"subject": subject, "version": reg.subjects[subject].index(sid) + 1, "id": sid,
                                        "schema": reg.by_id[sid]["schema"]})
            return self._error(404, 404, "HTTP 404 Not Found")

    return Handler


class RegistryServer:
    """``with RegistryServer() as srv: srv.url``; ``srv.registry`` holds what was registered."""

    def __init__(self, user_info: str | None = None):
        self.registry = Registry(user_info)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.registry))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> RegistryServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
