"""The /metrics HTTP(S) server of ``watch``: prometheus_client's WSGI app behind the web
configuration's basic authentication (``sinks/web_config.py``), on a threading server whose socket
is wrapped in TLS when the configuration names a certificate. Transport only: what is served is
the registry's collector (``sinks/prometheus.py``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from cdc_monitor.sinks.web_config import REALM

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from cdc_monitor.sinks.web_config import WebConfig

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    address_family = socket.AF_INET


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _guarded(app: App, config: WebConfig) -> App:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not config.allows(environ.get("HTTP_AUTHORIZATION")):
            start_response("401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", REALM)])
            return [b"Unauthorized\n"]
        return app(environ, start_response)

    return guarded


def serve(host: str, port: int, registry: CollectorRegistry, config: WebConfig | None = None) -> WSGIServer:
    """Serve ``registry`` on host:port in a daemon thread; stop with ``shutdown()`` then ``server_close()``."""
    app: App = make_wsgi_app(registry)
    if config is not None and config.users:
        app = _guarded(app, config)
    server = make_server(host, port, app, _Server6 if ":" in host else _Server, handler_class=_Quiet)
    context = config.ssl_context() if config is not None else None
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True, name="cdc-monitor-metrics").start()
    return server
