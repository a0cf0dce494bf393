"""The settings a team's servers run with, read once by a command: the saved ones included.

With ``database_url`` set, what the ``configure_*`` tools saved to the shared database ranks above
the config file and the environment (``stores/saved_settings.py``), and every server applies it. A
command that shows or acts on settings (``doctor``, ``db settings``) must show those, not the file's
and environment's alone: :func:`settings_in_force` reads the saved ones once (no listener, the
command ends soon) and tells, for each, who saved it, when, whether it is in force, and which
different value from the config file or the environment it hides.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ask_fable.config import SAVED_SOURCE, Settings, load_settings
from ask_fable.config_sources import shown
from ask_fable.contract import HiddenValue, SavedSetting
from ask_fable.stores.saved_settings import SavedEntry

if TYPE_CHECKING:
    from ask_fable.errors import AskFableError


@dataclass(frozen=True)
class SavedValue:
    """One saved setting as a command reports it."""

    entry: SavedEntry
    #: False when the saved value does not validate (a settings problem says why and what is used).
    in_force: bool
    #: ``(where, value shown)`` of the different config-file or environment value it hides, if any.
    hides: tuple[str, str] | None

    @property
    def name(self) -> str:
        """The setting's field name."""
        return self.entry.name

    def shown(self) -> SavedSetting:
        """This saved setting as reports show it (a secret is never shown; none of the saved settings
        is one today)."""
        from ask_fable.config_sources import is_secret

        entry = self.entry
        return SavedSetting(
            setting=entry.name,
            value="set, not shown" if is_secret(entry.name) else entry.value,
            saved_by=entry.tenant,
            saved_at=datetime.fromtimestamp(entry.saved_at, UTC).isoformat(timespec="seconds"),
            in_force=self.in_force,
            shadows=None if self.hides is None else HiddenValue(source=self.hides[0], value=self.hides[1]),
        )

    def line(self) -> str:
        """One line: the value, who saved it and when, and what it hides."""
        from ask_fable.clock import local_time

        entry = self.entry
        text = (f"{entry.name} = {shown(entry.name, entry.value)}  (saved by tenant {entry.tenant!r}, "
                f"{local_time(entry.saved_at)})")
        if not self.in_force:
            text += "; not in force: see the settings problem above"
        if self.hides is not None:
            text += f"; hides {self.hides[1]} from {self.hides[0]}"
        return text


@dataclass(frozen=True)
class SettingsInForce:
    """The settings a command works with, and what the shared database contributed to them."""

    settings: Settings
    #: Whether the settings come with a shared database's saved settings (``database_url`` set).
    shared: bool
    saved: list[SavedValue]
    #: Why the saved settings could not be read (the settings are then the file's and environment's).
    error: AskFableError | None = None

    @property
    def unread(self) -> str | None:
        """What kept the saved settings from being read, in one phrase; None when they were read."""
        return None if self.error is None else self.error.detail


def read_saved_entries(settings: Settings) -> list[SavedEntry]:
    """Every saved setting of ``settings``' shared database (raises ``AskFableError`` when it cannot
    be read: ``unavailable``, ``not_configured`` without the driver)."""
    from ask_fable.stores.db import database_for
    from ask_fable.stores.saved_settings import SettingsStore

    store = SettingsStore(database_for(settings, "settings", None))
    try:
        return store.entries()
    finally:
        store.close()


def _known(settings: Settings, name: str) -> bool:
    """Whether ``name`` is a setting (a top-level one or a registered backend's)."""
    try:
        settings.value_of(name)
    except KeyError:
        return False
    return True


def settings_in_force(running: Settings | None = None) -> SettingsInForce:
    """The settings every server on this configuration runs with (see the module docstring); a
    database that cannot be read leaves the file's and environment's, with ``unread`` saying why.

    ``running`` is a server's own settings, the saved ones already applied (``diagnose``): the saved
    values are then told against those; without it (a command) the settings are read here."""
    from ask_fable.backends.registry import registered
    from ask_fable.errors import AskFableError

    registered()  # every backend's settings are known before the saved ones are told against them
    shared_by = running or load_settings()
    if not shared_by.database_url:
        return SettingsInForce(shared_by, shared=False, saved=[])
    try:
        entries = read_saved_entries(shared_by)
    except AskFableError as exc:
        return SettingsInForce(shared_by, shared=True, saved=[], error=exc)
    base = load_settings() if running is not None else shared_by
    if not entries:
        return SettingsInForce(running or base, shared=True, saved=[])
    settings = running or load_settings(saved={entry.name: entry.value for entry in entries})
    saved = []
    for entry in entries:
        in_force = settings.origin(entry.name) == SAVED_SOURCE
        hand_set = base.origin(entry.name) if _known(base, entry.name) else None
        hides = None
        if hand_set is not None and base.value_of(entry.name) != settings.value_of(entry.name):
            hides = (hand_set, shown(entry.name, base.value_of(entry.name)))
        saved.append(SavedValue(entry, in_force, hides))
    return SettingsInForce(settings, shared=True, saved=saved)
