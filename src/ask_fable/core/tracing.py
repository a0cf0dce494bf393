"""An ordered, metadata-only event timeline for one call, and the console trace on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from ask_fable.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from pydantic import JsonValue

    from ask_fable.core.spans import Step
    from ask_fable.stores.records import TraceEvent


@dataclass
class TraceRecorder:
    """Collects ``(t_ms, name, attrs)`` events in order; attrs are metadata, never content.

    Times come from ``clock`` (the App's): ``wall_start`` is when the call began, ``t_ms`` counts
    from then on the monotonic clock.

    When an OpenTelemetry SDK records the call, ``root`` is the span it runs in (the MCP server
    span) and the events also shape its spans (:mod:`ask_fable.core.spans`): :meth:`step` opens a
    child span with a start event and ends it with the end event; other events become span events
    of the current span. ``observer`` (the process's metrics) sees every event.
    """

    trace_id: str
    clock: Clock = SYSTEM_CLOCK
    observer: Callable[[str, dict[str, JsonValue]], None] | None = None
    started: float = field(init=False)
    wall_start: float = field(init=False)
    events: list[TraceEvent] = field(default_factory=list)
    root: Span | None = field(init=False)

    def __post_init__(self) -> None:
        from ask_fable.core.spans import recording_root

        self.started = self.clock.monotonic()
        self.wall_start = self.clock.now()
        self.root = recording_root()

    def event(self, name: str, span: Span | bool | None = None, /, **attrs: JsonValue) -> None:
        """Append an event stamped with milliseconds since the call began (also an event of
        ``span``, by default the current span, when spans are on; ``False``: of none)."""
        # The records load on a call's first event, not when the server starts.
        from ask_fable.stores.records import TraceEvent

        clean: dict[str, JsonValue] = {k: v for k, v in attrs.items() if v is not None}
        # Built from values of known types on every step of every call: no validation needed.
        self.events.append(TraceEvent.model_construct(t_ms=self.elapsed_ms(), name=name, attrs=clean))
        if self.observer is not None:
            self.observer(name, clean)
        if self.root is not None and span is not False:
            from ask_fable.core.spans import attributes, current_span

            target = span if span is not None and span is not True else current_span()
            target.add_event(name, attributes(clean, ""))

    def note(self, name: str, span: Span | None, **attrs: JsonValue) -> None:
        """An event seen by the metrics and by ``span`` but not added to the events (which a store
        is writing, and which record it their own way)."""
        clean: dict[str, JsonValue] = {k: v for k, v in attrs.items() if v is not None}
        if self.observer is not None:
            self.observer(name, clean)
        if span is not None:
            from ask_fable.core.spans import attributes

            span.add_event(name, attributes(clean, ""))

    def step(self, start: str | None, span_name: str, *, client: bool = False,
             span_attrs: dict[str, Any] | None = None, **attrs: JsonValue) -> Step:
        """Begin a stretch of the call: the ``start`` event (none: span only) and, when spans are on,
        a child span of the current one named ``span_name`` carrying ``attrs`` (and ``span_attrs``,
        names as given). End it with :meth:`Step.finish` (or leave its ``with`` block)."""
        from ask_fable.core.spans import Step, open_span

        if start is not None:
            self.event(start, False, **attrs)
        span = open_span(self, span_name, attrs, client=client, extra=span_attrs)
        return Step(self, span, attrs if span is not None else None)

    @property
    def otel_trace_id(self) -> str | None:
        """The OpenTelemetry trace id this call's spans belong to, when spans are on."""
        if self.root is None:
            return None
        from ask_fable.core.spans import hex_trace_id

        return hex_trace_id(self.root)

    def annotate(self, **attrs: Any) -> None:
        """Attributes (names as given) on the call's root span, when spans are on."""
        if self.root is not None:
            from ask_fable.core.spans import span_value

            self.root.set_attributes({k: v for k, v in attrs.items() if span_value(v) is not None})

    def elapsed_ms(self) -> int:
        """Milliseconds since the call began."""
        return int((self.clock.monotonic() - self.started) * 1000)


class Console:
    """The human-readable progress trace on stderr (stdout belongs to the MCP protocol)."""

    def __init__(
        self,
        quiet: bool,
        show_reasoning: bool,
        stream: TextIO | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.quiet = quiet
        self.show_reasoning = show_reasoning
        self._stream = stream
        self._secrets = secrets
        self._color = False
        if not quiet:
            target = self.stream
            self._color = bool(getattr(target, "isatty", lambda: False)())

    @property
    def stream(self) -> TextIO:
        """stderr unless a stream was given (read lazily so tests can capture it)."""
        return self._stream or sys.stderr

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self._color else text

    def line(self, trace_id: str, message: str, *, dim: bool = False) -> None:
        """Print one progress line tagged with the trace id."""
        if self.quiet:
            return
        from ask_fable.redact import redact

        message = redact(message, self._secrets)
        tag = self._paint(f"[ask-fable {trace_id[-6:]}]", "36")
        body = self._paint(message, "2") if dim else message
        print(f"{tag} {body}", file=self.stream, flush=True)

    def reasoning(self, trace_id: str, source: str, text: str, limit: int = 600) -> None:
        """Print a reasoning excerpt when reasoning display is on."""
        if self.quiet or not self.show_reasoning or not text.strip():
            return
        excerpt = text.strip().replace("\n", " ")
        if len(excerpt) > limit:
            excerpt = excerpt[:limit] + "…"
        self.line(trace_id, f"{source} thinking: {excerpt}", dim=True)
