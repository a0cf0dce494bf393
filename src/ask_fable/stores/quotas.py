"""Per-key quotas: calls per minute, calls in flight and dollars per UTC day, in SQLite or PostgreSQL.

Each admission and each settlement is one write transaction that starts by locking its key's row
in ``quota_keys`` (an admission upserts it, a settlement updates it) and holds it until it commits
(on SQLite, ``BEGIN IMMEDIATE`` already holds the whole file). A key's admissions and settlements
therefore run one at a time, each seeing everything the previous one wrote, so server processes
sharing the state directory or one PostgreSQL database count against the same limits and a limit
is never overshot by a race. Both run through ``Database.run_write``: a transaction PostgreSQL
aborts for a deadlock (an admission also clears other keys' expired leases) is run again.

- **calls per minute** count admitted calls in fixed UTC minutes; a refusal says when the minute ends;
- **calls in flight** are rows held from admission to settlement (a lease: a row whose process died
  without settling stops counting after :data:`LEASE_S`);
- **dollars per day**: a call is admitted while the key's settled spend plus what its calls in flight
  reserve is below the budget. It reserves the configured amount (or what is left of the budget,
  if less), and when it ends the reservation is replaced by the cost the providers reported. The
  budget can therefore be exceeded only by what calls in flight cost beyond their reservations.

Amounts are kept as integer millionths of a dollar, so sums are exact. The queries are plain
(upserts, counts and sums, no function of one database), so another database can implement
:class:`~ask_fable.stores.interfaces.QuotaStore` the same way.
"""

from __future__ import annotations

import os
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, insert, select, update

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.stores.db import Database, database_for, open_database, per_dialect, upsert
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.tables import quota_days, quota_in_flight, quota_keys, quota_minutes
from ask_fable.stores.views import Admission, KeyUsage

if TYPE_CHECKING:
    from sqlalchemy import Connection, Select, Table
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.elements import ColumnElement

    from ask_fable.config import Settings

#: A call in flight whose process never settled it (killed mid-call) stops counting after this long.
LEASE_S = 1800.0
#: What a refusal for too many calls in flight suggests waiting: calls end at their own pace.
IN_FLIGHT_RETRY_S = 2.0
#: Days of per-day totals kept.
KEEP_DAYS = 35
MICRO = 1_000_000

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect). The key's row in
# ``quota_keys`` is updated with parameters not named after its columns (``of_tenant``, ``of_key``): a
# parameter of an UPDATE so named would be set in that column.
_EXPIRED_LEASES = delete(quota_in_flight).where(quota_in_flight.c.expires_at <= bindparam("now"))
_IN_FLIGHT = (select(func.count(), func.coalesce(func.sum(quota_in_flight.c.reserved_microusd), 0))
              .where(quota_in_flight.c.tenant == bindparam("tenant"),
                     quota_in_flight.c.key_id == bindparam("key_id")))
_CALLS = select(quota_minutes.c.calls).where(
    quota_minutes.c.tenant == bindparam("tenant"), quota_minutes.c.key_id == bindparam("key_id"),
    quota_minutes.c.minute == bindparam("minute"))
_SPENT = select(quota_days.c.spent_microusd).where(
    quota_days.c.tenant == bindparam("tenant"), quota_days.c.key_id == bindparam("key_id"),
    quota_days.c.day == bindparam("day"))
_OLD_MINUTES = delete(quota_minutes).where(
    quota_minutes.c.tenant == bindparam("tenant"), quota_minutes.c.key_id == bindparam("key_id"),
    quota_minutes.c.minute < bindparam("before"))
#: The lease given as parameters.
_LEASE = insert(quota_in_flight)
_HOLD_KEY = (update(quota_keys)
             .where(quota_keys.c.tenant == bindparam("of_tenant"), quota_keys.c.key_id == bindparam("of_key"))
             .values(admissions=quota_keys.c.admissions))
_SETTLED = delete(quota_in_flight).where(quota_in_flight.c.ticket == bindparam("ticket"))
_OLD_DAYS = delete(quota_days).where(
    quota_days.c.tenant == bindparam("tenant"), quota_days.c.key_id == bindparam("key_id"),
    quota_days.c.day < bindparam("oldest"))


