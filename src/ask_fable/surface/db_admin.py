"""``ask-fable db``: the stores' schema (``upgrade``, ``status``) and the settings saved in a shared
database (``settings``, ``settings --forget NAME``, ``settings --forget-all``).

On a team's database the ``configure_*`` tools save their settings there, above every server's
config file and environment. ``db settings`` lists each saved value with who saved it and when, and
the hand-set value it hides; ``--forget`` removes saved values in one save, which every running
server applies as it applies any save (from its next call, told by PostgreSQL's notice), so the
config file or environment value applies again. Without a database the tools save to the config
file, which the admin edits instead.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from ask_fable.config import Settings
    from ask_fable.core.settings_in_force import SettingsInForce
    from ask_fable.stores.schema import StoreVersion

#: What ``db status`` says of each store state.
STATE_TEXT = {"current": "current", "behind": "behind: run `ask-fable db upgrade`",
              "newer": "newer than this ask-fable", "not_created": "not created yet (made on first use)"}


def _fail(message: str) -> int:
    print(f"ask-fable: {message}", file=sys.stderr)
    return 1


def db_command(args: argparse.Namespace, in_force: SettingsInForce | None = None) -> int:
    """``db upgrade|status|settings``; 1 with one line when the database cannot be used."""
    from ask_fable.config import database_url_problem, load_settings
    from ask_fable.errors import AskFableError
    from ask_fable.surface.terminal import describe

    settings = load_settings()
    problem = database_url_problem(settings)
    if problem is not None:
        return _fail(problem)
    try:
        if args.db_action == "settings":
            from ask_fable.core.settings_in_force import settings_in_force

            return settings_command(args, in_force or settings_in_force())
        return schema_command(args, settings)
    except AskFableError as exc:
        return _fail(describe(exc))


def store_state(settings: Settings, version: StoreVersion) -> str:
    """A store's state as ``db status`` reports it: ``not_created`` for a SQLite file not made yet
    (each is made on first use), else its schema's ``current``, ``behind`` or ``newer``."""
    if not settings.database_url and not os.path.exists(version.location):
        return "not_created"
    return version.state


def schema_command(args: argparse.Namespace, settings: Settings) -> int:
    """``db upgrade`` and ``db status``: each store's schema revision, as text or JSON. ``status``
    exits 1 when any store is behind or ahead of this release, so a deploy can gate on it."""
    from ask_fable.stores import schema

    upgrading = args.db_action == "upgrade"
    report = schema.upgrade(settings) if upgrading else schema.status(settings)
    states = [v.state if upgrading else store_state(settings, v) for v in report]
    if args.json:
        print(json.dumps({"database": "postgresql" if settings.database_url else "sqlite",
                          "head": schema.head(), "stores": [
            {"store": v.store, "found": v.found, "wanted": v.wanted, "state": state, "location": v.location}
            for v, state in zip(report, states, strict=True)]}, indent=2))
    else:
        where = "PostgreSQL" if settings.database_url else f"SQLite files under {settings.state_dir}"
        print(f"stores on {where} (this ask-fable's schema: revision {schema.head()}):")
        width = max((len(v.store) for v in report), default=8)
        for v, state in zip(report, states, strict=True):
            if upgrading:
                done = "up to date" if v.found == v.wanted else f"upgraded {v.found or 'none'} → {v.wanted}"
                shown = v.wanted
            else:
                done, shown = STATE_TEXT[state], v.found or "none"
            print(f"  {v.store:<{width}} revision {shown:<6} {done}")
    if upgrading:
        return 0
    return 1 if any(state in ("behind", "newer") for state in states) else 0


# --- saved settings ------------------------------------------------------------------------------


