"""The quota store, on SQLite and on PostgreSQL: atomic admissions across store instances (as across
server processes), the budget's reservation and settlement, leases of calls whose process died, and
the day window."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ask_fable.stores.quotas import LEASE_S, QuotaLedger
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.views import AdmitRequest, SettleRequest
from tests.conftest import StoreBackend

DAY_START = 1_800_057_600.0  # 00:00:00 UTC


@pytest.fixture
def open_ledger(store_backend: StoreBackend, tmp_path: Path) -> Any:
    """Opens a ledger on the test's database (each call a new store instance on the same data)."""
    return lambda: QuotaLedger(store_backend.open("quotas", tmp_path / "quotas.db"))


def test_two_stores_on_one_database_never_admit_more_calls_than_the_limit(open_ledger: Any) -> None:
    """Two ledgers on one database (two server processes), 40 threads racing: exactly 5 calls in flight."""
    ledgers = [open_ledger(), open_ledger()]
    limits = QuotaLimits(concurrent=5)
    admitted: list[bool] = []
    start = threading.Barrier(40)

    def race(number: int) -> None:
        start.wait()
        admitted.append(ledgers[number % 2].admit("team", 7, limits, 0.0, DAY_START).admitted)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert admitted.count(True) == 5
    assert ledgers[0].usage("team", DAY_START)[0]["in_flight"] == 5


def test_a_budget_is_reserved_while_calls_run_and_settled_to_their_real_cost(open_ledger: Any) -> None:
    ledger = open_ledger()
    limits = QuotaLimits(daily_usd=1.0)
    first = ledger.admit("team", 1, limits, 0.4, DAY_START)
    second = ledger.admit("team", 1, limits, 0.4, DAY_START)
    third = ledger.admit("team", 1, limits, 0.4, DAY_START)  # only $0.20 left: the whole call must fit
    small = ledger.admit("team", 1, limits, 0.2, DAY_START)  # it does
    assert [a.admitted for a in (first, second, third, small)] == [True, True, False, True]
    assert third.limit == "daily_usd" and third.used == 0.8
    # Nothing is spent yet: room frees when the calls in flight settle below what they set aside.
    assert third.retry_after_s is not None and third.retry_after_s <= 2.0
    for admission in (first, second, small):
        assert admission.ticket is not None
        ledger.settle("team", 1, admission.ticket, 0.1, DAY_START + 5)
    usage = ledger.usage("team", DAY_START + 5)[0]
    assert (usage["spent_usd_today"], usage["reserved_usd"], usage["in_flight"]) == (0.3, 0.0, 0)
    assert ledger.admit("team", 1, limits, 0.4, DAY_START + 6).admitted
    never = ledger.admit("team", 1, limits, 1.5, DAY_START + 6)
    assert (never.admitted, never.retry_after_s) == (False, None)  # more than the whole budget


def test_a_spent_budget_frees_at_the_next_utc_day(open_ledger: Any) -> None:
    ledger = open_ledger()
    limits = QuotaLimits(daily_usd=0.5)
    admission = ledger.admit("team", 1, limits, 0.5, DAY_START + 3600)
    assert admission.ticket is not None
    ledger.settle("team", 1, admission.ticket, 0.75, DAY_START + 3600)
    refused = ledger.admit("team", 1, limits, 0.5, DAY_START + 3600)
    assert (refused.admitted, refused.limit, refused.retry_after_s) == (False, "daily_usd", 86400 - 3600)
    assert ledger.admit("team", 1, limits, 0.5, DAY_START + 86400).admitted


def test_a_call_whose_process_died_stops_counting_when_its_lease_ends(open_ledger: Any) -> None:
    ledger = open_ledger()
    limits = QuotaLimits(concurrent=1)
    assert ledger.admit("team", 1, limits, 0.0, DAY_START).admitted  # never settled
    assert ledger.admit("team", 1, limits, 0.0, DAY_START + LEASE_S / 2).limit == "concurrent"
    assert ledger.admit("team", 1, limits, 0.0, DAY_START + LEASE_S + 1).admitted


def test_a_renewed_lease_keeps_its_place_and_a_released_one_frees_it(open_ledger: Any) -> None:
    """A process renewing its call's lease keeps it counted past LEASE_S; `keys release` frees it."""
    ledger = open_ledger()
    limits = QuotaLimits(concurrent=1)
    held = ledger.apply([], [AdmitRequest("team", 1, limits, 0.0)], [], "host:1", DAY_START)[0]
    assert held.ticket is not None
    for beat in range(1, 7):  # six heartbeats, a third of a lease apart: twice the lease in all
        ledger.apply([], [], [held.ticket], "host:1", DAY_START + beat * LEASE_S / 3)
    later = DAY_START + 2 * LEASE_S + 1
    assert ledger.admit("team", 1, limits, 0.0, later).limit == "concurrent"
    [shown] = ledger.in_flight("team", 1, later)
    assert (shown["ticket"], shown["holder"]) == (held.ticket, "host:1")
    assert ledger.release("team", 1) == 1
    assert ledger.admit("team", 1, limits, 0.0, later).admitted


def test_one_batch_settles_then_admits_in_order(open_ledger: Any) -> None:
    ledger = open_ledger()
    limits = QuotaLimits(concurrent=2, daily_usd=1.0)
    first = ledger.admit("team", 1, limits, 0.5, DAY_START)
    assert first.ticket is not None
    results = ledger.apply([SettleRequest("team", 1, first.ticket, 0.25)],
                           [AdmitRequest("team", 1, limits, 0.5) for _ in range(3)], [], "h", DAY_START + 1)
    # $0.25 spent: two calls of $0.5 do not fit together, and only two may be in flight.
    assert [r.admitted for r in results] == [True, False, False]
    assert [r.limit for r in results[1:]] == ["daily_usd", "daily_usd"]


def test_keys_and_tenants_count_apart(open_ledger: Any) -> None:
    ledger = open_ledger()
    limits = QuotaLimits(rpm=1)
    assert ledger.admit("team", 1, limits, 0.0, DAY_START).admitted
    assert ledger.admit("team", 2, limits, 0.0, DAY_START).admitted
    assert ledger.admit("other", 1, limits, 0.0, DAY_START).admitted
    assert ledger.admit("team", 1, limits, 0.0, DAY_START).limit == "rpm"
    assert {(u["tenant"], u["key_id"]) for u in ledger.usage("*", DAY_START)} == {
        ("team", 1), ("team", 2), ("other", 1)}
    assert [u["key_id"] for u in ledger.usage("other", DAY_START)] == [1]
