"""The web view's one style sheet, served as a file so the Content-Security-Policy needs no inline style.

Outcome colours live here only, as ``o-<outcome>`` classes shared by the timeline, the charts and
the status badges (see ``timeline.OUTCOME_LABELS``).
"""

from __future__ import annotations

import hashlib

#: Outcome → colour; the timeline's, the charts' and the badges' single source.
COLOURS: dict[str, str] = {
    "ok": "#2f9e5a",
    "refused": "#7d5bbd",
    "error": "#d9453b",
    "timeout": "#e8891c",
    "cut": "#9c4f0a",
    "straggler": "#c46a2b",
    "config": "#9aa0a6",
    "shed": "#5f7d95",
    "retried": "#f2c12e",
    "wait": "#d5d9de",
    "cached": "#2a9bb5",
    "unfinished": "#b8bcc2",
    "needs": "#c9a227",
    "cancelled": "#6b7280",
    "p50": "#3b6fd1",
    "p95": "#9db8ec",
    "cost": "#8a6d3b",
    "other": "#9aa0a6",
}

_BASE = """
:root { color-scheme: light; --ink: #1d2733; --muted: #5b6673; --line: #dde2e7; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); }
header { display: flex; gap: 24px; align-items: center; padding: 10px 24px;
  border-bottom: 1px solid var(--line); background: var(--panel); }
header .brand { font-weight: 700; color: var(--ink); text-decoration: none; }
header nav a { margin-right: 16px; color: var(--muted); text-decoration: none; }
header nav a.here { color: var(--ink); font-weight: 600; border-bottom: 2px solid var(--ink); }
header .who { margin-left: auto; color: var(--muted); display: flex; gap: 10px; align-items: center; }
header .who form { margin: 0; }
main { padding: 16px 24px 48px; max-width: 1280px; }
h1 { font-size: 20px; margin: 8px 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
a { color: #1f5fbf; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { background: var(--panel); border: 1px solid var(--line); padding: 12px; white-space: pre-wrap;
  overflow-wrap: anywhere; max-height: 640px; overflow: auto; }
form.filters { display: flex; flex-wrap: wrap; gap: 10px 14px; align-items: end; margin-bottom: 14px;
  padding: 12px; background: var(--panel); border: 1px solid var(--line); }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 3px; }
input, select, button { font: inherit; padding: 4px 6px; }
button { cursor: pointer; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px; }
.problems { color: #8a1f17; background: #fdecea; border: 1px solid #f5c2bd; padding: 8px 12px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.pager { display: flex; gap: 16px; margin-top: 12px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 8px 0; color: var(--muted); font-size: 12px;
  padding: 0; list-style: none; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px;
  vertical-align: -1px; }
.legend .swatch.diamond { width: 9px; height: 9px; border-radius: 0; transform: rotate(45deg);
  margin: 0 7px 0 2px; }
.why { border-left: 4px solid var(--line); padding: 4px 12px; margin: 12px 0; background: var(--panel); }
.why.o-error { border-left-color: #d9453b; }
.why p { margin: 4px 0; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.wide { overflow-x: auto; }
svg { max-width: 100%; height: auto; font: 12px system-ui, sans-serif; }
svg .grid { stroke: var(--line); }
svg .tick { fill: var(--muted); font-size: 11px; }
svg .stripe { fill: #fafbfc; }
svg .lane-label { fill: var(--ink); }
svg .lane-label.call, svg .lane-label.mode { font-weight: 600; }
svg .lane-time { fill: var(--muted); font-size: 11px; }
svg .mark { stroke: #fff; stroke-width: 1; }
svg .empty { fill: var(--muted); }
svg rect.o-cut, svg rect.o-straggler { stroke: #5a2d05; stroke-width: 1; stroke-dasharray: 3 2; }
figure.chart { margin: 12px 0 20px; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; }
.login { max-width: 420px; margin: 48px auto; padding: 24px; border: 1px solid var(--line);
  background: var(--panel); }
.login label { display: block; margin: 12px 0 4px; }
.login input { width: 100%; }
.login button { margin-top: 14px; }
"""


def _outcome_rules() -> str:
    rules = []
    for name, colour in COLOURS.items():
        rules.append(f".o-{name} {{ fill: {colour}; }}")
        rules.append(f".badge.o-{name}, .swatch.o-{name} {{ background: {colour}; }}")
    return "\n".join(rules) + "\n"


STYLESHEET = (_BASE + _outcome_rules()).encode("utf-8")
#: Part of the style sheet's URL, so a browser never keeps an old one after an upgrade.
STYLESHEET_VERSION = hashlib.sha256(STYLESHEET).hexdigest()[:12]
