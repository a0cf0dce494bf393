"""Reading and rewriting a client's config file without losing it.

A config file may be a link into a dotfiles checkout: it is read and written through to the file it
points at, so the link stays a link. Before a change the previous content is saved as a timestamped
backup next to the path the client reads (not inside the dotfiles checkout, where it could be
committed along with any keys it holds); only the newest :data:`BACKUPS_KEPT` are kept. A file that
changes between our read and our write (a running client saving its own state) is not overwritten.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

BACKUPS_KEPT = 3


class ConfigFileError(Exception):
    """A client config file could not be read, understood or written; ``detail`` says which and why."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def real_path(path: Path) -> Path:
    """The file ``path`` names once every link on the way is followed (``path`` itself if none)."""
    return Path(os.path.realpath(path))


def read_bytes(target: Path) -> bytes | None:
    """The file's content, or ``None`` when it does not exist yet."""
    try:
        return target.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigFileError(f"cannot read {target}: {_reason(exc)}") from exc


#: What some editors (Notepad, older Visual Studio) put before UTF-8 text.
BOM = b"\xef\xbb\xbf"


def decode(target: Path, data: bytes | None) -> str:
    """``data`` as UTF-8 text (empty for a missing file) with LF line ends, without a leading byte
    order mark (:func:`replace` writes both back as the file had them)."""
    if data is None:
        return ""
    try:
        return data.removeprefix(BOM).decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{target} is not UTF-8 text; fix it first") from exc


def backup_pattern(path: Path) -> re.Pattern[str]:
    """File names of the backups :func:`replace` keeps next to ``path``."""
    return re.compile(re.escape(path.name) + r"\.\d{8}T\d{12}Z\.bak")


def _backup(path: Path, data: bytes) -> Path:
    from ask_fable.files import atomic_write_bytes, prune_own_files

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    atomic_write_bytes(backup, data)
    prune_own_files(path.parent, backup_pattern(path), BACKUPS_KEPT)
    return backup


def replace(path: Path, target: Path, read: bytes | None, text: str) -> tuple[bool, Path | None]:
    """Write ``text`` to ``target`` (the real file behind ``path``) if it still holds ``read``.

    Returns ``(written, backup)``: ``written`` is false when the file changed since it was read, so
    the caller can merge again from the new content. The previous content, unless blank, is backed up
    first; a byte order mark it started with and its CRLF line ends (a file saved on Windows) are kept.
    """
    from ask_fable.files import atomic_write_text

    if read_bytes(target) != read:
        return False, None
    backup = None
    if read is not None and read.removeprefix(BOM).strip():  # a blank file holds nothing to restore
        try:
            backup = _backup(path, read)
        except OSError as exc:
            raise ConfigFileError(f"cannot save a backup next to {path}: {_reason(exc)}") from exc
    try:
        if read and b"\r\n" in read:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        atomic_write_text(target, ("\ufeff" if read and read.startswith(BOM) else "") + text)
    except OSError as exc:
        raise ConfigFileError(f"cannot write {target}: {_reason(exc)}") from exc
    return True, backup
