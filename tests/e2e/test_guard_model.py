"""The guard's model stage at the wire: a safety model on the fake provider, reached through an MCP client.

ASK_FABLE_GUARD_MODEL names the model; the fake's Ollama side answers in Llama Guard's own format
(``safe``, or ``unsafe`` and category codes), its OpenAI-compatible side as a prompted general model.
"""

from __future__ import annotations

from typing import Any

from mcp import Client

from ask_fable.surface.server import build_server
from tests.e2e.helpers import structured, wired_app
from tests.fakes.fake_provider import FakeProvider

LLAMA_GUARD = "ollama:llama-guard3:8b"
#: Ordinary engineering the local judge lets through; the tests script what the guard model says of it.
QUESTION = "Our webhook handler retries failed payments three times; should the backoff be exponential?"
OTHER = "Which index should the orders table have for the nightly revenue report?"


async def _events(client: Client, trace_id: str) -> list[dict[str, Any]]:
    trace = await structured(client, "trace_get", {"trace_id": trace_id})
    events: list[dict[str, Any]] = trace["trace"]["events"]
    return events


async def test_llama_guard_verdicts_refuse_or_pass_and_are_remembered_by_question(fp: FakeProvider) -> None:
    fp.enqueue("ollama", text="\n\nunsafe\nS2,S14", match="llama-guard3:8b")
    fp.enqueue("ollama", text="safe", match="llama-guard3:8b")
    app = wired_app(fp, ollama_base_url=fp.base_url, guard_model=LLAMA_GUARD)
    async with Client(build_server(app, toolsets=["all"])) as client:
        refused = await structured(client, "ask_glm", {"question": QUESTION})
        again = await structured(client, "ask_glm", {"question": QUESTION})
        answered = await structured(client, "ask_glm", {"question": OTHER})
        refused_events = await _events(client, refused["trace_id"])
        again_events = await _events(client, again["trace_id"])
        answered_events = await _events(client, answered["trace_id"])

    assert (refused["status"], refused["stage"], refused["rule"]) == ("refused", "guard", "guard_model")
    assert refused["reason"] == (
        "The guard model judged the question unsafe (S2 non-violent crimes, S14 code interpreter abuse)."
    )
    assert "safety model" in refused["how_to_reframe"]
    assert (again["status"], again["rule"]) == ("refused", "guard_model")
    assert answered["status"] == "ok" and answered["answer"]

    # Llama Guard is sent the question alone, in one user message, for its own template to wrap.
    asked = fp.requests_for("ollama")
    assert len(asked) == 2, "the repeated question was answered from the remembered verdict"
    expected = [[{"role": "user", "content": q}] for q in (QUESTION, OTHER)]
    assert [r.json["messages"] for r in asked] == expected
    # Only the question it passed reached the answering model.
    sent = [r.body.decode() for r in fp.requests_for("anthropic")]
    assert len(sent) == 1 and OTHER in sent[0]

    [verdict] = [e["attrs"] for e in refused_events if e["name"] == "guard.model"]
    assert verdict == {"token": LLAMA_GUARD, "allowed": False, "rule": "guard_model",
                       "categories": ["S2", "S14"]}
    [guard_call] = [e["attrs"] for e in refused_events if e["name"] == "provider.end"]
    assert (guard_call["role"], guard_call["status"], guard_call["provider"]) == ("guard", "ok", "ollama")
    assert "elapsed_ms" in guard_call and guard_call["input_tokens"] > 0
    [cached] = [e["attrs"] for e in again_events if e["name"] == "guard.model"]
    assert cached["cached"] is True and not [e for e in again_events if e["name"] == "provider.start"]
    roles = [e["attrs"].get("role") for e in answered_events if e["name"] == "provider.end"]
    assert roles == ["guard", None]


async def test_a_guard_model_that_fails_refuses_when_closed_and_warns_when_open(fp: FakeProvider) -> None:
    missing = "model 'llama-guard3:8b' not found, try pulling it first"
    fp.enqueue("ollama", status=404, error=missing, times=None)
    closed = wired_app(fp, ollama_base_url=fp.base_url, guard_model=LLAMA_GUARD)
    async with Client(build_server(closed, toolsets=["all"])) as client:
        refused = await structured(client, "ask_glm", {"question": QUESTION})
    assert (refused["status"], refused["kind"], refused["rule"]) == ("refused", "guard_unavailable",
                                                                     "guard_unavailable")
    assert "not found" in refused["detail"]
    assert "ASK_FABLE_GUARD_MODEL_ON_FAILURE" in refused["how_to_reframe"]
    assert fp.requests_for("anthropic") == []

    opened = wired_app(fp, ollama_base_url=fp.base_url, guard_model=LLAMA_GUARD,
                       guard_model_on_failure="open")
    async with Client(build_server(opened, toolsets=["all"])) as client:
        let_through = await structured(client, "ask_glm", {"question": QUESTION})
        again = await structured(client, "ask_glm", {"question": QUESTION})
    assert let_through["status"] == "ok" and let_through["answer"]
    [warning] = let_through["warnings"]
    assert LLAMA_GUARD in warning and "not found" in warning and "local guard alone" in warning
    assert again["status"] == "ok" and again["warnings"] == [warning], "a failure is never remembered"
    assert len(fp.requests_for("anthropic")) == 2


async def test_a_general_model_is_given_the_rules_and_its_cost_is_counted(fp: FakeProvider) -> None:
    fp.enqueue("openai", text="unsafe exploit_development", usage={"cost": 0.0004}, match="openai/gpt-5-nano")
    app = wired_app(fp, openrouter_api_key="or-test-key-0123456789",
                    openrouter_base_url=f"{fp.base_url}/api/v1", guard_model="openrouter:openai/gpt-5-nano")
    async with Client(build_server(app, toolsets=["all"])) as client:
        refused = await structured(client, "ask_glm", {"question": QUESTION})
        stats = await structured(client, "stats", {"by": "tool"})
    assert (refused["status"], refused["rule"]) == ("refused", "exploit_development")
    assert refused["reason"].endswith("(the guard model's verdict).")
    [asked] = fp.requests_for("openai")
    system, user = asked.json["messages"]
    assert system["role"] == "system" and "`unsafe <rule>`" in system["content"]
    assert all(rule in system["content"] for rule in ("attack_tooling", "fraud", "denial_of_service"))
    assert user["content"].endswith(f"<question>\n{QUESTION}\n</question>")
    assert fp.requests_for("anthropic") == []
    [bucket] = stats["buckets"]
    assert bucket["refused"] == 1 and bucket["cost_usd"] == 0.0004
