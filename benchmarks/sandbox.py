"""A benchmark's own home: ask-fable's state and config in a temporary folder, removed afterwards, so
a run never reads or writes the user's."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


def home_env(folder: str) -> dict[str, str]:
    """The variables that put ask-fable's state and config under ``folder``, its notices quiet."""
    return {"HOME": folder, "XDG_STATE_HOME": f"{folder}/state", "XDG_CONFIG_HOME": f"{folder}/config",
            "ASK_FABLE_QUIET": "1"}


@contextmanager
def throwaway_home() -> Iterator[str]:
    """A temporary folder made this process's home (:func:`home_env`) for the block; removed after."""
    with tempfile.TemporaryDirectory(prefix="ask-fable-bench-") as folder:
        os.environ.update(home_env(folder))
        yield folder
