"""HTML and SVG built from code, with every value escaped on the way in.

Pages are assembled from :func:`el` calls: a ``str`` child or attribute value is always escaped,
and only :class:`Html` (what :func:`el` and :func:`text` return) passes through as markup, so a
question, an answer or a model name can never become a tag or an attribute. :func:`clean` also
turns control characters and lone surrogates into visible text, so hostile bytes show as what
they are instead of breaking the page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9:_-]*$")
# C0 controls except tab, newline and carriage return; DEL; C1 controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

#: Elements that have no closing tag.
_VOID = frozenset({"br", "hr", "img", "input", "link", "meta"})


class Html(str):
    """Markup that is already safe: produced by :func:`el`, :func:`text` or :func:`join` only."""

    __slots__ = ()


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: ␀ ␁ … ␟
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}"


def clean(value: object) -> str:
    """``value`` as text a page can show: lone surrogates become U+FFFD, control characters visible."""
    raw = str(value)
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raw = raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return _CONTROLS.sub(_visible, raw)


def text(value: object) -> Html:
    """``value`` escaped as element content."""
    return Html(html.escape(clean(value), quote=False))


def _attr_value(value: object) -> str:
    return html.escape(clean(value), quote=True)


#: What an element may contain: markup, values to escape, nothing, or (nested) lists of those.
Node = Html | str | int | float | None | Iterable["Node"]
Attrs = Mapping[str, object | None]


def el(tag: str, attrs: Attrs | None = None, *children: Node) -> Html:
    """One element: ``attrs`` (``None`` values and ``False`` left out, ``True`` as a bare name) and
    children (``Html`` kept, anything else escaped; iterables flattened)."""
    if not _NAME.match(tag):
        raise ValueError(f"bad element name {tag!r}")
    parts = [f"<{tag}"]
    for name, value in (attrs or {}).items():
        if value is None or value is False:
            continue
        if not _NAME.match(name):
            raise ValueError(f"bad attribute name {name!r}")
        parts.append(f" {name}" if value is True else f' {name}="{_attr_value(value)}"')
    parts.append(">")
    if tag in _VOID:
        return Html("".join(parts))
    parts.append(join(children))
    parts.append(f"</{tag}>")
    return Html("".join(parts))


def join(children: Iterable[Node]) -> Html:
    """Children as one piece of markup (``Html`` kept, anything else escaped, ``None`` skipped)."""
    out: list[str] = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, Html):
            out.append(child)
        elif isinstance(child, str | int | float):
            out.append(text(child))
        else:
            out.append(join(child))
    return Html("".join(out))
