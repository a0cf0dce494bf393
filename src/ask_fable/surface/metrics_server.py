"""The team server's Prometheus ``/metrics``, on a listener of its own (loopback by default).

Never part of the public ``/mcp`` listener: the metrics name tenants and backends, and a scrape needs
no API key. Each replica serves its own; Prometheus scrapes every replica (``docs/deploy.md``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from ask_fable.core.app import App
    from ask_fable.core.metrics import CallMetrics


@dataclass
class MetricsListener:
    """The running ``/metrics`` listener and the metrics it serves."""

    metrics: CallMetrics
    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        """The port it listens on (the one asked for, or the one given for port 0)."""
        return int(self.server.server_port)

    def close(self) -> None:
        """Stop listening and stop counting."""
        self.server.shutdown()
        self.server.server_close()
        self.metrics.close()


def serve_metrics(app: App, host: str, port: int) -> MetricsListener:
    """Start counting ``app``'s calls and serve them at ``http://host:port/metrics`` (raises
    ``OSError`` when the port cannot be bound)."""
    from prometheus_client import start_http_server

    from ask_fable.core.metrics import CallMetrics

    metrics = CallMetrics(app)
    try:
        server, thread = start_http_server(port, host, registry=metrics.registry)
    except BaseException:
        metrics.close()
        raise
    app.metrics = metrics
    return MetricsListener(metrics, server, thread)
