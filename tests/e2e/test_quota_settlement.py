"""A call's quota is settled in the store call that writes its records (on one PostgreSQL database, in
their transaction). A settlement the quota store could not take (a database blip) is kept and
retried until it lands: the call's cost is still counted, and its place in flight is not renewed
meanwhile. The local caller's quota (``local_quota``) through an in-process MCP client, against the
fake provider."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.stores.db import database_for
from ask_fable.stores.interfaces import GivenStores
from ask_fable.stores.quotas import QuotaLedger
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.views import Admission, AdmitRequest, SettleRequest
from ask_fable.surface.server import build_server
from tests.conftest import StoreBackend
from tests.e2e.test_mode_tools import answer, http_settings
from tests.fakes.fake_provider import FakeProvider


class BlippingLedger(QuotaLedger):
    """The quota store, failing the first batch that settles a call (as a database restart would)."""

    blips = 1

    def apply(self, settles: Any, admits: Any, renew: Any, holder: str, now: float,
              lease_s: float = 30.0) -> list[Admission]:
        if settles and self.blips:
            self.blips -= 1
            raise ConnectionError("database restarting")
        return super().apply(settles, admits, renew, holder, now, lease_s)


async def test_a_failed_settlement_is_retried_until_its_cost_is_counted(fp: FakeProvider,
                                                                       tmp_path: Path) -> None:
    ledger = BlippingLedger(tmp_path / "quotas.db")
    settings = load_settings(**http_settings(fp, local_quota=True, max_tokens=1000,
                                             prices='{"glm": {"input_per_m": 0, "output_per_m": 100}}'))
    app = App(settings, stores=GivenStores(quotas=ledger))
    fp.enqueue("anthropic", text=answer("Use a queue."), match="glm-5.2", usage={"input_tokens": 10,
                                                                                 "output_tokens": 100})
    fp.enqueue("anthropic", text=answer("Keep the lock."), match="glm-5.2", usage={"input_tokens": 10,
                                                                                   "output_tokens": 200})
    async with Client(build_server(app, toolsets=["all"])) as client:
        first = (await client.call_tool("ask_glm", {"question": "Poll or queue?"})).structured_content
        assert first is not None and first["status"] == "ok", first
        [usage] = ledger.usage("local", app.clock.now())
        # The settlement failed: nothing counted yet, and the call no longer renewed.
        assert usage["calls_today"] == 0 and app.quota_batcher.unsettled and not app.quota_batcher.live
        second = (await client.call_tool("ask_glm", {"question": "Lock or not?"})).structured_content
        assert second is not None and second["status"] == "ok", second
    [usage] = ledger.usage("local", app.clock.now())
    assert usage["calls_today"] == 2 and usage["in_flight"] == 0
    assert usage["spent_usd_today"] == round(first["cost_usd"] + second["cost_usd"], 6) == 0.03
    await app.aclose()



class CountingApp(App):
    """The App, counting the store calls (worker-thread hops) its calls make."""

    hops = 0

    async def run_store(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.hops += 1
        return await super().run_store(fn, *args, **kwargs)


async def test_a_call_is_settled_in_the_store_call_that_writes_its_records(
        fp: FakeProvider, store_backend: StoreBackend) -> None:
    settings = load_settings(**http_settings(fp, local_quota=True, max_tokens=1000,
                                             prices='{"glm": {"input_per_m": 0, "output_per_m": 100}}'))
    app = CountingApp(settings)
    fp.enqueue("anthropic", text=answer("Use a queue."), match="glm-5.2", times=None,
               usage={"input_tokens": 10, "output_tokens": 100})
    async with Client(build_server(app, toolsets=["all"])) as client:
        await client.call_tool("ask_glm", {"question": "Warm up?"})
        before = app.hops
        result = (await client.call_tool("ask_glm", {"question": "Poll or queue?"})).structured_content
        hops = app.hops - before
    assert result is not None and result["status"] == "ok", result
    # One store call admits the call, one writes its records and settles it.
    assert hops == 2
    [usage] = app.quotas.usage("local", app.clock.now())
    assert usage["calls_today"] == 2 and usage["in_flight"] == 0 and usage["spent_usd_today"] == 0.02
    assert not app.quota_batcher.unsettled and not app.quota_batcher.live
    if store_backend.url is not None:
        # On one PostgreSQL database the records and the settlement are one transaction.
        import psycopg

        with psycopg.connect(store_backend.url) as conn:
            trace_xid = conn.execute("SELECT xmin::text FROM ask_fable_traces.traces WHERE trace_id = %s",
                                     (result["trace_id"],)).fetchone()
            day_xid = conn.execute("SELECT xmin::text FROM ask_fable_quotas.quota_days").fetchone()
        assert trace_xid is not None and trace_xid == day_xid
    await app.aclose()


class FailingInTransaction(QuotaLedger):
    """The quota store on the App's own database, its first settlement failing inside the
    transaction it shares with the call's records (as a statement the server rejects would)."""

    blips = 1

    def apply(self, settles: Any, admits: Any, renew: Any, holder: str, now: float,
              lease_s: float = 30.0) -> list[Admission]:
        if settles and self.blips:
            self.blips -= 1
            self.db.run_write(lambda conn: conn.exec_driver_sql("SELECT 1 / 0").all())
        return super().apply(settles, admits, renew, holder, now, lease_s)


