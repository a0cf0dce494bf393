"""Private directories, atomic writes and retention that only touches our own file names."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from ask_fable import files
from ask_fable.files import atomic_write_text, ensure_private_dir, prune_own_files


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_ensure_private_dir_creates_every_missing_level_0700(tmp_path: Path) -> None:
    os.umask(0o022)
    target = tmp_path / "a" / "b" / "c"
    assert ensure_private_dir(target) == target
    for level in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert _mode(level) == 0o700


def test_ensure_private_dir_leaves_existing_dirs_alone(tmp_path: Path) -> None:
    existing = tmp_path / "shared"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    ensure_private_dir(existing / "mine")
    assert _mode(existing) == 0o755
    assert _mode(existing / "mine") == 0o700


def test_atomic_write_text_writes_0600_and_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "state" / "out.md"
    atomic_write_text(target, "first")
    assert target.read_text() == "first"
    assert _mode(target) == 0o600
    assert _mode(target.parent) == 0o700
    atomic_write_text(target, "second ü")
    assert target.read_text(encoding="utf-8") == "second ü"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.md"]


def test_atomic_write_failure_keeps_old_content_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "d" / "keep.txt"
    atomic_write_text(target, "old")

    def boom(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in target.parent.iterdir()] == ["keep.txt"]


def test_prune_keeps_newest_of_our_shape_only(tmp_path: Path) -> None:
    tmp_path = ensure_private_dir(tmp_path / "answers")
    shape = re.compile(r"\d{4}-note\.md")
    for i in range(5):
        p = tmp_path / f"000{i}-note.md"
        p.write_text(str(i))
        os.utime(p, ns=(i * 10**9, i * 10**9))
    foreign = tmp_path / "user-notes.md"
    foreign.write_text("mine")
    os.utime(foreign, ns=(0, 0))
    deleted = prune_own_files(tmp_path, shape, keep=2)
    assert sorted(p.name for p in deleted) == ["0000-note.md", "0001-note.md", "0002-note.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0003-note.md", "0004-note.md", "user-notes.md"]


def test_prune_keep_zero_is_unlimited(tmp_path: Path) -> None:
    tmp_path = ensure_private_dir(tmp_path / "answers")
    for i in range(3):
        (tmp_path / f"000{i}-note.md").write_text("x")
    assert prune_own_files(tmp_path, r"\d{4}-note\.md", keep=0) == []
    assert len(list(tmp_path.iterdir())) == 3


def test_prune_missing_directory_is_empty(tmp_path: Path) -> None:
    assert prune_own_files(tmp_path / "nope", r".*", keep=1) == []
