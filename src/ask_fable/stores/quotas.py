"""Per-key quotas: calls per minute, calls in flight and dollars per UTC day, in SQLite or PostgreSQL.

A process hands its quota work to :meth:`QuotaLedger.apply` in batches (``core/quotas.py``): one
write transaction that first locks each of its keys' ``quota_keys`` rows, in one order, until it
commits (on SQLite ``BEGIN IMMEDIATE`` holds the whole file). A key's batches therefore run one at
a time and each admission sees the ones before it, so processes sharing the stores count against
the same limits exactly. A transaction PostgreSQL aborts for a deadlock runs again
(``Database.run_write``).

- **calls per minute** count admitted calls in fixed UTC minutes;
- **calls in flight** are rows held from admission to settlement, each a lease of :data:`LEASE_S`
  renewed while the call runs, so a killed process's rows stop counting within :data:`LEASE_S`
  (``ask-fable keys in-flight`` / ``keys release``); lapsed rows are deleted every :data:`SWEEP_S`;
- **dollars per day**: a call is admitted only when its estimate (at each backend's ``max_tokens``)
  fits in the budget left after the key's settled spend and its calls in flight; at settlement the
  reservation is replaced by the real cost, so only costs beyond estimates can exceed the budget.

Amounts are integer millionths of a dollar, so sums are exact.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, func, insert, select, update

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.stores.db import Database, database_for, open_database, per_dialect, upsert
from ask_fable.stores.driver import run, run_many
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.tables import quota_days, quota_in_flight, quota_keys, quota_minutes
from ask_fable.stores.views import Admission, AdmitRequest, InFlight, KeyUsage, SettleRequest

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.elements import ColumnElement

    from ask_fable.config import Settings

#: A call in flight holds its place this long past its admission or its process's last heartbeat
#: (``renew``, every third of it): a process killed mid-call frees its places within this. The
#: default of ``quota_lease_seconds``.
LEASE_S = 30.0
#: What a refusal for too many calls in flight suggests waiting: calls end at their own pace.
IN_FLIGHT_RETRY_S = 2.0
#: How often a process deletes lapsed leases (they are no longer counted from the moment they lapse).
SWEEP_S = 60.0
#: Days of per-day totals kept.
KEEP_DAYS = 35
MICRO = 1_000_000

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_RENEW = (update(quota_in_flight).where(quota_in_flight.c.ticket.in_(bindparam("tickets", expanding=True)))
          .values(expires_at=bindparam("until")))
_EXPIRED_LEASES = delete(quota_in_flight).where(quota_in_flight.c.expires_at <= bindparam("now"))
_SETTLED = delete(quota_in_flight).where(quota_in_flight.c.ticket.in_(bindparam("tickets", expanding=True)))
_OLD_DAYS = delete(quota_days).where(quota_days.c.tenant == bindparam("tenant"),
                                     quota_days.c.key_id == bindparam("key_id"),
                                     quota_days.c.day < bindparam("before"))
_LEASE = insert(quota_in_flight)
_OLD_MINUTES = delete(quota_minutes).where(
    quota_minutes.c.tenant == bindparam("tenant"), quota_minutes.c.key_id == bindparam("key_id"),
    quota_minutes.c.minute < bindparam("before"))
#: A key's calls in flight whose lease has not lapsed (lapsed ones are swept now and then).
_OF_KEY_IN_FLIGHT = (quota_in_flight.c.tenant == bindparam("tenant"),
                     quota_in_flight.c.key_id == bindparam("key_id"),
                     quota_in_flight.c.expires_at > bindparam("now"))
#: A key's use in one round trip: its calls in flight and what they set aside, its calls this
#: minute and its spend today.
_KEY_USE = select(
    select(func.count()).where(*_OF_KEY_IN_FLIGHT).scalar_subquery(),
    select(func.coalesce(func.sum(quota_in_flight.c.reserved_microusd), 0))
    .where(*_OF_KEY_IN_FLIGHT).scalar_subquery(),
    select(quota_minutes.c.calls).where(
        quota_minutes.c.tenant == bindparam("tenant"), quota_minutes.c.key_id == bindparam("key_id"),
        quota_minutes.c.minute == bindparam("minute")).scalar_subquery(),
    select(quota_days.c.spent_microusd).where(
        quota_days.c.tenant == bindparam("tenant"), quota_days.c.key_id == bindparam("key_id"),
        quota_days.c.day == bindparam("day")).scalar_subquery(),
)
_SOONEST_LAPSE = select(func.min(quota_in_flight.c.expires_at)).where(*_OF_KEY_IN_FLIGHT)
_HELD = (select(quota_in_flight.c.ticket, quota_in_flight.c.holder, quota_in_flight.c.started_at,
                quota_in_flight.c.expires_at, quota_in_flight.c.reserved_microusd)
         .where(quota_in_flight.c.tenant == bindparam("tenant"),
                quota_in_flight.c.key_id == bindparam("key_id"),
                quota_in_flight.c.expires_at > bindparam("now"))
         .order_by(quota_in_flight.c.started_at))
_RELEASE_ALL = delete(quota_in_flight).where(quota_in_flight.c.tenant == bindparam("tenant"),
                                             quota_in_flight.c.key_id == bindparam("key_id"))
_RELEASE_ONE = _RELEASE_ALL.where(quota_in_flight.c.ticket == bindparam("ticket"))


@per_dialect
def _HOLD_KEY(dialect: str) -> Executable:
    # Taken first, this upsert holds the key's row until the transaction ends.
    lock = upsert(dialect, quota_keys).values(admissions=0)
    return lock.on_conflict_do_update(index_elements=["tenant", "key_id"],
                                      set_={"admissions": quota_keys.c.admissions})


@per_dialect
def _ADD_SPEND(dialect: str) -> Executable:
    spend = upsert(dialect, quota_days)
    return spend.on_conflict_do_update(
        index_elements=["tenant", "key_id", "day"],
        set_={"calls": quota_days.c.calls + spend.excluded.calls,
              "spent_microusd": quota_days.c.spent_microusd + spend.excluded.spent_microusd})


@per_dialect
def _COUNT_CALLS(dialect: str) -> Executable:
    counting = upsert(dialect, quota_minutes)
    return counting.on_conflict_do_update(index_elements=["tenant", "key_id", "minute"],
                                          set_={"calls": quota_minutes.c.calls + counting.excluded.calls})


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


@dataclass
class _KeyUse:
    """One key's use as a batch counts it: read once, then counted on in memory."""

    in_flight: int
    reserved: int
    calls: int
    spent: int
    admitted: int = 0