async def test_a_settlement_failing_in_the_records_transaction_keeps_the_records_and_lands_once(
        fp: FakeProvider, store_backend: StoreBackend) -> None:
    settings = load_settings(**http_settings(fp, local_quota=True, max_tokens=1000,
                                             prices='{"glm": {"input_per_m": 0, "output_per_m": 100}}'))
    resources = Resources()
    ledger = FailingInTransaction(database_for(settings, "quotas", settings.quotas_db,
                                               engines=resources.engines))
    app = App(settings, stores=GivenStores(quotas=ledger), resources=resources)
    fp.enqueue("anthropic", text=answer("Use a queue."), match="glm-5.2", times=None,
               usage={"input_tokens": 10, "output_tokens": 100})
    async with Client(build_server(app, toolsets=["all"])) as client:
        first = (await client.call_tool("ask_glm", {"question": "Poll or queue?"})).structured_content
        assert first is not None and first["status"] == "ok", first
        # The second call's quota work retries what did not land (on SQLite: the first settlement).
        second = (await client.call_tool("ask_glm", {"question": "Lock or not?"})).structured_content
        assert second is not None and second["status"] == "ok", second
    [usage] = ledger.usage("local", app.clock.now())
    assert usage["calls_today"] == 2 and usage["in_flight"] == 0 and usage["spent_usd_today"] == 0.02
    traces = app.traces.list("local")
    assert sorted(t.trace_id for t in traces) == sorted([first["trace_id"], second["trace_id"]])
    assert all(t.status == "ok" for t in traces)
    await app.aclose()


class StalledLedger(QuotaLedger):
    """The quota store, its next batch held until released and then failing (a database going away
    while it runs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stalling = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def apply(self, settles: Any, admits: Any, renew: Any, holder: str, now: float,
              lease_s: float = 30.0) -> list[Admission]:
        if admits and self.stalling:
            self.entered.set()
            self.release.wait(10)
            raise ConnectionError("database went away")
        return super().apply(settles, admits, renew, holder, now, lease_s)


async def test_a_settlement_handed_back_while_a_batch_fails_is_still_retried(tmp_path: Path) -> None:
    """A settlement the record writer hands back while the quota batcher's batch runs is kept when that
    batch fails, and lands with the next one."""
    ledger = StalledLedger(tmp_path / "quotas.db")
    app = App(load_settings(local_quota=True), stores=GivenStores(quotas=ledger))
    admitted = ledger.admit("local", 0, QuotaLimits(concurrent=5), 0.0, app.clock.now())
    assert admitted.ticket is not None
    handed = SettleRequest("local", 0, admitted.ticket, 0.01)
    ledger.stalling = True

    async def admit() -> None:
        with pytest.raises(ConnectionError):
            await app.quota_batcher.admit(AdmitRequest("local", 0, QuotaLimits(concurrent=5), 0.0))

    async with anyio.create_task_group() as group:
        group.start_soon(admit)
        await anyio.to_thread.run_sync(ledger.entered.wait, 10)
        app.keep_unsettled([handed])  # the record writer's settlement did not land
        ledger.release.set()
    assert app.quota_batcher.unsettled == [handed]
    await app.quota_batcher.heartbeat()
    [usage] = ledger.usage("local", app.clock.now())
    assert usage["in_flight"] == 0 and usage["calls_today"] == 1 and usage["spent_usd_today"] == 0.01
    assert not app.quota_batcher.unsettled
    await app.aclose()
