"""``ask-fable keys``: create, list (with each key's quota use against its limits), update and revoke.

A key's limits are its own where set (``--rpm``, ``--concurrent``, ``--daily-usd``; 0 is unlimited,
``default`` follows the setting again) and the settings' defaults otherwise; the listing shows
both what is in force and what the key has used of it: calls this minute, calls in flight, dollars
spent today (UTC).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from ask_fable.contract import Strict
from ask_fable.core.quotas import effective_limits
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.views import KeyUsage

if TYPE_CHECKING:
    import argparse

    from ask_fable.core.app import App
    from ask_fable.stores.records import ApiKey

#: What a limit option takes to follow the setting's default again.
DEFAULT_WORD = "default"
LIMIT_NAMES = ("rpm", "concurrent", "daily_usd")


def given_limits(args: argparse.Namespace) -> tuple[QuotaLimits, frozenset[str]]:
    """The limits named on the command line, and those set back to ``default``."""
    values: dict[str, Any] = {}
    cleared = set()
    for name in LIMIT_NAMES:
        value = getattr(args, name, None)
        if value == DEFAULT_WORD:
            cleared.add(name)
        elif value is not None:
            values[name] = value
    return QuotaLimits(**values), frozenset(cleared)


def _no_usage(record: ApiKey) -> KeyUsage:
    return {"tenant": record.tenant, "key_id": record.id, "calls_this_minute": 0, "in_flight": 0,
            "calls_today": 0, "spent_usd_today": 0.0, "reserved_usd": 0.0}


class KeyReport(Strict):
    """One key as ``key_usage`` and ``ask-fable keys`` show it: who, its own limits, the limits in
    force and its use of them now."""

    id: int
    name: str
    scope: str
    tenant: str
    prefix: str
    created_at: str
    last_used_at: str | None = None
    revoked_at: str | None = None
    #: The key's own limits (null: the default applies) and those in force (null: unlimited).
    limits: QuotaLimits
    active: bool
    limits_in_force: QuotaLimits
    usage: KeyUsage


def key_report(app: App, records: list[ApiKey]) -> list[KeyReport]:
    """Each key: its record, its own limits, the limits in force and its use of them now."""
    usage = {(u["tenant"], u["key_id"]): u for u in app.quotas.usage("*", app.clock.now())}
    settings = app.settings
    return [
        KeyReport(**record.to_dict(), limits_in_force=effective_limits(record.limits, settings),
                  usage=usage.get((record.tenant, record.id)) or _no_usage(record))
        for record in records
    ]


def _json(reports: list[KeyReport]) -> list[dict[str, Any]]:
    return [report.model_dump(mode="json") for report in reports]


def _of(used: str, limit: object) -> str:
    return f"{used}/{'∞' if limit is None else limit}"


def print_table(report: list[KeyReport]) -> None:
    """The human listing: who, scope, tenant, then use against limits, then dates."""
    from ask_fable.clock import local_time

    def when(value: str | None) -> str:
        return local_time(value) if value else "-"

    print(f"{'ID':>4}  {'NAME':<20} {'SCOPE':<6} {'TENANT':<16} {'PREFIX':<11} {'RPM':<9} {'IN FLIGHT':<9} "
          f"{'TODAY USD':<17} {'CREATED':<26} {'LAST USED':<26} REVOKED")
    for k in report:
        force, use = k.limits_in_force, k.usage
        daily = force.daily_usd
        spent = _of(f"{use['spent_usd_today']:.2f}", None if daily is None else f"{daily:.2f}")
        print(f"{k.id:>4}  {k.name[:20]:<20} {k.scope:<6} {k.tenant[:16]:<16} "
              f"{k.prefix + '…':<11} {_of(str(use['calls_this_minute']), force.rpm):<9} "
              f"{_of(str(use['in_flight']), force.concurrent):<9} {spent:<17} "
              f"{when(k.created_at):<26} {when(k.last_used_at):<26} {when(k.revoked_at)}")


def _in_flight(app: App, args: argparse.Namespace) -> int:
    """``keys in-flight ID`` shows the key's calls in flight; ``keys release ID [--ticket T]`` frees them."""
    from ask_fable.errors import BadArgs

    record = app.keys.get(args.id)
    if record is None:
        raise BadArgs(f"no key {args.id!r}; see `ask-fable keys list`")
    now = app.clock.now()
    if args.keys_action == "release":
        freed = app.quotas.release(record.tenant, record.id, args.ticket)
        if args.json:
            print(json.dumps({"id": record.id, "released": freed}))
        else:
            print(f"freed {freed} place(s) in flight of key {record.id} ({record.name!r})")
        return 0
    calls = app.quotas.in_flight(record.tenant, record.id, now)
    if args.json:
        print(json.dumps([{**call, "lapses_in_s": round(call["expires_at"] - now, 1)} for call in calls],
                         indent=2))
    elif not calls:
        print(f"key {record.id} ({record.name!r}) has no calls in flight")
    else:
        for call in calls:
            print(f"{call['ticket']}  held by {call['holder'] or '?'}  "
                  f"running {now - call['started_at']:.0f}s  "
                  f"lease lapses in {call['expires_at'] - now:.0f}s  "
                  f"set aside ${call['reserved_usd']:.4f}")
    return 0


