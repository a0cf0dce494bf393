"""A real headless Chromium for page tests: Debian's ``chromium`` driven by its ``chromium-driver``
through selenium, with nothing downloaded at run time. Tests skip, saying why, where it is absent."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
WIDTH = 1400


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    path = Path("/usr/bin") / name
    return str(path) if path.exists() else None


def missing() -> str | None:
    """Why no headless Chromium can run here, or ``None`` when one can."""
    if _binary("chromium") is None:
        return "Chromium is not installed (apt-get install chromium chromium-driver)"
    if _binary("chromedriver") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


def require() -> None:
    """Skip the calling test, with the reason, when Chromium cannot run here."""
    reason = missing()
    if reason is not None:
        pytest.skip(reason)


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium with a fresh profile in ``profile``, its console log kept; quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(_binary("chromium"))
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=str(_binary("chromedriver")))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: Any) -> list[str]:
    """Console messages at error level since the last call (CSP violations and failed loads among them)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def screenshot(driver: Any, path: Path) -> Path:
    """A picture of the whole page (the window stretched to the page's height) written to ``path``."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(WIDTH, min(max(height + 40, 600), 8000))
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
    driver.set_window_size(WIDTH, 1000)
    return path


def wait_for_path(driver: Any, path: str, timeout: float = 10.0) -> None:
    """Wait until the browser has navigated to a page whose address ends with ``path``."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.current_url.endswith(path))
