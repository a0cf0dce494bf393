"""OpenTelemetry spans for the stretches of a call, opened and closed with the trace's own events.

A call's trace (:mod:`ask_fable.core.tracing`) is an ordered list of events; when an OpenTelemetry
SDK is installed and records the call (``ask-fable[otel]`` with ``OTEL_EXPORTER_OTLP_ENDPOINT``, see
``surface/otel_setup.py``), the same events also shape spans: a :class:`Step` emits its start and
end events and opens and ends its span in the same call, so the two never disagree. Events emitted
between them become span events of whichever span is current. Without a recording SDK nothing
here runs beyond one check per call (the API's no-op tracer).

The MCP SDK's server span (``tools/call <tool>``, parented on the client's ``traceparent`` from
``_meta``) is the root: the call's attributes are set on it; the guard, the mode, each model call
(GenAI ``chat`` spans, with their retries as events), the synthesis and the store writes are its
children. Attributes are metadata; question, context and answer text are added only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for them, redacted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel
from opentelemetry.trace import Span, SpanKind, StatusCode

from ask_fable import __version__
from ask_fable.redact import SecretSource, redact

if TYPE_CHECKING:
    from pydantic import JsonValue

    from ask_fable.core.tracing import TraceRecorder

#: Resolved through the global tracer provider at each span: set once the SDK is configured.
TRACER = otel.get_tracer("ask_fable", __version__)

#: ``gen_ai.provider.name`` for our backends: the semantic conventions' well-known value where one
#: exists, else the backend's own name.
GENAI_PROVIDERS = {
    "anthropic": "anthropic", "codex": "openai", "gemini": "gcp.gemini", "grok": "x_ai",
    "deepseek": "deepseek", "kimi": "moonshot", "glm": "z_ai", "minimax": "minimax",
}
#: Trace event attributes that have a GenAI name on a span.
GENAI_NAMES = {"input_tokens": "gen_ai.usage.input_tokens", "output_tokens": "gen_ai.usage.output_tokens"}
#: Outcomes of a model call that are not errors of the call (a refusal is an answer).
_NOT_ERRORS = frozenset({"ok", "refused"})
#: How much of a text a span carries when content capture is on.
CONTENT_CHARS = 32_000
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content() -> bool:
    """Whether the standard GenAI content-capture setting asks for message text on spans."""
    value = os.environ.get(CAPTURE_VARIABLE, "").strip().lower()
    return value in ("true", "1", "yes", "span_only", "span_and_event")


def recording_root() -> Span | None:
    """The current span when a tracer provider records it (the MCP server span of a tool call),
    else ``None``: spans are off for this call."""
    span = otel.get_current_span()
    return span if span.is_recording() else None


def current_span() -> Span:
    """The span current in this task (the API's invalid span when there is none)."""
    return otel.get_current_span()


def hex_trace_id(span: Span) -> str:
    """The span's OpenTelemetry trace id as 32 hex digits, as tracing tools show it."""
    return otel.format_trace_id(span.get_span_context().trace_id)


def span_value(value: Any) -> Any:
    """``value`` as a span attribute value (scalars, lists of strings), else ``None``."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def attributes(attrs: Mapping[str, Any], prefix: str = "ask_fable.") -> dict[str, Any]:
    """Trace event attributes as span attributes: scalars and lists of strings, under ``prefix``."""
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        shown = span_value(value)
        if shown is not None:
            out[GENAI_NAMES.get(key) or prefix + key] = shown
    return out


def _messages(role: str, text: str, secrets: SecretSource) -> str:
    content = redact(text[:CONTENT_CHARS], secrets)
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}], ensure_ascii=False)


class Step:
    """One stretch of a call: its start and end trace events and, when spans are on, its span."""

    __slots__ = ("_finished", "_started", "recorder", "span")

    def __init__(self, recorder: TraceRecorder, span: Span | None,
                 started: Mapping[str, JsonValue] | None = None) -> None:
        self.recorder = recorder
        self.span = span
        #: The attributes the span was opened with: not set again at its end.
        self._started = started or {}
        self._finished = False

    def event(self, name: str, **attrs: JsonValue) -> None:
        """A trace event within this step (a retry): also an event of its span."""
        self.recorder.event(name, self.span, **attrs)

    def set(self, **attrs: Any) -> None:
        """Span attributes only (names as given): what the trace keeps elsewhere."""
        if self.span is not None:
            self.span.set_attributes({k: v for k, v in attrs.items() if span_value(v) is not None})

    def finish(self, name: str | None, **attrs: JsonValue) -> None:
        """Emit the end event ``name`` (none: span only), put its attributes on the span, judge its
        outcome (a ``status`` other than ok or refused is an error, typed by ``kind``) and end it."""
        if self._finished:
            return
        self._finished = True
        if name is not None:
            self.recorder.event(name, False, **attrs)
        span = self.span
        if span is None:
            return
        started = self._started
        span.set_attributes(attributes({k: v for k, v in attrs.items()
                                        if v is not None and started.get(k) != v}))
        status = attrs.get("status")
        if isinstance(status, str) and status not in _NOT_ERRORS:
            span.set_attribute("error.type", str(attrs.get("kind") or status))
            span.set_status(StatusCode.ERROR, status)
        span.end()

    def abandon(self, exc: BaseException | None) -> None:
        """End the span of a step left by an exception: a cancellation, or a failure typed by its
        error kind (``error.type``). No end event: the trace shows the step as started only."""
        if self._finished:
            return
        self._finished = True
        span = self.span
        if span is None:
            return
        kind = getattr(exc, "kind", None)
        if isinstance(kind, str):
            span.set_attribute("error.type", kind)
            span.set_status(StatusCode.ERROR, kind)
        elif exc is not None:
            cancelled = "Cancel" in type(exc).__name__ or isinstance(exc, GeneratorExit)
            span.set_attribute("error.type", "cancelled" if cancelled else type(exc).__qualname__)
            span.set_status(StatusCode.ERROR, "cancelled" if cancelled else type(exc).__name__)
        span.end()

    @contextmanager
    def current(self) -> Iterator[Step]:
        """Make the span current within the block (the parent of spans and events opened there)."""
        if self.span is None:
            yield self
            return
        with otel.use_span(self.span, end_on_exit=False, record_exception=False,
                           set_status_on_exception=False):
            yield self

    def __enter__(self) -> Step:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.finish(None)
        else:
            self.abandon(exc)

    # --- GenAI ------------------------------------------------------------------------------------
    def model_reply(self, model: str) -> None:
        """The GenAI attributes of a model call's reply (its tokens come with its end event)."""
        self.set(**{"gen_ai.response.model": model})

    def content(self, secrets: SecretSource, *, system: str | None = None, prompt: str | None = None,
                answer: str | None = None) -> None:
        """Message text on the span, redacted, when content capture is on (never otherwise)."""
        if self.span is None or not capture_content():
            return
        if system:
            self.set(**{"gen_ai.system_instructions": json.dumps(
                [{"type": "text", "content": redact(system[:CONTENT_CHARS], secrets)}], ensure_ascii=False)})
        if prompt:
            self.set(**{"gen_ai.input.messages": _messages("user", prompt, secrets)})
        if answer:
            self.set(**{"gen_ai.output.messages": _messages("assistant", answer, secrets)})


def model_request(provider: str, model: str) -> dict[str, Any]:
    """The GenAI attributes of a model call's span, known before it is asked."""
    return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": GENAI_PROVIDERS.get(provider, provider),
            "gen_ai.request.model": model}


def open_span(recorder: TraceRecorder, name: str, attrs: Mapping[str, Any], *, client: bool = False,
              extra: Mapping[str, Any] | None = None) -> Span | None:
    """A child span of the current one carrying ``attrs`` (as ``ask_fable.*``) and ``extra`` (names as
    given), when the call's spans are on."""
    if recorder.root is None:
        return None
    opened = attributes({k: v for k, v in attrs.items() if v is not None})
    if extra:
        opened.update(extra)
    return TRACER.start_span(name, kind=SpanKind.CLIENT if client else SpanKind.INTERNAL, attributes=opened)
