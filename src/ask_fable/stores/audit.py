"""The JSONL audit log: one line per call, safe with several processes appending at once.

Each record is written with a single ``os.write`` on an ``O_APPEND`` descriptor, so lines from
concurrent writers never interleave. Writers hold a shared ``flock`` on ``<file>.lock`` while
they write; rotation takes it exclusively, so no line lands in a segment that is being renamed
or discarded. Rotated segments are ``<stem>.<UTC timestamp>.<seq><suffix>`` beside the active
file (``decisions.20261202T085300123456Z.0.jsonl``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ask_fable.files import FILE_MODE, ensure_private_dir
from ask_fable.redact import SecretSource, redacted_json_all, secret_list

if TYPE_CHECKING:
    from ask_fable.config import Settings

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
#: Rotated segments may hold records stamped slightly after the rotation time (clock skew
#: between processes); a segment is skipped for ``since_ts`` only beyond this margin.
_SKEW_S = 60.0


class AuditLog:
    """Append-only JSONL log with size rotation and optional retention of rotated segments."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_bytes: int,
        backups: int | None = None,
        *,
        secrets: SecretSource = (),
    ) -> None:
        self.path = Path(path).expanduser()
        self.max_bytes = max_bytes
        self.backups = backups
        self._secrets = secret_list(secrets)
        stem, suffix = self.path.stem, self.path.suffix
        self._segment_re = re.compile(
            rf"{re.escape(stem)}\.(\d{{8}}T\d{{12}}Z)\.(\d+){re.escape(suffix)}"
        )
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    # --- writing --------------------------------------------------------------------------------
    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one JSON line (secrets redacted), rotating first if the file is full."""
        self.append_many([record])

    def append_many(self, records: Sequence[dict[str, Any]]) -> None:
        """Write ``records`` as JSON lines (secrets redacted) in one ``os.write``, rotating first if
        the file is full; the lines of other writers never land between them."""
        if not records:
            return
        lines = redacted_json_all(records, self._secrets, separators=(",", ":"))
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        lock_fd = self._open_lock()
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_SH)
            fd = self._open_active()
            try:
                if self._full(fd, len(data)):
                    os.close(fd)
                    fd = -1
                    # flock converts shared → exclusive by dropping then re-taking: re-check after.
                    fcntl.flock(lock_fd, fcntl.LOCK_EX)
                    fd = self._open_active()
                    if self._full(fd, len(data)):
                        os.close(fd)
                        fd = -1
                        self._rotate()
                        fd = self._open_active()
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                if fd >= 0:
                    os.close(fd)
        finally:
            os.close(lock_fd)  # releases the flock

    def _open_lock(self) -> int:
        """The lock file's descriptor; the log's directory is created (private) only when missing."""
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        try:
            return os.open(self._lock_path, flags, FILE_MODE)
        except FileNotFoundError:
            ensure_private_dir(self.path.parent)
            return os.open(self._lock_path, flags, FILE_MODE)

    def _open_active(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)

    def _full(self, fd: int, incoming: int) -> bool:
        size = os.fstat(fd).st_size
        return size > 0 and size + incoming > self.max_bytes

    def _rotate(self) -> None:
        """Move the active file aside (caller holds the exclusive lock)."""
        if self.backups == 0:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        stamp = datetime.now(UTC).strftime(_TS_FORMAT)
        seq = 0
        while True:
            target = self.path.with_name(f"{self.path.stem}.{stamp}.{seq}{self.path.suffix}")
            if not target.exists():
                break
            seq += 1
        try:
            os.rename(self.path, target)
        except FileNotFoundError:
            return
        if self.backups is not None:
            self._prune(self.backups)

    def _prune(self, keep: int) -> None:
        segments = self.segments()
        for victim in segments[: max(0, len(segments) - keep)]:
            with contextlib.suppress(FileNotFoundError):
                victim.unlink()

    # --- reading --------------------------------------------------------------------------------
    def segments(self) -> list[Path]:
        """Rotated segments of this log, oldest first (only files of our own name shape)."""
        found: list[tuple[str, int, Path]] = []
        try:
            names = os.listdir(self.path.parent)
        except OSError:
            return []
        for name in names:
            match = self._segment_re.fullmatch(name)
            if match:
                found.append((match.group(1), int(match.group(2)), self.path.parent / name))
        found.sort()
        return [path for _stamp, _seq, path in found]

    def files(self) -> list[Path]:
        """Every file holding records, oldest first: rotated segments then the active file."""
        out = self.segments()
        if self.path.exists():
            out.append(self.path)
        return out

    def iter_records(self, since_ts: float | None = None) -> Iterator[dict[str, Any]]:
        """Every record (rotated segments included), oldest first; torn or garbage lines are skipped.

        With ``since_ts`` only records whose ``ts`` is at or after it are yielded, and segments
        rotated before it are not read at all.
        """
        for path in self.files():
            if since_ts is not None and path != self.path:
                match = self._segment_re.fullmatch(path.name)
                if match:
                    rotated = datetime.strptime(match.group(1), _TS_FORMAT).replace(tzinfo=UTC)
                    if rotated.timestamp() + _SKEW_S < since_ts:
                        continue
            yield from _read_lines(path, since_ts)


# Only a leading top-level "ts" is trusted for skipping; anything else is parsed in full.
_TS_RE = re.compile(rb'\{\s*"ts"\s*:\s*(-?[0-9][0-9.eE+-]*)')
_CHUNK = 1000


def _read_lines(path: Path, since_ts: float | None) -> Iterator[dict[str, Any]]:
    """Parse one JSONL file, a chunk of lines per ``json.loads`` call (garbage-tolerant).

    With ``since_ts``, lines whose ``"ts"`` is visibly older are skipped before parsing.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in finally, generator-friendly
    except OSError:
        return
    ts_match = _TS_RE.match
    chunk: list[bytes] = []
    try:
        for raw in handle:
            if not raw.endswith(b"\n"):
                continue  # an incomplete tail
            if since_ts is not None:
                found = ts_match(raw)
                if found is not None:
                    try:
                        if float(found.group(1)) < since_ts:
                            continue
                    except ValueError:
                        pass
            chunk.append(raw)
            if len(chunk) >= _CHUNK:
                yield from parse_lines(chunk, since_ts)
                chunk = []
        if chunk:
            yield from parse_lines(chunk, since_ts)
    finally:
        handle.close()


