"""OpenLineage test helpers: the spec's JSON Schemas (vendored in tests/openlineage_schemas, with
OpenLineage's license) and cdc-monitor's own facet schema in one offline registry, an event
validator, and a loopback HTTP server that records what is posted to it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "tests" / "openlineage_schemas"
OWN = ROOT / "cdc_monitor" / "lineage" / "facets.json"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def schema_files() -> list[Path]:
    return [*sorted(SPEC.rglob("*.json")), OWN]


def registry() -> Registry:
    """Every vendored schema under its ``$id``: ``$ref``s resolve offline, an unknown one fails."""
    resources = []
    for path in schema_files():
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema, default_specification=DRAFT202012)))
    return Registry().with_resources(resources)


def _facets(event: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, facets in (("run", event["run"].get("facets")), ("job", event["job"].get("facets"))):
        for name, facet in (facets or {}).items():
            yield f"{where}.{name}", facet
    for kind in ("inputs", "outputs"):
        for ds in event.get(kind) or []:
            for group in ("facets", "inputFacets", "outputFacets"):
                for name, facet in (ds.get(group) or {}).items():
                    yield f"{ds['namespace']}/{ds['name']}.{name}", facet


def validate(event: dict[str, Any], schemas: Registry) -> list[str]:
    """The event against the spec's RunEvent, then each facet against the schema its ``_schemaURL``
    names (the RunEvent schema checks a facet's base fields only). Returns the schema URLs used."""
    checker = Draft202012Validator.FORMAT_CHECKER
    Draft202012Validator({"$ref": RUN_EVENT}, registry=schemas, format_checker=checker).validate(event)
    used = [event["schemaURL"]]
    for where, facet in _facets(event):
        url = facet["_schemaURL"]
        base = url.split("#", 1)[0]
        assert base in {json.loads(p.read_text())["$id"] for p in schema_files()}, f"{where}: {url} is not vendored"
        Draft202012Validator({"$ref": url}, registry=schemas, format_checker=checker).validate(facet)
        used.append(url)
    return used


@dataclass
class Recorded:
    requests: list[dict[str, Any]] = field(default_factory=list)  # path, headers, body (parsed JSON)
    status: int = 201


@contextmanager
def recording_server(status: int = 201) -> Iterator[tuple[str, Recorded]]:
    """An HTTP server on loopback that answers ``status`` to every POST and records it; stopped on exit."""
    recorded = Recorded(status=status)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            recorded.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
            self.send_response(recorded.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", recorded
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