def _chunks(items: Sequence[str], size: int = 500) -> list[list[str]]:
    """``items`` in lists of at most ``size`` (the parameters one statement takes)."""
    return [list(items[start:start + size]) for start in range(0, len(items), size)]


class QuotaLedger:
    """The quota tables, in their own SQLite file (``settings.quotas_db``) or PostgreSQL: the
    ``QuotaStore``."""

    def __init__(self, location: str | os.PathLike[str] | Database, *,
                 engines: Engines | None = None) -> None:
        self.db = open_database(location, "quotas", engines=engines)
        #: The minute and the day up to which this process last pruned each key's old counts: pruned
        #: again only once they change (another process pruning meanwhile does no harm).
        self._pruned: dict[tuple[str, int], tuple[int, str]] = {}
        #: When this process last deleted the lapsed leases of every key.
        self._swept_at = float("-inf")
        #: This process's writers of a SQLite file take turns here: admissions and settlements
        #: may run in two worker threads at once, and SQLite's busy handler would make one sleep.
        self._turn = threading.Lock() if self.db.dialect == "sqlite" else None

    def admit(self, tenant: str, key_id: int, limits: QuotaLimits, reserve_usd: float,
              now: float, holder: str = "") -> Admission:
        """Admit one call of the key (counting it and holding its reservation) or say which limit it hit."""
        return self.apply([], [AdmitRequest(tenant, key_id, limits, reserve_usd)], [], holder, now)[0]

    def settle(self, tenant: str, key_id: int, ticket: str, cost_usd: float, now: float) -> None:
        """End an admitted call: free its place in flight and add its real cost to today's spend."""
        self.apply([SettleRequest(tenant, key_id, ticket, cost_usd)], [], [], "", now)

    def apply(self, settles: Sequence[SettleRequest], admits: Sequence[AdmitRequest], renew: Sequence[str],
              holder: str, now: float, lease_s: float = LEASE_S) -> list[Admission]:
        """One write transaction for a process's quota work that came in together: renew the leases
        of ``renew`` (its calls still in flight) for ``lease_s``, end ``settles``, then admit
        ``admits`` in order (each leased for ``lease_s``), each seeing the ones before it. Returns
        one :class:`Admission` per admission."""
        owners = [(r.tenant, r.key_id) for r in settles] + [(r.tenant, r.key_id) for r in admits]
        for tenant, _ in owners:
            one_tenant(tenant)
        # Each key's row is taken first, in one order, and held to the end: a key's transactions
        # run one at a time, and two batches never wait on each other's keys in a cycle.
        keys = sorted(set(owners))

        def batch(conn: Connection) -> list[Admission]:
            for tenant, key_id in keys:
                run(conn, _HOLD_KEY(conn), {"tenant": tenant, "key_id": key_id})
            for chunk in _chunks(renew):
                run(conn, _RENEW, {"tickets": chunk, "until": now + lease_s})
            if settles:
                self._settle_all(conn, settles, now)
            if not admits:
                return []
            if now - self._swept_at >= SWEEP_S:
                # Every key's lapsed leases (a process that died without settling); they count for
                # nothing meanwhile.
                run(conn, _EXPIRED_LEASES, {"now": now})
                self._swept_at = now
            return self._admit_all(conn, admits, holder, now, lease_s)

        if self._turn is None:
            return self.db.run_write(batch)
        with self._turn:
            return self.db.run_write(batch)

    def _settle_all(self, conn: Connection, settles: Sequence[SettleRequest], now: float) -> None:
        """End ``settles``: free their places and add each key's costs to its day, one statement each."""
        day, oldest = utc_day(now), utc_day(now - KEEP_DAYS * 86400)
        for chunk in _chunks([s.ticket for s in settles]):
            run(conn, _SETTLED, {"tickets": chunk})
        totals: dict[tuple[str, int], tuple[int, int]] = {}
        for settle in settles:
            calls, spent = totals.get((settle.tenant, settle.key_id), (0, 0))
            totals[(settle.tenant, settle.key_id)] = calls + 1, spent + max(0, to_micro(settle.cost_usd))
        for (tenant, key_id), (calls, spent) in sorted(totals.items()):
            run(conn, _ADD_SPEND(conn), {"tenant": tenant, "key_id": key_id, "day": day, "calls": calls,
                                         "spent_microusd": spent})
            minute, pruned_day = self._pruned.get((tenant, key_id), (0, ""))
            if pruned_day != day:
                run(conn, _OLD_DAYS, {"tenant": tenant, "key_id": key_id, "before": oldest})
                self._pruned[(tenant, key_id)] = minute, day

    def _admit_all(self, conn: Connection, admits: Sequence[AdmitRequest], holder: str, now: float,
                   lease_s: float) -> list[Admission]:
        """Admit ``admits`` in order: each key's use is read once, counted on in memory through the
        batch (each admission sees the ones before it), and written once."""
        minute = int(now // 60)
        use: dict[tuple[str, int], _KeyUse] = {}
        rows: list[dict[str, object]] = []
        results: list[Admission] = []
        for admit in admits:
            owner = (admit.tenant, admit.key_id)
            if owner not in use:
                use[owner] = self._key_use(conn, admit.tenant, admit.key_id, now)
            state = use[owner]
            decision = self._decide(conn, admit, state, now)
            if decision is not None:
                results.append(decision)
                continue
            reservation = to_micro(admit.reserve_usd) if admit.limits.daily_usd is not None else 0
            ticket = secrets.token_hex(16)
            rows.append({"ticket": ticket, "tenant": admit.tenant, "key_id": admit.key_id, "started_at": now,
                         "expires_at": now + lease_s, "reserved_microusd": reservation, "holder": holder})
            state.in_flight, state.reserved = state.in_flight + 1, state.reserved + reservation
            state.calls, state.admitted = state.calls + 1, state.admitted + 1
            results.append(Admission(True, ticket=ticket))
        if rows:
            run_many(conn, _LEASE, rows)
        for (tenant, key_id), state in sorted(use.items()):
            if not state.admitted:
                continue
            run(conn, _COUNT_CALLS(conn), {"tenant": tenant, "key_id": key_id, "minute": minute,
                                           "calls": state.admitted})
            pruned_minute, day = self._pruned.get((tenant, key_id), (0, ""))
            if pruned_minute != minute:
                run(conn, _OLD_MINUTES, {"tenant": tenant, "key_id": key_id, "before": minute - 1})
                self._pruned[(tenant, key_id)] = minute, day
        return results

    def _key_use(self, conn: Connection, tenant: str, key_id: int, now: float) -> _KeyUse:
        """The key's calls in flight (and what they set aside), calls this minute and spend today."""
        in_flight, reserved, calls, spent = run(conn, _KEY_USE, {
            "tenant": tenant, "key_id": key_id, "now": now, "minute": int(now // 60),
            "day": utc_day(now)}).one()
        # PostgreSQL sums integers as numeric: whole numbers either way.
        return _KeyUse(in_flight=int(in_flight), reserved=int(reserved), calls=int(calls or 0),
                       spent=int(spent or 0))

    @staticmethod
    def _decide(conn: Connection, admit: AdmitRequest, state: _KeyUse, now: float) -> Admission | None:
        """The refusal of ``admit`` given the key's use, or ``None`` when it is admitted."""
        limits, minute = admit.limits, int(now // 60)
        if limits.concurrent is not None and state.in_flight >= limits.concurrent:
            soonest = run(conn, _SOONEST_LAPSE, {"tenant": admit.tenant, "key_id": admit.key_id,
                                                 "now": now}).scalar()
            # A call in flight ends at its own pace; a lease nobody renews lapses at ``soonest``.
            wait = IN_FLIGHT_RETRY_S if soonest is None else min(IN_FLIGHT_RETRY_S, float(soonest) - now)
            return Admission(False, limit="concurrent", retry_after_s=round(max(wait, 0.1), 3),
                             used=state.in_flight)
        if limits.rpm is not None and state.calls >= limits.rpm:
            return Admission(False, limit="rpm", retry_after_s=round((minute + 1) * 60 - now, 3),
                             used=state.calls)
        if limits.daily_usd is not None:
            budget, wanted = to_micro(limits.daily_usd), to_micro(admit.reserve_usd)
            spent, room = state.spent, to_micro(limits.daily_usd) - state.spent - state.reserved
            if room <= 0 or wanted > room:
                # The whole call must fit. What frees room first: calls in flight settling below
                # what they set aside, else the next UTC day; a call larger than the whole
                # budget never fits (no retry_after_s).
                if wanted > budget:
                    retry: float | None = None
                elif spent + wanted > budget or spent >= budget:
                    retry = round(seconds_to_next_day(now), 3)
                else:
                    retry = IN_FLIGHT_RETRY_S
                return Admission(False, limit="daily_usd", retry_after_s=retry,
                                 used=(spent + state.reserved) / MICRO)
        return None

    def in_flight(self, tenant: str, key_id: int, now: float) -> list[InFlight]:
        """The key's calls in flight whose lease has not lapsed, oldest first."""
        one_tenant(tenant)
        with self.db.read() as conn:
            rows = conn.execute(_HELD, {"tenant": tenant, "key_id": key_id, "now": now}).all()
        return [InFlight(ticket=str(t), holder=str(h), started_at=float(s), expires_at=float(e),
                         reserved_usd=int(r) / MICRO) for t, h, s, e, r in rows]

    def release(self, tenant: str, key_id: int, ticket: str | None = None) -> int:
        """Free the key's places in flight (one ``ticket``'s, or all of them) without counting a cost;
        returns how many were freed. For calls whose process is gone (their lease lapses on its own)."""
        one_tenant(tenant)

        def freeing(conn: Connection) -> int:
            if ticket is None:
                cursor = conn.execute(_RELEASE_ALL, {"tenant": tenant, "key_id": key_id})
            else:
                cursor = conn.execute(_RELEASE_ONE, {"tenant": tenant, "key_id": key_id, "ticket": ticket})
            return int(cursor.rowcount or 0)

        return self.db.run_write(freeing)

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


def quota_store_for(settings: Settings, *, engines: Engines | None = None) -> QuotaLedger:
    """The quota store configured by ``settings`` (on the App's engines when given)."""
    return QuotaLedger(database_for(settings, "quotas", settings.quotas_db, engines=engines))