def parse_lines(lines: list[bytes], since_ts: float | None = None) -> list[dict[str, Any]]:
    """Records from complete JSONL lines (garbage skipped), many lines per ``json.loads`` call."""
    lines = [raw for raw in lines if raw.strip()]
    if len(lines) > _CHUNK:
        out_all: list[dict[str, Any]] = []
        for start in range(0, len(lines), _CHUNK):
            out_all.extend(parse_lines(lines[start : start + _CHUNK], since_ts))
        return out_all
    try:
        parsed = json.loads(b"[" + b",".join(lines) + b"]") if lines else []
        if len(parsed) != len(lines):
            raise ValueError("line count mismatch")
    except ValueError:
        parsed = []
        for raw in lines:
            try:
                parsed.append(json.loads(raw))
            except ValueError:
                continue
    out = []
    for record in parsed:
        if not isinstance(record, dict):
            continue
        if since_ts is not None:
            ts = record.get("ts")
            if not isinstance(ts, int | float) or ts < since_ts:
                continue
        out.append(record)
    return out


def audit_log_for(settings: Settings) -> AuditLog:
    """The audit log configured by ``settings`` (path, rotation size, backups, secrets)."""
    return AuditLog(
        settings.audit_file, settings.audit_max_bytes, settings.audit_backups, secrets=settings
    )
