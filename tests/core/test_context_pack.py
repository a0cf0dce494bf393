"""Packing files under a project root: ranges, caps, skip reasons, and no way out of the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ask_fable.core.context_pack import PackedFile, PackSpec, pack_paths, parse_spec, section_header


def _pack(root: Path, specs: list[str], max_chars: int = 100_000, max_files: int = 32,
          max_file_bytes: int = 1_000_000):
    return pack_paths(root, specs, max_chars=max_chars, max_files=max_files, max_file_bytes=max_file_bytes)


def _reasons(outcome) -> dict[str, str]:
    return {s.path: s.reason for s in outcome.skipped}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    (base / "src").mkdir(parents=True)
    (base / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (base / "README.md").write_text("# readme\nno trailing newline")
    return base


def test_parse_spec_forms() -> None:
    assert parse_spec("src/a.py") == PackSpec("src/a.py", "src/a.py")
    assert parse_spec("src/a.py:3-7") == PackSpec("src/a.py:3-7", "src/a.py", 3, 7)
    assert parse_spec("src/a.py:4") == PackSpec("src/a.py:4", "src/a.py", 4, 4)
    assert parse_spec("src/a.py:4-") == PackSpec("src/a.py:4-", "src/a.py", 4, None)
    assert parse_spec("C:notes.txt").path == "C:notes.txt"


def test_whole_files_and_ranges_in_order_with_headers(root: Path) -> None:
    out = _pack(root, ["src/app.py:3-5", "README.md", "src/app.py:9-"])
    assert [f.path for f in out.files] == ["src/app.py:3-5", "README.md", "src/app.py:9-10"]
    assert out.skipped == []
    assert out.text == (
        section_header("src/app.py", 3, 5) + "line 3\nline 4\nline 5\n" + "\n"
        + section_header("README.md") + "# readme\nno trailing newline\n" + "\n"
        + section_header("src/app.py", 9, 10) + "line 9\nline 10\n"
    )
    assert out.chars == len(out.text)
    assert out.files[0].lines == "3-5" and out.files[1].lines is None


def test_single_line_and_range_past_the_end(root: Path) -> None:
    out = _pack(root, ["src/app.py:7", "src/app.py:8-99", "src/app.py:11-12", "src/app.py:0-2",
                       "src/app.py:5-3"])
    assert [f.path for f in out.files] == ["src/app.py:7-7", "src/app.py:8-10"]
    assert _reasons(out) == {"src/app.py:11-12": "bad_range", "src/app.py:0-2": "bad_range",
                             "src/app.py:5-3": "bad_range"}


def test_never_escapes_the_root(root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("TOP SECRET")
    (root / "link_out").symlink_to(secret)
    (root / "dir_out").symlink_to(tmp_path)
    (root / "link_in").symlink_to(root / "README.md")
    out = _pack(root, ["../outside.txt", str(secret), "link_out", "dir_out/outside.txt",
                       "src/../../outside.txt", "link_in", str(root / "src" / "app.py:1-1"),
                       "src/../README.md:1"])
    assert "TOP SECRET" not in out.text
    reasons = _reasons(out)
    for spec in ("../outside.txt", str(secret), "link_out", "dir_out/outside.txt", "src/../../outside.txt"):
        assert reasons[spec] == "outside_root", spec
    # Inside the root, a symlink or an absolute path is fine and is reported by its real relative path.
    assert [f.path for f in out.files] == ["README.md", "src/app.py:1-1", "README.md:1-1"]


def test_missing_directories_fifos_and_binaries(root: Path) -> None:
    (root / "blob.bin").write_bytes(b"abc\x00def")
    os.mkfifo(root / "pipe")
    out = _pack(root, ["nope.py", "src", "pipe", "blob.bin", "blob.bin:1-1", "README.md"])
    assert _reasons(out) == {"nope.py": "not_found", "src": "not_a_file", "pipe": "not_a_file",
                             "blob.bin": "binary", "blob.bin:1-1": "binary"}
    assert [f.path for f in out.files] == ["README.md"]


def test_per_file_byte_cap_for_files_and_ranges(root: Path) -> None:
    big = root / "big.txt"
    big.write_text("".join(f"{n:04d}\n" for n in range(1000)))  # 5,000 bytes
    out = _pack(root, ["big.txt", "big.txt:1-300", "big.txt:900-901"], max_file_bytes=1000)
    assert _reasons(out) == {"big.txt": "too_large", "big.txt:1-300": "too_large"}
    assert out.files == [PackedFile(path="big.txt:900-901", lines="900-901", chars=len(out.text))]
    assert "0899\n0900\n" in out.text  # line 900 holds the number 899


def test_one_huge_line_is_not_buffered_whole(root: Path) -> None:
    (root / "min.js").write_bytes(b"x" * 300_000)
    out = _pack(root, ["min.js:1"], max_file_bytes=10_000)
    assert _reasons(out) == {"min.js:1": "too_large"}


def test_budget_skips_without_truncating_and_later_small_files_still_fit(root: Path) -> None:
    (root / "large.txt").write_text("L" * 500)
    (root / "small.txt").write_text("tiny\n")
    out = _pack(root, ["src/app.py", "large.txt", "small.txt"], max_chars=200)
    assert [f.path for f in out.files] == ["src/app.py", "small.txt"]
    assert _reasons(out) == {"large.txt": "over_budget"}
    assert "L" * 10 not in out.text
    assert "line 10\n" in out.text and "tiny\n" in out.text  # admitted files are whole
    assert out.chars == len(out.text) <= 200


def test_file_count_cap_and_duplicates(root: Path) -> None:
    for n in range(4):
        (root / f"f{n}.txt").write_text(f"file {n}\n")
    out = _pack(root, ["f0.txt", "f0.txt", "./f0.txt", "f1.txt", "f2.txt", "f3.txt"], max_files=2)
    assert [f.path for f in out.files] == ["f0.txt", "f1.txt"]
    assert _reasons(out) == {"f0.txt": "duplicate", "./f0.txt": "duplicate", "f2.txt": "too_many_files",
                             "f3.txt": "too_many_files"}


def test_a_file_really_named_with_a_colon_number(root: Path) -> None:
    (root / "odd:12").write_text("colon file\n")
    out = _pack(root, ["odd:12"])
    assert [f.path for f in out.files] == ["odd:12"] and "colon file" in out.text


def test_invalid_utf8_is_kept_as_text(root: Path) -> None:
    (root / "latin.txt").write_bytes("café\n".encode("latin-1"))
    out = _pack(root, ["latin.txt"])
    assert out.files and "caf" in out.text
