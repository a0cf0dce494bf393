"""OpenTelemetry traces of a serving process, configured by the standard environment.

Off unless an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and the ``otel`` extra is installed
(``pip install 'ask-fable[otel]'``: the SDK and the OTLP/HTTP exporter). Everything else is the SDK's
own reading of the environment: ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME`` (default
``ask-fable``), ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` / ``_ARG``,
``OTEL_EXPORTER_OTLP_TIMEOUT``, ``OTEL_BSP_*``; ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` turns it off.

Spans leave through a ``BatchSpanProcessor``: a call only queues its spans (a full queue drops them),
and a background thread exports them, so a collector that is slow or down never slows or fails a
call. :meth:`Tracing.shutdown` flushes what is queued when the server stops, within a bound.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ask_fable import __version__

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

#: Seconds a stopping server waits for its last spans to leave.
FLUSH_SECONDS = 3.0
INSTALL_HINT = "pip install 'ask-fable[otel]'"


def traces_wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for OpenTelemetry traces (an OTLP endpoint, not disabled)."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() in ("none", ""):
        return False
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


@dataclass
class Tracing:
    """The tracer provider this process installed."""

    provider: TracerProvider

    def shutdown(self, seconds: float = FLUSH_SECONDS) -> None:
        """Flush the queued spans and close the exporter, waiting at most ``seconds`` (a collector
        that does not answer costs the stop no more than that)."""

        def close() -> None:
            self.provider.force_flush(int(seconds * 1000))
            self.provider.shutdown()

        worker = threading.Thread(target=close, name="ask-fable-otel-flush", daemon=True)
        worker.start()
        worker.join(seconds + 0.5)


def start_tracing() -> tuple[Tracing | None, str | None]:
    """Install the SDK's tracer provider with the OTLP/HTTP exporter when the environment asks for
    traces. Returns the provider and a line for the operator (the extra missing, a protocol this
    exporter does not speak); ``(None, None)`` when traces are not wanted."""
    if not traces_wanted():
        return None, None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return None, (f"OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed; "
                      f"no traces are sent ({INSTALL_HINT})")
    note = None
    protocol = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    if protocol.strip().lower() != "http/protobuf":
        note = f"OTLP protocol {protocol!r} is not supported; sending traces as http/protobuf"
    resource = Resource.create({SERVICE_VERSION: __version__})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "ask-fable"}))
    # No exit hook of the SDK's own: the server flushes on stop, within a bound.
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _quiet_export_failures()
    return Tracing(provider), note


def _quiet_export_failures() -> None:
    """The SDK's export warnings (a collector down: one per retry) as one stderr line per kind a
    minute, with a count, never a traceback."""
    from ask_fable.redact import redact
    from ask_fable.surface.log_limits import RateLimitedLog, RateLimitFilter

    def say(line: str) -> None:
        # The exporter's errors name the endpoint, which may carry credentials.
        print(f"ask-fable: sending traces: {redact(line)}", file=sys.stderr, flush=True)

    handler = logging.Handler(logging.WARNING)
    handler.addFilter(RateLimitFilter(RateLimitedLog(say, interval=60.0)))
    sdk_log = logging.getLogger("opentelemetry")
    sdk_log.addHandler(handler)
    sdk_log.propagate = False
