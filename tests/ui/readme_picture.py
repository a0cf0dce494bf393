"""Take the README's picture of a council's timeline from a real page:
``python -m tests.ui.readme_picture`` (needs Chromium; writes ``images/screenshots/ui-council-timeline.png``).

It makes the same real calls as the web view's tests, serves them with ``ask-fable ui`` and pictures
the trace page's summary and timeline in headless Chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.ui import browser
from tests.ui.recorded import record
from tests.ui.server import ask_fable_ui

TARGET = Path(__file__).resolve().parents[2] / "images" / "screenshots" / "ui-council-timeline.png"


def main() -> int:
    """Record, serve, picture; 1 when Chromium is missing."""
    reason = browser.missing()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        recorded = record(Path(scratch) / "home")
        profile = Path(scratch) / "profile"
        with ask_fable_ui(recorded.env) as (address, _), browser.chromium(profile) as driver:
            driver.get(address)
            driver.get(f"{address.split('/ui/', 1)[0]}/ui/traces/{recorded.ids['council']}")
            driver.set_window_size(1180, 1400)
            driver.find_element("css selector", "#timeline").screenshot(str(TARGET))
    print(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