def _admit_key(dialect: str) -> Executable:
    return upsert(dialect, quota_keys).on_conflict_do_update(
        index_elements=["tenant", "key_id"], set_={"admissions": quota_keys.c.admissions + 1})


def _count_call(dialect: str) -> Executable:
    return upsert(dialect, quota_minutes).on_conflict_do_update(
        index_elements=["tenant", "key_id", "minute"], set_={"calls": quota_minutes.c.calls + 1})


def _spend(dialect: str) -> Executable:
    spend = upsert(dialect, quota_days)
    return spend.on_conflict_do_update(
        index_elements=["tenant", "key_id", "day"],
        set_={"calls": quota_days.c.calls + 1,
              "spent_microusd": quota_days.c.spent_microusd + spend.excluded.spent_microusd})


_ADMIT_KEY = per_dialect(_admit_key)
_COUNT_CALL = per_dialect(_count_call)
_SPEND = per_dialect(_spend)


def to_micro(dollars: float) -> int:
    """Dollars as whole millionths."""
    return round(dollars * MICRO)


def utc_day(now: float) -> str:
    """The UTC date of ``now`` (``YYYY-MM-DD``)."""
    return datetime.fromtimestamp(now, UTC).date().isoformat()


def seconds_to_next_day(now: float) -> float:
    """Seconds from ``now`` to the next UTC midnight."""
    moment = datetime.fromtimestamp(now, UTC)
    midnight = datetime(moment.year, moment.month, moment.day, tzinfo=UTC) + timedelta(days=1)
    return max(0.0, midnight.timestamp() - now)


