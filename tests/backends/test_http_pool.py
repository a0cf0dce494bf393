"""The pooled HTTP client's connections: reused while the provider keeps them, dropped once it hangs up."""

from __future__ import annotations

import anyio
import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.providers.glm import make_glm_oracle
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


async def test_a_client_is_still_made_when_the_pools_internals_are_laid_out_otherwise(
    fp: FakeProvider, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quick idle check reaches into httpcore2's private modules; an httpcore2 release that moves
    them leaves the pool with its own checks, and calls still work."""
    import sys

    from ask_fable.backends import http_pool

    monkeypatch.setitem(sys.modules, "httpcore2._backends.auto", None)  # importing it fails
    http_pool._backend_class.cache_clear()
    try:
        fp.enqueue("anthropic", text="Answered anyway.")
        resources = Resources()
        oracle = make_glm_oracle(load_settings(glm_api_key="sk-pool-0123456789", glm_base_url=fp.base_url),
                                 resources=resources)
        try:
            with anyio.fail_after(10):
                request = OracleRequest(system="s", prompt="Is it safe?", timeout=10)
                reply = await oracle.ask(request, EventSink())
        finally:
            await resources.aclose()
        assert reply.text == "Answered anyway."
    finally:
        http_pool._backend_class.cache_clear()
