"""Run the project's strict type check on a probe file, as CI runs it over ``src/``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def type_check(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    """mypy's report and exit status for ``source`` (saved as ``probe.py``), with the project's config."""
    from mypy import api

    probe = tmp_path / "probe.py"
    probe.write_text(source)
    monkeypatch.setenv("MYPYPATH", str(ROOT / "src"))
    out, _, status = api.run([str(probe), "--config-file", str(ROOT / "pyproject.toml")])
    return out, status