def keys_command(args: argparse.Namespace) -> int:
    """``keys create|list|update|revoke``; a one-line message and 2 when a new key's arguments are
    wrong (its name taken, its tenant not one), 1 for any other failure."""
    from ask_fable.config import database_url_problem, load_settings
    from ask_fable.core.app import App
    from ask_fable.errors import AskFableError, BadArgs, Unavailable

    problem = database_url_problem(load_settings())
    if problem is not None:
        print(f"ask-fable: {problem}", file=sys.stderr)
        return 1
    app = App()
    store = app.keys
    try:
        if args.keys_action == "create":
            limits, _ = given_limits(args)
            record, key = store.create(args.name, args.scope, args.tenant, limits)
            if args.json:
                print(json.dumps({**_json(key_report(app, [record]))[0], "key": key}, indent=2))
            else:
                print(key)
                print(f"created key {record.id} ({record.name!r}, {record.scope} scope, tenant "
                      f"{record.tenant!r}); it is shown only once — store it now", file=sys.stderr)
            return 0
        if args.keys_action == "list":
            report = key_report(app, store.list_keys())
            if args.json:
                print(json.dumps(_json(report), indent=2))
            elif not report:
                print("no API keys; create one with `ask-fable keys create --name NAME`")
            else:
                print_table(report)
            return 0
        if args.keys_action == "update":
            limits, cleared = given_limits(args)
            if limits == QuotaLimits() and not cleared:
                raise BadArgs("nothing to change: give --rpm, --concurrent or --daily-usd (a number, 0 for "
                              "unlimited, or 'default')")
            record = store.set_limits(args.id, limits, clear=cleared)
            [updated] = key_report(app, [record])
            if args.json:
                print(json.dumps(updated.model_dump(mode="json"), indent=2))
            else:
                force = updated.limits_in_force
                revoked = "; it is revoked, so it is refused whatever its limits" if record.revoked_at else ""
                print(f"key {record.id} ({record.name!r}) now allows rpm={_of('', force.rpm)[1:]}, "
                      f"concurrent={_of('', force.concurrent)[1:]}, "
                      f"daily_usd={_of('', force.daily_usd)[1:]}{revoked}")
            return 0
        if args.keys_action in ("in-flight", "release"):
            return _in_flight(app, args)
        revoked_before = {key.id: key.revoked_at for key in store.list_keys()}
        record = store.revoke(args.id)
        if args.json:
            print(json.dumps(record.to_dict(), indent=2))
        else:
            from ask_fable.clock import local_time

            revoked = local_time(record.revoked_at) if record.revoked_at else "now"
            if revoked_before.get(record.id):
                print(f"key {record.id} ({record.name!r}) was already revoked at {revoked}; nothing changed")
            else:
                print(f"revoked key {record.id} ({record.name!r}) at {revoked}")
        return 0
    except Unavailable:
        raise  # the stores cannot be used: the command's one-line error (and its fix) says so
    except AskFableError as exc:
        print(f"ask-fable: {exc.detail}", file=sys.stderr)
        # The arguments of a new key (a name taken, a tenant that cannot be one) are a usage error.
        return 2 if args.keys_action == "create" and isinstance(exc, BadArgs) else 1
    finally:
        app.close_stores()  # the database connections are returned, whoever called
