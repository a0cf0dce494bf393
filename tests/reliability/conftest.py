"""Fixtures of the reliability tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.fake_cli import FakeCLIs, install_fake_clis


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    """A fake mmx that forks a child holding its pipes, then sleeps for a minute."""
    handle = install_fake_clis(tmp_path / "bin", names=["mmx"])
    handle.behave("mmx", sleep=60, spawn_child=True)
    return handle
