"""The suite's own safety net: a test that hangs fails with its stack instead of holding the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HANGING = '''
import time


def test_hangs():
    time.sleep(3600)


def test_after_it():
    pass
'''


def test_a_hanging_test_fails_with_its_stack_after_the_suite_timeout_and_the_run_goes_on(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    configured = float(pytestconfig.getini("timeout"))
    assert 0 < configured <= 600, "pyproject.toml sets the seconds a test may take"
    (tmp_path / "test_hanging.py").write_text(HANGING)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "timeout=2", "test_hanging.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout, done.stdout
    assert "Timeout" in done.stdout and "time.sleep(3600)" in done.stdout, done.stdout
