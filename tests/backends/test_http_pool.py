"""The pooled HTTP client's connections: reused while the provider keeps them, dropped once it hangs up."""

from __future__ import annotations

import anyio

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.http_oracles import make_glm_oracle
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from tests.fakes.fake_provider import FakeProvider


async def test_a_connection_the_provider_closed_while_idle_is_dropped_not_retried(fp: FakeProvider) -> None:
    """A provider that closes a pooled connection between two calls (its keep-alive ran out) costs the
    next call nothing: the pool sees the connection is gone and opens a new one, with no failed
    attempt and no retry."""
    fp.enqueue("anthropic", text="Pooled answer.", times=None)
    resources = Resources()
    oracle = make_glm_oracle(load_settings(glm_api_key="sk-pool-0123456789", glm_base_url=fp.base_url),
                             resources=resources)
    retries: list[str] = []
    sink = EventSink(on_retry=lambda attempt, cause, delay: retries.append(cause))
    request = OracleRequest(system="s", prompt="Is it safe?", timeout=10)
    try:
        with anyio.fail_after(10):
            assert (await oracle.ask(request, sink)).text == "Pooled answer."
            assert (await oracle.ask(request, sink)).text == "Pooled answer."
            while fp.hang_up_idle() == 0:  # the one pooled connection, once its handler is waiting
                await anyio.sleep(0.01)
            while fp.hang_up_idle():  # gone on the server's side
                await anyio.sleep(0.01)
            assert (await oracle.ask(request, sink)).text == "Pooled answer."
    finally:
        await resources.aclose()
    ports = [r.client_port for r in fp.requests_for("anthropic")]
    assert len(ports) == 3 and ports[0] == ports[1] != ports[2]
    assert retries == []
