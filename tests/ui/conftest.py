"""Fixtures of the web view's tests: the recorded calls (made once per run), a running
``ask-fable ui`` over them, and a headless Chromium logged in to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui import browser
from tests.ui.recorded import Recorded, record
from tests.ui.server import ask_fable_ui


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """The traces of real calls (see ``recorded.py``), under a home of their own."""
    return record(tmp_path_factory.mktemp("ui-home"))


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where page screenshots are written for a person to look at (pytest's temporary directory)."""
    return tmp_path_factory.mktemp("ui-screenshots", numbered=False)


@pytest.fixture(scope="module")
def ui_address(recorded: Recorded) -> Iterator[str]:
    """``ask-fable ui`` serving the recorded traces: the address it printed (with its token)."""
    with ask_fable_ui(recorded.env) as (address, _):
        yield address


@pytest.fixture(scope="module")
def page(ui_address: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Chromium that opened the printed address (so it is logged in); skips without Chromium."""
    browser.require()
    with browser.chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        driver.get(ui_address)
        browser.console_errors(driver)
        yield driver
