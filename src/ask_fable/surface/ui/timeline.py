"""A trace's events read as a timeline: one lane per backend call on a shared time axis.

A call's trace (``core/tracing.py``) is an ordered list of ``{t_ms, name, attrs}`` events, metadata
only. The pipeline records ``request``, ``context.resolve``, ``guard``, ``cache.lookup``,
``mode.start`` / ``mode.end`` (with the mode's quorum, consensus and fallbacks) and ``response``
(status, and the answer's recommendation); every backend call adds ``provider.start`` and
``provider.end`` (token, role, status, kind, duration, sidecar, tokens, cost) and a
``provider.retry`` per failed attempt that was tried again (its cause and the wait before the next).
A council member cancelled at the council's deadline ends with ``cut``; one cancelled by the
straggler cut also has kind ``straggler``, and ``council.quorum`` marks when the quorum answered and
how long the others were then given.

:func:`build_timeline` pairs each ``provider.start`` with its ``provider.end`` (same token and
role, first in first out: one token never runs twice at once in one role), splits a retried call
into its attempts and waits, and gathers the summary a person reads first. Nothing here renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ask_fable.stores.records import TraceEvent

#: Outcome names, each with its colour in the style sheet (``o-<name>``) and its legend text.
OUTCOME_LABELS: dict[str, str] = {
    "ok": "answered",
    "refused": "refused",
    "error": "failed",
    "timeout": "timed out",
    "cut": "cut at the deadline",
    "straggler": "cut as a straggler",
    "config": "not configured",
    "shed": "skipped (circuit open)",
    "retried": "attempt that was retried",
    "wait": "waiting before a retry",
    "cached": "served from the cache",
    "unfinished": "no end recorded",
    "needs": "needs context",
    "cancelled": "cancelled before it returned",
}

#: The marks (diamonds) a lane may carry, with their legend text.
MARK_LABELS: dict[str, str] = {
    "guard": "the guard's decision (green: allowed, purple: refused)",
    "cache.lookup": "cache lookup (blue: served from the cache)",
    "context.resolve": "context_ref keys looked up (red: some missing)",
    "council.quorum": "the council's quorum answered",
    "store.error": "a record that could not be written",
}

#: Outcomes whose lane caption and segment carry no error kind (a cut says why on its own).
CUT_OR_OK = ("ok", "cut", "straggler")

_ROLE_ORDER = {"member": 1, "draft": 2, "critique": 2, "decide": 2, "fallback": 3, "synthesizer": 4}


def outcome_of(status: object, kind: object = None) -> str:
    """The outcome class of a status (and error kind): ok, refused, error, timeout, config, shed…"""
    status = str(status or "")
    kind = str(kind or "")
    if status in ("ok", "context_exhausted"):
        return "ok"
    if status == "refused":
        return "refused"
    if status == "needs_context":
        return "needs"
    if "cancelled" in (status, kind):
        return "cancelled"
    if "circuit_open" in (status, kind):
        return "shed"
    if {status, kind} & {"not_configured", "binary_missing"}:
        return "config"
    if "timeout" in (status, kind):
        return "timeout"
    if "straggler" in (status, kind):
        return "straggler"
    return "error"


@dataclass(frozen=True)
class Segment:
    """One piece of a lane: an attempt, a wait between attempts, or the whole call."""

    start_ms: float
    end_ms: float
    outcome: str
    label: str


@dataclass(frozen=True)
class Mark:
    """An instant in the call (the guard's verdict, a cache lookup, a store failure)."""

    t_ms: float
    name: str
    label: str
    outcome: str


@dataclass
class Lane:
    """One row of the timeline: the call, its mode, or one backend call."""

    key: str
    label: str
    kind_of_lane: str  # call | mode | backend
    start_ms: float
    end_ms: float
    outcome: str
    role: str | None = None
    model: str | None = None
    provider: str | None = None
    status: str | None = None
    error_kind: str | None = None
    duration_ms: float | None = None
    segments: list[Segment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    retries: int = 0
    cost_usd: float | None = None
    marks: list[Mark] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    """Every lane on one axis from 0 to ``total_ms``, and the facts summarizing the call."""

    total_ms: float
    lanes: list[Lane]
    summary: list[tuple[str, str]]
    #: A failed call's redacted ``detail`` and ``hint``, as its result carried them.
    detail: str | None = None
    hint: str | None = None

    def marks(self) -> list[str]:
        """The names of the marks drawn, in :data:`MARK_LABELS` order (store failures as one)."""
        drawn = {("store.error" if mark.name.endswith(".error") else mark.name)
                 for lane in self.lanes for mark in lane.marks}
        return [name for name in MARK_LABELS if name in drawn]


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def seconds(ms: float | None) -> str:
    """A duration for people: ``850 ms``, ``1.2 s``, ``2 min 5 s``."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, rest = divmod(ms / 1000, 60)
    return f"{minutes:.0f} min {rest:.0f} s"


def dollars(value: float | None) -> str:
    """A cost for people: ``$0.0042``; ``—`` when unknown."""
    if value is None:
        return "—"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


class _Builder:
    def __init__(self, events: Sequence[TraceEvent], elapsed_ms: float | None) -> None:
        self.events = events
        times = [t for e in events if (t := _num(e.t_ms)) is not None]
        self.end_ms = max([*times, elapsed_ms or 0.0, 1.0])
        self.lanes: list[Lane] = []
        self.open: list[Lane] = []
        self.call_marks: list[Mark] = []
        self.mode_marks: list[Mark] = []
        self.mode_start: float | None = None
        self.mode_end: Mapping[str, Any] | None = None
        self.mode_end_t: float | None = None
        self.response: dict[str, Any] = {}
        self.response_t: float | None = None
        self.request: dict[str, Any] = {}

    def feed(self) -> None:
        for event in self.events:
            name = event.name
            t = _num(event.t_ms) or 0.0
            attrs = event.attrs
            handler = _HANDLERS.get(name)
            if handler is not None:
                handler(self, t, attrs)
            elif name.endswith(".error"):
                self.call_marks.append(
                    Mark(
                        t,
                        name,
                        f"{name}: {attrs.get('store') or attrs.get('op') or ''} "
                        f"{attrs.get('error') or ''}".strip(),
                        "error",
                    )
                )

    def on_request(self, t: float, attrs: dict[str, Any]) -> None:
        self.request = attrs

    def on_context(self, t: float, attrs: dict[str, Any]) -> None:
        label = f"context_ref: {attrs.get('resolved', 0)} found, {attrs.get('missing', 0)} missing"
        self.call_marks.append(Mark(t, "context.resolve", label, "error" if attrs.get("missing") else "ok"))

    def on_guard(self, t: float, attrs: dict[str, Any]) -> None:
        allowed = attrs.get("allowed") is not False
        label = "guard: allowed" if allowed else f"guard: refused ({attrs.get('rule') or attrs.get('layer')})"
        self.call_marks.append(Mark(t, "guard", label, "ok" if allowed else "refused"))

    def on_cache(self, t: float, attrs: dict[str, Any]) -> None:
        hit = bool(attrs.get("hit"))
        self.call_marks.append(
            Mark(t, "cache.lookup", "cache: hit" if hit else "cache: miss", "cached" if hit else "ok")
        )

    def on_mode_start(self, t: float, attrs: dict[str, Any]) -> None:
        self.mode_start = t

    def on_mode_end(self, t: float, attrs: dict[str, Any]) -> None:
        self.mode_end, self.mode_end_t = attrs, t

    def on_quorum(self, t: float, attrs: dict[str, Any]) -> None:
        wait = _num(attrs.get("straggler_wait_s"))
        label = f"quorum {attrs.get('answered', '?')}/{attrs.get('asked', '?')}"
        if wait is not None:
            label += f": the others given {seconds(wait * 1000)} more"
        self.mode_marks.append(Mark(t, "council.quorum", label, "ok"))

    def on_response(self, t: float, attrs: dict[str, Any]) -> None:
        self.response, self.response_t = attrs, t

    def on_provider_start(self, t: float, attrs: dict[str, Any]) -> None:
        token = str(attrs.get("token") or "?")
        role = _text(attrs.get("role"))
        lane = Lane(
            key=f"{role or 'model'}:{token}:{len(self.lanes)}",
            label=token,
            kind_of_lane="backend",
            start_ms=t,
            end_ms=t,
            outcome="unfinished",
            role=role,
            model=_text(attrs.get("model")),
            provider=_text(attrs.get("provider")),
        )
        self.lanes.append(lane)
        self.open.append(lane)

    def _find_open(self, attrs: dict[str, Any]) -> Lane | None:
        token, role = str(attrs.get("token") or "?"), _text(attrs.get("role"))
        for lane in self.open:
            if lane.label == token and lane.role == role:
                return lane
        for lane in self.open:  # a retry names its token only when the role is unknown
            if lane.label == token:
                return lane
        return None

    def on_provider_retry(self, t: float, attrs: dict[str, Any]) -> None:
        lane = self._find_open(attrs)
        if lane is None:
            return
        began = lane.segments[-1].end_ms if lane.segments else lane.start_ms
        cause = _text(attrs.get("cause")) or "failed"
        attempt = int(_num(attrs.get("attempt")) or lane.retries + 1)
        lane.segments.append(
            Segment(began, t, "retried", f"attempt {attempt}: {cause} ({seconds(t - began)})")
        )
        wait = _num(attrs.get("delay_ms")) or 0.0
        lane.segments.append(
            Segment(t, t + wait, "wait", f"waited {seconds(wait)} before attempt {attempt + 1}")
        )
        lane.retries += 1

    def on_provider_end(self, t: float, attrs: dict[str, Any]) -> None:
        lane = self._find_open(attrs)
        if lane is None:  # an end without a start (an older trace): it began elapsed_ms earlier
            elapsed = _num(attrs.get("elapsed_ms")) or 0.0
            self.on_provider_start(max(0.0, t - elapsed), attrs)
            lane = self.open[-1]
        self.open.remove(lane)
        lane.end_ms = t
        lane.status = _text(attrs.get("status"))
        lane.error_kind = _text(attrs.get("kind"))
        lane.model = _text(attrs.get("model")) or lane.model
        lane.duration_ms = _num(attrs.get("elapsed_ms"))
        lane.cost_usd = _num(attrs.get("cost_usd"))
        lane.outcome = outcome_of(lane.status, lane.error_kind)
        if attrs.get("cut") and lane.outcome != "straggler":
            lane.outcome = "cut"
        self._finish_segments(lane)
        lane.notes.extend(_backend_notes(attrs, lane))

    def _finish_segments(self, lane: Lane) -> None:
        began = lane.segments[-1].end_ms if lane.segments else lane.start_ms
        attempt = f"attempt {lane.retries + 1}: " if lane.retries else ""
        what = OUTCOME_LABELS.get(lane.outcome, lane.outcome)
        detail = f" ({lane.error_kind})" if lane.error_kind and lane.outcome not in CUT_OR_OK else ""
        lane.segments.append(
            Segment(
                min(began, lane.end_ms),
                lane.end_ms,
                lane.outcome,
                f"{attempt}{what}{detail} ({seconds(lane.end_ms - began)})",
            )
        )

    def build(self, tool: str | None, cached: bool) -> Timeline:
        self.feed()
        end = self.response_t if self.response_t is not None else self.end_ms
        for lane in self.open:  # started, never ended: cancelled with the call or its mode
            lane.end_ms = end
            self._finish_segments(lane)
            lane.notes.append("no end recorded: cancelled with the call")
        status = _text(self.response.get("status"))
        call_outcome = (
            "cached"
            if cached or self.response.get("cached")
            else outcome_of(status, self.response.get("kind"))
        )
        call = Lane(
            key="call",
            label=tool or "call",
            kind_of_lane="call",
            start_ms=0.0,
            end_ms=end,
            outcome=call_outcome,
            status=status,
            error_kind=_text(self.response.get("kind")),
            duration_ms=end,
            marks=self.call_marks,
        )
        call.segments.append(
            Segment(0.0, end, call_outcome, f"the whole call: {status or 'no status'} ({seconds(end)})")
        )
        lanes = [call]
        if self.mode_start is not None:
            mode_name = str((self.mode_end or {}).get("mode") or self.request.get("mode") or "mode")
            mode_end = self.mode_end_t if self.mode_end_t is not None else end
            mode_outcome = (
                call_outcome if self.mode_end is not None else outcome_of(status, self.response.get("kind"))
            )
            mode = Lane(
                key="mode",
                label=f"{mode_name} mode",
                kind_of_lane="mode",
                start_ms=self.mode_start,
                end_ms=mode_end,
                outcome=mode_outcome,
                duration_ms=mode_end - self.mode_start,
                marks=self.mode_marks,
            )
            mode.segments.append(
                Segment(
                    self.mode_start,
                    mode_end,
                    mode_outcome,
                    f"{mode_name}: {seconds(mode_end - self.mode_start)}",
                )
            )
            lanes.append(mode)
        backends = sorted(self.lanes, key=lambda lane: (_ROLE_ORDER.get(lane.role or "", 2), lane.start_ms))
        return Timeline(
            total_ms=max(end, *(lane.end_ms for lane in self.lanes), 1.0),
            lanes=lanes + backends,
            summary=self.summary(),
            detail=_text(self.response.get("detail")),
            hint=_text(self.response.get("hint")),
        )

    def summary(self) -> list[tuple[str, str]]:
        facts: list[tuple[str, str]] = []
        mode = dict(self.mode_end or {})
        if mode.get("quorum"):
            facts.append(("Quorum (answered/asked)", str(mode["quorum"])))
        if mode.get("consensus"):
            facts.append(("Consensus", str(mode["consensus"])))
        if mode.get("synth_fallback") is not None:
            facts.append(("Synthesis", "fell back" if mode["synth_fallback"] else "as requested"))
        if mode.get("answered") is not None and mode.get("requested") is not None:
            facts.append(("Stages answered", f"{mode['answered']}/{mode['requested']}"))
        if mode.get("fallback") is not None:
            facts.append(("Fallback synthesizer", "used" if mode["fallback"] else "not needed"))
        if mode.get("resolution"):
            facts.append(("Resolution", str(mode["resolution"])))
        if mode.get("turns") is not None:
            facts.append(("Turns", str(mode["turns"])))
        rec, conf = self.response.get("recommendation"), self.response.get("confidence")
        if rec:
            facts.append(("Recommendation", f"{rec} ({conf} confidence)" if conf else str(rec)))
        retried = sum(lane.retries for lane in self.lanes)
        if retried:
            facts.append(("Retries", str(retried)))
        costs = [lane.cost_usd for lane in self.lanes if lane.cost_usd is not None]
        if costs:
            facts.append(("Cost", dollars(sum(costs))))
        return facts


def _backend_notes(attrs: Mapping[str, Any], lane: Lane) -> list[str]:
    notes: list[str] = []
    if lane.outcome == "cut":
        notes.append("cut: still running at the council's deadline")
    elif lane.outcome == "straggler":
        notes.append("cut: still running after the straggler wait, once a quorum had answered")
    if lane.retries:
        notes.append(f"retried {lane.retries}×")
    rec = _text(attrs.get("recommendation"))
    if rec:
        conf = _text(attrs.get("confidence"))
        notes.append(f"recommends {rec}" + (f" ({conf})" if conf else ""))
    tokens_in, tokens_out = _num(attrs.get("input_tokens")), _num(attrs.get("output_tokens"))
    if tokens_in is not None or tokens_out is not None:
        notes.append(f"tokens {tokens_in or 0:.0f} in / {tokens_out or 0:.0f} out")
    if lane.cost_usd is not None:
        notes.append(f"cost {dollars(lane.cost_usd)}")
    routed = _text(attrs.get("routed_via"))
    if routed:
        notes.append(f"routed via {routed}")
    return notes


_HANDLERS = {
    "request": _Builder.on_request,
    "context.resolve": _Builder.on_context,
    "guard": _Builder.on_guard,
    "cache.lookup": _Builder.on_cache,
    "mode.start": _Builder.on_mode_start,
    "mode.end": _Builder.on_mode_end,
    "council.quorum": _Builder.on_quorum,
    "response": _Builder.on_response,
    "provider.start": _Builder.on_provider_start,
    "provider.retry": _Builder.on_provider_retry,
    "provider.end": _Builder.on_provider_end,
}


def build_timeline(
    events: Sequence[TraceEvent],
    *,
    tool: str | None = None,
    elapsed_ms: float | None = None,
    cached: bool = False,
) -> Timeline:
    """The timeline of one trace's ``events`` (as ``trace_get`` returns them)."""
    return _Builder(events, elapsed_ms).build(tool, cached)
