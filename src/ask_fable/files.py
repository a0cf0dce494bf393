"""Private directories, atomic whole-file writes, and retention limited to our own file names.

Every file ask-fable writes outside SQLite goes through here: directories are created ``0700``,
files ``0600``, and a whole-file write is ``temp file → fsync → os.replace → fsync(dir)`` so a
crash leaves either the old file or the new one, never a partial one.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and any missing parents; every directory created here ends up ``0700``.

    Directories that already existed keep their mode (the user may have chosen it).
    """
    target = Path(path).expanduser()
    missing: list[Path] = []
    probe = target
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    target.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    # mkdir -p creates intermediate parents with the umask's mode, so fix each one explicitly.
    for created in missing:
        with contextlib.suppress(OSError):
            os.chmod(created, DIR_MODE)
    return target


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Flush a directory entry change (a rename or a new file) to disk; best effort."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Replace ``path`` with ``data`` atomically; the file is ``0600`` and its directory ``0700``."""
    target = Path(path).expanduser()
    ensure_private_dir(target.parent)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), FILE_MODE)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_dir(target.parent)
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Replace ``path`` with ``text`` (UTF-8) atomically; the file is ``0600``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def prune_own_files(
    directory: str | os.PathLike[str], name_regex: str | re.Pattern[str], keep: int
) -> list[Path]:
    """Delete the oldest files whose whole name matches ``name_regex``, keeping the newest ``keep``.

    ``keep=0`` means unlimited (nothing is deleted). Files of any other name shape are never
    touched, so a shared directory is safe. Newest is by modification time, then by name.
    Returns the paths deleted; a file another process removed first is skipped silently.
    """
    if keep <= 0:
        return []
    pattern = re.compile(name_regex) if isinstance(name_regex, str) else name_regex
    base = Path(directory).expanduser()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    ours: list[tuple[int, str, Path]] = []
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            ours.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, Path(entry.path)))
        except OSError:
            continue
    ours.sort(reverse=True)
    deleted: list[Path] = []
    for _mtime, _name, victim in ours[keep:]:
        try:
            victim.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue
        deleted.append(victim)
    return deleted