def _setting_name(given: str, saved: list[str]) -> str:
    """The saved setting ``given`` names: as saved, or by any name the config file accepts for it
    (raises ``BadArgs`` for a name no setting has, with a did-you-mean)."""
    from ask_fable.config import ENV_PREFIX, Settings
    from ask_fable.config_sources import mapping_layer
    from ask_fable.errors import BadArgs

    if given in saved:
        return given
    from ask_fable.backends.registry import registered

    registered()  # a backend's own settings are names too
    layer = mapping_layer({given: True}, "", Settings.known_fields(), ENV_PREFIX)
    if layer.problems:
        raise BadArgs(layer.problems[0].problem)
    return next(iter(layer.values))


def settings_command(args: argparse.Namespace, in_force: SettingsInForce) -> int:
    """``db settings [--forget NAME… | --forget-all] [--json]``."""
    from ask_fable.config import config_file_path
    from ask_fable.errors import BadArgs

    forgetting = bool(args.forget) or args.forget_all
    if not in_force.shared:
        where = (f"no shared database (ASK_FABLE_DATABASE_URL is not set): the configure tools save to the "
                 f"config file {config_file_path()}")
        if forgetting:
            return _fail(f"{where}; edit that file to remove what they saved")
        print(json.dumps({"database": None, "saved_settings": []}, indent=2) if args.json
              else f"{where}, not to a database; nothing is saved here")
        return 0
    if in_force.error is not None:
        raise in_force.error
    if not forgetting:
        _print_saved(in_force, args.json)
        return 0
    saved = [value.name for value in in_force.saved]
    try:
        names = None if args.forget_all else [_setting_name(given, saved) for given in args.forget]
    except BadArgs as exc:
        return _fail(exc.detail)
    missing = [name for name in names or [] if name not in saved]
    if missing:
        listing = ", ".join(saved) or "nothing"
        verb = "is" if len(missing) == 1 else "are"
        return _fail(f"{', '.join(missing)} {verb} not saved in the database; saved: {listing}")
    gone = _forget(in_force.settings, names) if saved else []
    _print_forgotten(gone, args.json)
    return 0


def _forget(settings: Settings, names: list[str] | None) -> list[str]:
    from ask_fable.stores.db import database_for
    from ask_fable.stores.saved_settings import SettingsStore

    store = SettingsStore(database_for(settings, "settings", None))
    try:
        return store.forget(names)
    finally:
        store.close()


def _print_saved(in_force: SettingsInForce, as_json: bool) -> None:
    if as_json:
        saved = [value.shown().model_dump(mode="json") for value in in_force.saved]
        print(json.dumps({"database": "postgresql", "saved_settings": saved}, indent=2))
        return
    if not in_force.saved:
        print("no saved settings in the shared database: servers run with their config file and environment")
        return
    print("saved settings in the shared database (above each server's config file and environment):")
    for value in in_force.saved:
        print(f"  {value.line()}")
    print("forget one with `ask-fable db settings --forget NAME` (or all with --forget-all); every server "
          "applies that from its next call")


def _print_forgotten(gone: list[str], as_json: bool) -> None:
    """What forgetting did, and what applies now in each forgotten value's place on this machine."""
    from ask_fable.config import load_settings
    from ask_fable.config_sources import shown

    if not gone:
        print(json.dumps({"forgot": []}) if as_json else "no saved settings to forget")
        return
    now = load_settings()  # without the forgotten values; the ones still saved do not concern these
    values = {name: now.value_of(name) for name in now.known_fields()}
    if as_json:
        out: dict[str, Any] = {"forgot": gone, "now": {name: {"value": shown(name, values[name]),
                                                         "source": now.origin(name) or "default"}
                                                  for name in gone if name in values}}
        print(json.dumps(out, indent=2))
        return
    for name in gone:
        if name not in values:
            print(f"forgot {name}")
            continue
        origin = now.origin(name)
        source = f"from {origin}" if origin else "(the default)"
        print(f"forgot {name}: with this machine's config file and environment it is now "
              f"{shown(name, values[name])} {source}")
    print("every server applies this from its next call")
