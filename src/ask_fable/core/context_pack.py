"""Packing project files into one context bundle, without ever leaving the project root.

A spec is a path relative to the root (``src/app.py``), optionally with a 1-based inclusive line
range (``src/app.py:40-120``, ``src/app.py:40`` for one line, ``src/app.py:40-`` to the end).
Each admitted spec becomes one section under a header naming its path and range. Nothing is
truncated: a spec that does not fit is reported in ``skipped`` with a reason:

    outside_root    the path (``..``, absolute, or a symlink) resolves outside the root
    not_found       nothing exists there
    not_a_file      a directory, FIFO, socket or device
    too_large       the file (or the collected range) exceeds the per-file byte cap
    binary          the bytes contain NUL: not text
    bad_range       the range is malformed or starts past the end of the file
    unreadable      the file exists but could not be read
    duplicate       the same spec was given twice
    too_many_files  the file-count cap was already reached
    over_budget     the section would not fit in the remaining character budget
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ask_fable.contract import Strict

_RANGE_RE = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:(?P<dash>-)(?P<end>\d+)?)?$")
#: Bytes read at a time while collecting a line range or a whole file.
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class PackSpec:
    """One requested path, with an optional inclusive 1-based line range."""

    raw: str
    path: str
    start: int | None = None
    end: int | None = None

    @property
    def ranged(self) -> bool:
        """Whether a line range was asked for."""
        return self.start is not None


class PackedFile(Strict):
    """One section of a packed bundle."""

    path: str
    lines: str | None = None
    chars: int


class SkippedPath(Strict):
    """A requested path left out of a bundle, and why."""

    path: str
    reason: str
    detail: str | None = None


@dataclass
class PackOutcome:
    """The bundle text plus what went in and what was left out (and why)."""

    text: str = ""
    files: list[PackedFile] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)
    chars: int = 0
    max_chars: int = 0


class _Skip(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def parse_spec(raw: str) -> PackSpec:
    """Split ``path[:START[-[END]]]``; a ``:`` not followed by a line number stays in the path."""
    text = raw.strip()
    match = _RANGE_RE.match(text)
    if match is None:
        return PackSpec(raw=raw, path=text)
    start = int(match["start"])
    if match["dash"] is None:
        end: int | None = start
    else:
        end = int(match["end"]) if match["end"] is not None else None
    return PackSpec(raw=raw, path=match["path"], start=start, end=end)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_inside(root: Path, relative: str) -> Path:
    """The real path of ``relative`` under ``root``; :class:`_Skip` ``outside_root`` if it escapes.

    ``..``, absolute paths and symlinks are all judged by where they finally resolve.
    """
    if not relative or "\x00" in relative:
        raise _Skip("not_found", "empty or invalid path")
    candidate = root / relative  # an absolute ``relative`` replaces root here
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise _Skip("not_found", f"cannot resolve: {type(exc).__name__}") from exc
    if not _inside(resolved, root):
        raise _Skip("outside_root", "resolves outside the project root")
    return resolved


def _open_regular(path: Path, root: Path) -> tuple[int, int]:
    """Open ``path`` read-only without following a final symlink; returns ``(fd, size)``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise _Skip("not_found", "no such file") from exc
    except IsADirectoryError as exc:
        raise _Skip("not_a_file", "a directory") from exc
    except OSError as exc:
        if not path.exists() and not path.is_symlink():
            raise _Skip("not_found", "no such file") from exc
        # ELOOP: the final component became a symlink after it was resolved.
        raise _Skip("unreadable", f"cannot open ({exc.strerror or type(exc).__name__})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise _Skip("not_a_file", kind)
        # A parent directory swapped for a symlink between resolve() and open() is caught here.
        with contextlib.suppress(OSError):
            real = Path(os.readlink(f"/proc/self/fd/{fd}"))
            if real.is_absolute() and not _inside(real, root):
                raise _Skip("outside_root", "resolves outside the project root")
        return fd, info.st_size
    except BaseException:
        os.close(fd)
        raise


def _read_whole(fd: int, size: int, max_bytes: int) -> bytes:
    if size > max_bytes:
        raise _Skip("too_large", f"{size} bytes; the per-file cap is {max_bytes}")
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > max_bytes:  # the file grew while we read it
            raise _Skip("too_large", f"over {max_bytes} bytes; the per-file cap is {max_bytes}")
        chunks.append(chunk)
    return b"".join(chunks)


def _read_range(fd: int, start: int, end: int | None, max_bytes: int) -> tuple[bytes, int, int]:
    """Lines ``start..end`` (inclusive, 1-based) → ``(bytes, first, last)``, streaming the file."""
    collected: list[bytes] = []
    size = 0
    line_no = 0
    pending = b""
    last = start - 1
    done = False
    while not done:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            lines = [pending] if pending else []
            pending = b""
            done = True
        else:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            lines = [line + b"\n" for line in lines]
        for line in lines:
            line_no += 1
            if line_no < start:
                continue
            if end is not None and line_no > end:
                done = True
                break
            if b"\x00" in line:
                raise _Skip("binary", "contains NUL bytes")
            size += len(line)
            if size > max_bytes:
                raise _Skip("too_large", f"the range exceeds the per-file cap of {max_bytes} bytes")
            collected.append(line)
            last = line_no
        if not done and len(pending) > max_bytes:
            # One enormous line: stop rather than buffer it all.
            raise _Skip("too_large", f"a single line exceeds the per-file cap of {max_bytes} bytes")
    if last < start:
        raise _Skip("bad_range", f"the file has {line_no} lines; the range starts at line {start}")
    return b"".join(collected), start, last


def _names_a_file(root: Path, text: str) -> bool:
    try:
        return resolve_inside(root, text).is_file()
    except (_Skip, OSError):
        return False


def _label(relative: str, first: int | None, last: int | None) -> str:
    return relative if first is None else f"{relative}:{first}-{last}"


def section_header(relative: str, first: int | None = None, last: int | None = None) -> str:
    """The header line that opens one file's section of a bundle."""
    where = f" (lines {first}-{last})" if first is not None else ""
    return f"### file: {relative}{where}\n"


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() or "."


def pack_paths(
    root: str | os.PathLike[str],
    specs: list[str],
    *,
    max_chars: int,
    max_files: int,
    max_file_bytes: int,
) -> PackOutcome:
    """Read ``specs`` under ``root`` into one bundle within the caps; never reads outside ``root``.

    Sections keep the order of ``specs``. A spec that does not fit the remaining character budget
    is skipped (``over_budget``) and later, smaller ones may still go in.
    """
    base = Path(root).expanduser().resolve()
    outcome = PackOutcome(max_chars=max_chars)
    sections: list[str] = []
    seen: set[tuple[Path, int | None, int | None]] = set()
    for raw in specs:
        spec = parse_spec(str(raw))
        try:
            if spec.ranged and _names_a_file(base, spec.raw.strip()):
                spec = PackSpec(raw=spec.raw, path=spec.raw.strip())  # a file really named "x:12"
            start, end = spec.start, spec.end
            if start is not None and (start < 1 or (end is not None and end < start)):
                raise _Skip("bad_range", "ranges are 1-based and START must not exceed END")
            path = resolve_inside(base, spec.path)
            if (path, start, end) in seen:
                raise _Skip("duplicate", "already packed")
            if len(outcome.files) >= max_files:
                raise _Skip("too_many_files", f"the cap is {max_files} files")
            fd, size = _open_regular(path, base)
            try:
                if start is not None:
                    data, first, last = _read_range(fd, start, end, max_file_bytes)
                else:
                    data, first, last = _read_whole(fd, size, max_file_bytes), None, None
            finally:
                os.close(fd)
            if b"\x00" in data:
                raise _Skip("binary", "contains NUL bytes")
            body = data.decode("utf-8", errors="replace")
            relative = _relative(path, base)
            section = section_header(relative, first, last) + body
            if not section.endswith("\n"):
                section += "\n"
            separator = 1 if sections else 0
            cost = len(section) + separator
            if outcome.chars + cost > max_chars:
                raise _Skip(
                    "over_budget",
                    f"needs {len(section)} characters; {max(0, max_chars - outcome.chars - separator)} "
                    f"of {max_chars} left",
                )
        except _Skip as skip:
            outcome.skipped.append(SkippedPath(path=str(raw), reason=skip.reason, detail=skip.detail))
            continue
        seen.add((path, start, end))
        sections.append(section)
        outcome.chars += cost
        lines = None if first is None else f"{first}-{last}"
        outcome.files.append(PackedFile(path=_label(relative, first, last), lines=lines, chars=len(section)))
    outcome.text = "\n".join(sections)
    return outcome
