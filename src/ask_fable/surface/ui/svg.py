"""The pictures of the web view, drawn as inline SVG on the server: the timeline and the bar charts.

Colours come from the style sheet through class names (``o-ok``, ``o-error``…), never from
inline styles, so the strict Content-Security-Policy holds; every label goes through
:mod:`markup`, and each shape carries a ``<title>`` a browser shows on hover.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ask_fable.surface.ui.markup import Html, el, join
from ask_fable.surface.ui.timeline import OUTCOME_LABELS, Lane, Timeline, seconds

WIDTH = 1000
LABEL_W = 230
RIGHT_W = 150
ROW_H = 28
BAR_H = 16
AXIS_H = 28


def _short(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def nice_step(span: float, ticks: int = 6) -> float:
    """A round tick spacing (1, 2 or 5 × 10ⁿ) giving about ``ticks`` ticks over ``span``."""
    raw = max(span, 1e-9) / max(1, ticks)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)


def _axis(
    scale: Callable[[float], float],
    span: float,
    top: float,
    bottom: float,
    label: Callable[[float], str],
    whole: bool = False,
) -> list[Html]:
    step = max(1.0, nice_step(span)) if whole else nice_step(span)
    parts: list[Html] = []
    value = 0.0
    while value <= span * 1.0001:
        x = scale(value)
        parts.append(
            el("line", {"class": "grid", "x1": f"{x:.1f}", "x2": f"{x:.1f}", "y1": top - 6, "y2": bottom})
        )
        parts.append(
            el(
                "text",
                {"class": "tick", "x": f"{x:.1f}", "y": top - 10, "text-anchor": "middle"},
                label(value),
            )
        )
        value += step
    return parts


def _lane_row(lane: Lane, y: float, scale: Callable[[float], float]) -> Html:
    bar_y = y + (ROW_H - BAR_H) / 2
    role = f" · {lane.role}" if lane.role else ""
    name = _short(lane.label + role, 34)
    shapes: list[Html] = [
        el(
            "text",
            {"class": f"lane-label {lane.kind_of_lane}", "x": 8, "y": y + ROW_H / 2 + 4},
            el("title", None, f"{lane.label}{role}" + (f" — {lane.model}" if lane.model else "")),
            name,
        ),
    ]
    for segment in lane.segments:
        x1, x2 = scale(segment.start_ms), scale(segment.end_ms)
        shapes.append(
            el(
                "rect",
                {
                    "class": f"seg o-{segment.outcome}",
                    "data-outcome": segment.outcome,
                    "x": f"{x1:.1f}",
                    "y": f"{bar_y:.1f}",
                    "width": f"{max(2.0, x2 - x1):.1f}",
                    "height": BAR_H,
                    "rx": 2,
                },
                el("title", None, segment.label),
            )
        )
    for mark in lane.marks:
        x = scale(mark.t_ms)
        shapes.append(
            el(
                "path",
                {
                    "class": f"mark o-{mark.outcome}",
                    "data-mark": mark.name,
                    "d": f"M{x:.1f} {bar_y - 3:.1f} l5 -5 l5 5 l-5 5 z",
                    "transform": "translate(-5 0)",
                },
                el("title", None, mark.label),
            )
        )
    shown = lane.duration_ms if lane.duration_ms is not None else lane.end_ms - lane.start_ms
    caption = seconds(shown)
    if lane.outcome in ("cut", "straggler"):
        caption += f" · {OUTCOME_LABELS[lane.outcome]}"
    elif lane.error_kind and lane.outcome != "ok":
        caption += f" · {lane.error_kind}"
    if lane.retries:
        caption += f" · {lane.retries} retr{'y' if lane.retries == 1 else 'ies'}"
    shapes.append(
        el(
            "text",
            {"class": "lane-time", "x": f"{scale(lane.end_ms) + 6:.1f}", "y": y + ROW_H / 2 + 4},
            caption,
        )
    )
    return el(
        "g",
        {
            "class": f"lane lane-{lane.kind_of_lane}",
            "data-lane": lane.key,
            "data-outcome": lane.outcome,
            "data-role": lane.role,
        },
        shapes,
    )


def timeline_svg(timeline: Timeline) -> Html:
    """The timeline: one row per lane on a shared millisecond axis, bars coloured by outcome."""
    span = timeline.total_ms
    plot_w = WIDTH - LABEL_W - RIGHT_W
    height = AXIS_H + ROW_H * len(timeline.lanes) + 8

    def scale(ms: float) -> float:
        return LABEL_W + plot_w * max(0.0, ms) / span

    rows = [_lane_row(lane, AXIS_H + i * ROW_H, scale) for i, lane in enumerate(timeline.lanes)]
    stripes = [
        el("rect", {"class": "stripe", "x": 0, "y": AXIS_H + i * ROW_H, "width": WIDTH, "height": ROW_H})
        for i in range(0, len(timeline.lanes), 2)
    ]
    return el(
        "svg",
        {
            "class": "timeline",
            "viewBox": f"0 0 {WIDTH} {height}",
            "width": WIDTH,
            "height": height,
            "role": "img",
            "aria-label": "timeline of the call",
        },
        stripes,
        _axis(scale, span, AXIS_H, height - 8, lambda v: seconds(v)),
        rows,
    )


@dataclass(frozen=True)
class BarPart:
    """One coloured piece of a chart bar."""

    value: float
    css: str
    label: str


@dataclass(frozen=True)
class BarRow:
    """One labelled row of a bar chart: its parts (stacked, or side by side when ``paired``)."""

    label: str
    parts: Sequence[BarPart]
    caption: str


def bar_chart(
    title: str,
    rows: Sequence[BarRow],
    *,
    fmt: Callable[[float], str],
    paired: bool = False,
    whole: bool = False,
    chart_id: str = "",
) -> Html:
    """A horizontal bar chart with an axis; ``paired`` draws each part as its own thinner bar, and
    ``whole`` keeps the axis on whole numbers (counts)."""
    height = AXIS_H + ROW_H * max(1, len(rows)) + 8
    plot_w = WIDTH - LABEL_W - RIGHT_W
    if paired:
        biggest = max((part.value for row in rows for part in row.parts), default=0.0)
    else:
        biggest = max((sum(part.value for part in row.parts) for row in rows), default=0.0)
    span = biggest if biggest > 0 else 1.0

    def scale(value: float) -> float:
        return LABEL_W + plot_w * max(0.0, value) / span

    shapes: list[Html] = []
    for index, row in enumerate(rows):
        y = AXIS_H + index * ROW_H
        parts: list[Html] = [
            el(
                "text",
                {"class": "lane-label", "x": 8, "y": y + ROW_H / 2 + 4},
                el("title", None, row.label),
                _short(row.label, 34),
            )
        ]
        offset = 0.0
        count = max(1, len(row.parts))
        for number, part in enumerate(row.parts):
            if paired:
                thickness = BAR_H / count
                bar_y = y + (ROW_H - BAR_H) / 2 + number * thickness
                x1, x2 = scale(0.0), scale(part.value)
            else:
                thickness = BAR_H
                bar_y = y + (ROW_H - BAR_H) / 2
                x1, x2 = scale(offset), scale(offset + part.value)
                offset += part.value
            if part.value <= 0:
                continue
            parts.append(
                el(
                    "rect",
                    {
                        "class": f"seg {part.css}",
                        "data-part": part.css,
                        "x": f"{x1:.1f}",
                        "y": f"{bar_y:.1f}",
                        "width": f"{max(1.0, x2 - x1):.1f}",
                        "height": f"{thickness:.1f}",
                    },
                    el("title", None, f"{row.label}: {part.label}"),
                )
            )
        end = max([scale(p.value) for p in row.parts] if paired else [scale(offset)])
        parts.append(
            el(
                "text",
                {"class": "lane-time", "x": f"{max(end, LABEL_W) + 6:.1f}", "y": y + ROW_H / 2 + 4},
                row.caption,
            )
        )
        shapes.append(el("g", {"class": "bar-row", "data-row": row.label}, parts))
    if not rows:
        shapes.append(
            el(
                "text",
                {"class": "empty", "x": LABEL_W, "y": AXIS_H + ROW_H / 2 + 4},
                "no calls in this window",
            )
        )
    return el(
        "figure",
        {"class": "chart", "id": chart_id or None},
        el("figcaption", None, title),
        el(
            "svg",
            {
                "class": "bars",
                "viewBox": f"0 0 {WIDTH} {height}",
                "width": WIDTH,
                "height": height,
                "role": "img",
                "aria-label": title,
            },
            _axis(scale, span, AXIS_H, height - 8, fmt, whole),
            join(shapes),
        ),
    )