class QuotaLedger:
    """The quota tables, in their own SQLite file (``settings.quotas_db``) or PostgreSQL: the
    ``QuotaStore``."""

    def __init__(self, location: str | os.PathLike[str] | Database, *,
                 engines: Engines | None = None) -> None:
        self.db = open_database(location, "quotas", engines=engines)

    def admit(self, tenant: str, key_id: int, limits: QuotaLimits, reserve_usd: float,
              now: float) -> Admission:
        """Admit one call of the key (counting it and holding its reservation) or say which limit it hit."""
        one_tenant(tenant)
        minute, day = int(now // 60), utc_day(now)

        def admission(conn: Connection) -> Admission:
            # Taken first, this upsert holds the key's row until the transaction ends, so on a database
            # whose writes run concurrently (PostgreSQL) the key's admissions still run one at a time.
            conn.execute(_ADMIT_KEY(conn), {"tenant": tenant, "key_id": key_id, "admissions": 1})
            # Other keys' expired leases too: two admissions may lock the same ones (run_write retries
            # the one PostgreSQL aborts if they ever deadlock).
            conn.execute(_EXPIRED_LEASES, {"now": now})
            counted = conn.execute(_IN_FLIGHT, {"tenant": tenant, "key_id": key_id}).one()
            # PostgreSQL sums integers as numeric: whole numbers either way.
            in_flight, reserved = int(counted[0]), int(counted[1])
            if limits.concurrent is not None and in_flight >= limits.concurrent:
                return Admission(False, limit="concurrent", retry_after_s=IN_FLIGHT_RETRY_S, used=in_flight)
            calls = self._one(conn, _CALLS, {"tenant": tenant, "key_id": key_id, "minute": minute})
            if limits.rpm is not None and calls >= limits.rpm:
                return Admission(False, limit="rpm", retry_after_s=round((minute + 1) * 60 - now, 3),
                                 used=calls)
            reservation = 0
            if limits.daily_usd is not None:
                spent = self._one(conn, _SPENT, {"tenant": tenant, "key_id": key_id, "day": day})
                room = to_micro(limits.daily_usd) - spent - reserved
                if room <= 0:
                    return Admission(False, limit="daily_usd",
                                     retry_after_s=round(seconds_to_next_day(now), 3),
                                     used=(spent + reserved) / MICRO)
                reservation = min(to_micro(reserve_usd), room)
            ticket = secrets.token_hex(16)
            conn.execute(_COUNT_CALL(conn), {"tenant": tenant, "key_id": key_id, "minute": minute,
                                             "calls": 1})
            conn.execute(_OLD_MINUTES, {"tenant": tenant, "key_id": key_id, "before": minute - 1})
            conn.execute(_LEASE, {"ticket": ticket, "tenant": tenant, "key_id": key_id, "started_at": now,
                                  "expires_at": now + LEASE_S, "reserved_microusd": reservation})
            return Admission(True, ticket=ticket)

        return self.db.run_write(admission)

    def settle(self, tenant: str, key_id: int, ticket: str, cost_usd: float, now: float) -> None:
        """End an admitted call: free its place in flight and add its real cost to today's spend."""
        one_tenant(tenant)
        day = utc_day(now)

        def settlement(conn: Connection) -> None:
            # The key's row first, as an admission takes it: an admission reads the reservations in
            # flight and the day's spend in two statements, and must not see this call in both.
            conn.execute(_HOLD_KEY, {"of_tenant": tenant, "of_key": key_id})
            conn.execute(_SETTLED, {"ticket": ticket})
            conn.execute(_SPEND(conn), {"tenant": tenant, "key_id": key_id, "day": day, "calls": 1,
                                        "spent_microusd": max(0, to_micro(cost_usd))})
            oldest = utc_day(now - KEEP_DAYS * 86400)
            conn.execute(_OLD_DAYS, {"tenant": tenant, "key_id": key_id, "oldest": oldest})

        self.db.run_write(settlement)

    def usage(self, tenant: str, now: float) -> list[KeyUsage]:
        """Each key's use now (every tenant's keys for ``"*"``): calls this minute, in flight, today."""
        minute, day = int(now // 60), utc_day(now)
        owner = None if tenant == ALL_TENANTS else one_tenant(tenant)
        rows: dict[tuple[str, int], KeyUsage] = {}

        def of_owner(table: Table) -> list[ColumnElement[bool]]:
            return [] if owner is None else [table.c.tenant == owner]

        def row(key_owner: str, key_id: int) -> KeyUsage:
            return rows.setdefault((key_owner, key_id), KeyUsage(
                tenant=key_owner, key_id=key_id, calls_this_minute=0, in_flight=0, calls_today=0,
                spent_usd_today=0.0, reserved_usd=0.0))

        minutes, days, flight = quota_minutes.c, quota_days.c, quota_in_flight.c
        with self.db.read() as conn:
            for key_owner, key_id, calls in conn.execute(
                    select(minutes.tenant, minutes.key_id, minutes.calls)
                    .where(minutes.minute == minute, *of_owner(quota_minutes))):
                row(key_owner, key_id)["calls_this_minute"] = int(calls)
            for key_owner, key_id, count, reserved in conn.execute(
                    select(flight.tenant, flight.key_id, func.count(), func.sum(flight.reserved_microusd))
                    .where(flight.expires_at > now, *of_owner(quota_in_flight))
                    .group_by(flight.tenant, flight.key_id)):
                usage = row(key_owner, key_id)
                usage["in_flight"], usage["reserved_usd"] = int(count), int(reserved or 0) / MICRO
            for key_owner, key_id, calls, spent in conn.execute(
                    select(days.tenant, days.key_id, days.calls, days.spent_microusd)
                    .where(days.day == day, *of_owner(quota_days))):
                usage = row(key_owner, key_id)
                usage["calls_today"], usage["spent_usd_today"] = int(calls), int(spent) / MICRO
        return [rows[k] for k in sorted(rows, key=lambda k: (k[1], k[0]))]

    @staticmethod
    def _one(conn: Connection, query: Select[int], params: dict[str, object]) -> int:
        found = conn.scalar(query, params)
        return int(found) if found is not None else 0


def quota_store_for(settings: Settings, *, engines: Engines | None = None) -> QuotaLedger:
    """The quota store configured by ``settings`` (on the App's engines when given)."""
    database = database_for(settings, "quotas", settings.quotas_db, engines=engines)
    return QuotaLedger(database)
