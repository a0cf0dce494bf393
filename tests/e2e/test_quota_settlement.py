"""A settlement the quota store could not take (a database blip) is kept and retried until it lands:
the call's cost is still counted, and its place in flight is not renewed meanwhile. The local
caller's quota (``local_quota``) through an in-process MCP client, against the fake provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.stores.interfaces import GivenStores
from ask_fable.stores.quotas import QuotaLedger
from ask_fable.stores.views import Admission
from ask_fable.surface.server import build_server
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

