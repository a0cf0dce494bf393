"""A loopback OTLP/HTTP trace receiver for tests: what a collector would get, decoded.

``OtlpReceiver`` is a real HTTP server on 127.0.0.1 (ephemeral port, background thread) that accepts
``POST /v1/traces`` bodies in OTLP protobuf, decodes them with ``opentelemetry-proto`` and keeps every
span with its resource and scope::

    with OtlpReceiver() as rx:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint}
        ...
        spans = rx.wait_for(lambda spans: any(s.name == "tools/call ask" for s in spans))

``Span`` flattens what a test checks: ids as hex, parent id, kind, status, attributes and events as
plain dicts. ``raw`` holds every body received, to check that some text never left the server.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS = {0: "unset", 1: "ok", 2: "error"}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which is None:
        return None
    return getattr(value, which)


def _attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items if isinstance(kv, KeyValue)}


@dataclass
class Span:
    """One received span, flattened."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: str
    status: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    scope: str

    def text(self) -> str:
        """Every string the span carries (attributes and event attributes), joined."""
        values: list[Any] = list(self.attributes.values())
        for _, attrs in self.events:
            values += list(attrs.values())
        return "\n".join(str(v) for v in values)


@dataclass
class OtlpReceiver:
    """A loopback OTLP/HTTP receiver; ``endpoint`` is what ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes."""

    spans: list[Span] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver._receive(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def _receive(self, path: str, body: bytes) -> None:
        assert path == "/v1/traces", path
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found: list[Span] = []
        for resource_spans in request.resource_spans:
            resource = _attrs(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(Span(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(), kind=KINDS.get(span.kind, str(span.kind)),
                        status=STATUS.get(span.status.code, str(span.status.code)),
                        attributes=_attrs(span.attributes),
                        events=[(event.name, _attrs(event.attributes)) for event in span.events],
                        resource=resource, scope=scope_spans.scope.name,
                    ))
        with self._lock:
            self.raw.append(body)
            self.spans.extend(found)

    def snapshot(self) -> list[Span]:
        """The spans received so far."""
        with self._lock:
            return list(self.spans)

    def wait_for(self, done: Callable[[list[Span]], bool], timeout: float = 20.0) -> list[Span]:
        """Block until ``done(spans)`` holds (spans arrive in batches), then return the spans."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans never arrived: {sorted({s.name for s in spans})}")
            time.sleep(0.05)


def children(spans: list[Span], parent: Span) -> Iterator[Span]:
    """The spans whose parent is ``parent``."""
    return (span for span in spans if span.parent_id == parent.span_id and span.trace_id == parent.trace_id)
