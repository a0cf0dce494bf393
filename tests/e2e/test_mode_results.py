"""What council, chain and debate results say at their edges, through the MCP client: the council's
bound keeps the synthesis, empty model lists, Fable's place in the panel, nullable fields, the
next action, and failure details."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_mode_tools import KEY, answer, call, http_settings
from tests.fakes.fake_cli import install_fake_clis, stdin_bytes
from tests.fakes.fake_provider import FakeProvider, Reply
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env

#: A council bound small enough for a test; members are cut at two thirds of it.
BOUND = 3.0
#: Room for a loaded machine on top of the bound (never a timing assertion, only a ceiling).
SLACK = 12.0
NO_CLAUDE = "/nonexistent/claude"


def _source(result: dict[str, Any], token: str) -> dict[str, Any]:
    return next(s for s in result["sources"] if s["token"] == token)


@pytest.mark.parametrize(
    ("tool", "arguments", "synthesizer", "route"),
    [
        ("ask_council", {"models": ["ollama:alpha", "ollama:bravo", "ollama:hang"], "synthesizer": "glm"},
         "glm", "anthropic"),
        ("ask_atlas_council", {"models": ["a/alpha", "b/bravo", "c/hang"]},
         "atlas:openai/gpt-5.6-sol", "openai"),
    ],
)
async def test_council_bound_cancels_a_hung_member_and_still_synthesizes(
    fp: FakeProvider, tool: str, arguments: dict[str, Any], synthesizer: str, route: str,
) -> None:
    """Members still running at two thirds of ASK_FABLE_COUNCIL_TIMEOUT are cancelled as timeouts,
    and the answers in are synthesized inside the bound; every synthesis field says so."""
    members_route = "ollama" if tool == "ask_council" else "openai"
    hung = "hang:cloud" if tool == "ask_council" else "c/hang"
    fp.enqueue(members_route, hang=True, match=hung)
    judge_model = "glm-5.2" if route == "anthropic" else "openai/gpt-5.6-sol"
    fp.enqueue(route, text=answer("Synthesis: keep the lock.", "apply", "high"), match=judge_model)
    settings = http_settings(fp, council_timeout=BOUND, claude_cli=NO_CLAUDE)
    with anyio.fail_after(BOUND + SLACK):
        result = await call(tool, {"question": "Should the lock stay?", **arguments}, settings)
    assert result["status"] == "ok", result
    assert result["quorum"] == "2/3" and result["degraded"] is True
    late = next(s for s in result["sources"] if s["model"] == hung)
    assert late["status"] == "timeout" and late["kind"] == "timeout"
    assert "cancelled" in late["detail"] and "synthesized" in late["detail"]
    assert result["answer"] == "Synthesis: keep the lock."
    assert result["synthesizer"] == synthesizer
    assert result["synthesis"]["used"] == synthesizer
    assert result["synthesis"]["tried"][-1] == {"token": synthesizer, "status": "ok"}
    assert "note" not in result
    assert result["confidence"] == "medium"  # strong consensus, capped by the missing member
    assert result["recommended_next_action"].startswith("The panel agrees (apply): act on the synthesis.")
    judged = [r for r in fp.requests_for(route) if r.model == judge_model]
    assert len(judged) == 1 and "Expert B" in json.dumps(judged[0].json)


async def test_council_without_a_synthesis_says_so_in_every_field(fp: FakeProvider) -> None:
    """When every synthesizer fails, the best member answer comes back and no field claims a synthesis."""
    fp.enqueue("ollama", text=answer("Alpha: keep the lock.", "apply", "high"), match="alpha:cloud")
    fp.enqueue("ollama", text=answer("Bravo: keep the lock.", "apply", "medium"), match="bravo:cloud")
    fp.enqueue("anthropic", status=400, error="synthesis request rejected", match="glm-5.2")
    settings = http_settings(fp, claude_cli=NO_CLAUDE)
    result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                        "models": ["ollama:alpha", "ollama:bravo"], "synthesizer": "glm"},
                        settings)
    assert result["status"] == "ok", result
    assert "synthesizer" in result and result["synthesizer"] is None
    assert result["synthesis"]["fallback"] is True and "used" not in result["synthesis"]
    assert [t["token"] for t in result["synthesis"]["tried"]] == ["glm", "fable", "opus"]
    assert result["answer"] == "Alpha: keep the lock."
    assert "every synthesizer failed" in result["note"] and "unsynthesized" in result["note"]
    assert "synthesis" not in result["recommended_next_action"]
    assert "not synthesized" in result["recommended_next_action"]
    assert result["confidence"] == "low"



async def test_council_with_one_answer_says_why_no_synthesis_ran(fp: FakeProvider) -> None:
    """One member answers and the other fails: its answer comes back as it came, and ``note`` says
    there was nothing to synthesize and why the other member is missing."""
    fp.enqueue("ollama", text=answer("Alpha: keep the lock.", "apply", "high"), match="alpha:cloud")
    fp.enqueue("ollama", status=400, error="model bravo rejected the request", match="bravo:cloud")
    settings = http_settings(fp, claude_cli=NO_CLAUDE)
    result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                        "models": ["ollama:alpha", "ollama:bravo"], "synthesizer": "glm"},
                        settings)
    assert result["status"] == "ok", result
    assert result["synthesizer"] is None and result["quorum"] == "1/2"
    assert result["answer"] == "Alpha: keep the lock."
    note = result["note"]
    assert "only ollama:alpha:cloud answered" in note and "no synthesis ran" in note
    assert "ollama:bravo:cloud: upstream_error" in note
    assert result["confidence"] == "low"
    assert "synthesis" not in result["recommended_next_action"]
    assert "one opinion" in result["recommended_next_action"]
    assert not [r for r in fp.requests_for("anthropic") if r.model == "glm-5.2"], "no synthesizer was asked"

    fp.enqueue("ollama", text=answer("Alpha again.", "apply", "high"), match="alpha:cloud")
    alone = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                       "models": ["ollama:alpha"]}, settings)
    assert alone["status"] == "ok" and "a council of one member" in alone["note"]


async def test_reset_session_keeps_the_session_key_in_the_file_name(fp: FakeProvider) -> None:
    """``<model>+<key>-<ts>.md`` holds the key as given; only what a file name cannot hold is escaped."""
    fp.enqueue("anthropic", text=answer("Cache the cost per request."), times=2)
    settings = http_settings(fp, claude_cli=NO_CLAUDE)
    saved = []
    for key in ("cost-askNone", "team/cost"):
        asked = await call("ask", {"question": "Where does the cost of a request go?", "model": "deepseek",
                                   "session": key}, settings)
        assert asked["status"] == "ok", asked
        reset = await call("reset_session", {"session": key, "model": "deepseek", "save": True}, settings)
        assert reset["status"] == "ok" and reset["cleared"] is True, reset
        saved.append(Path(reset["saved"]).name)
    assert re.fullmatch(r"deepseek\+cost-askNone-\d{8}T\d{12}Z\.md", saved[0]), saved
    assert re.fullmatch(r"deepseek\+team%2Fcost-\d{8}T\d{12}Z\.md", saved[1]), saved


@pytest.mark.parametrize(("model", "binary"), [("grok", "grok"), ("kimi", "kimi"), ("codex", "codex")])
async def test_a_cli_model_that_is_not_installed_says_how_to_install_it_in_hint(
        fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, binary: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no CLI anywhere
    result = await call("ask", {"question": "Is this lock order safe?", "model": model},
                        http_settings(fp, claude_cli=NO_CLAUDE))
    assert (result["status"], result["kind"]) == ("error", "binary_missing")
    assert binary in result["hint"] and "install" in result["hint"]

EMPTY_CASES = [
    ("ask_council", {"models": []}),
    ("ask_council", {"models": ["  "]}),
    ("ask_council", {"tier": ""}),
    ("ask_council", {"tier": " "}),
    ("ask_ollama_council", {"models": []}),
    ("ask_atlas_council", {"models": []}),
    ("ask_openrouter_council", {"models": []}),
    ("ask_chain", {"pipeline": ""}),
    ("ask_chain", {"pipeline": []}),
    ("ask_chain", {"models": []}),
    ("ask_council", {"models": ["glm"], "synthesizer": ""}),
    ("ask_openrouter_council", {"models": ["openai/gpt-5"], "synthesizer": " "}),
    ("ask_atlas_council", {"models": ["deepseek-v4"], "synthesizer": ""}),
    ("ask_ollama", {"model": ""}),
    ("ask_openrouter", {"model": " "}),
    ("ask_atlas", {"model": ""}),
    ("ask", {"model": ""}),
]


@pytest.mark.parametrize(("tool", "arguments"), EMPTY_CASES)
async def test_an_explicitly_empty_model_list_is_bad_args_and_calls_no_model(
    fp: FakeProvider, tool: str, arguments: dict[str, Any]
) -> None:
    """Only an omitted argument means the default (panel, synthesizer or model); an empty one is
    refused before any call."""
    settings = http_settings(fp, openrouter_api_key=KEY, openrouter_base_url=f"{fp.base_url}/api/v1",
                             ollama_council=["minimax-m3"], claude_cli=NO_CLAUDE)
    result = await call(tool, {"question": "Which queue should the workers use?", **arguments}, settings)
    assert result["status"] == "error" and result["kind"] == "bad_args", result
    assert "is empty" in result["detail"] and "omit" in result["detail"]
    assert fp.requests == []


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_fable_answer_is_last_for_a_gpt_judge(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The synthesizer reads Fable's answer last even when a non-Anthropic model judges."""
    for name, value in claude_cli_env(fp.base_url, tmp_path / "claude").items():
        monkeypatch.setenv(name, value)
    clis = install_fake_clis(tmp_path / "bin", names=("codex",))
    monkeypatch.setenv("PATH", f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}")
    fp.default_reply["anthropic"] = Reply(text=answer("FABLE-VIEW: fence the lease.", "apply"))
    fp.enqueue("anthropic", text=answer("GLM-VIEW: keep the lock.", "apply"), match="glm-5.2")
    fp.enqueue("ollama", text=answer("QWEN-VIEW: shard the lock.", "investigate"))
    members = ["fable", "glm", "ollama:qwen3-coder"]
    result = await call("ask_council", {"question": "Should the cache keep its global lock?",
                                        "models": members, "synthesizer": "gpt"}, http_settings(fp))
    assert result["status"] == "ok", result
    assert result["synthesizer"] == "codex" and _source(result, "fable")["status"] == "ok"
    prompt = stdin_bytes(clis.calls("codex")[0]).decode()
    order = [prompt.index(view) for view in ("GLM-VIEW", "QWEN-VIEW", "FABLE-VIEW")]
    assert order == sorted(order)
    assert prompt.index("### Expert C") < order[-1]


@pytest.mark.parametrize("ruled", [False, True])
async def test_decisive_argument_is_null_without_a_ruling(fp: FakeProvider, ruled: bool) -> None:
    """``debate.decisive_argument`` is always present: the ruling's argument, or null when nobody ruled."""
    claims = '```claims\n[{"id": "C1", "claim": "Reads dominate 100:1."}]\n```'
    if ruled:
        scenario = "a nightly batch import writes 40M rows and holds the lock for an hour, stalling reads"
        contest = {"id": "C1", "disposition": "contest", "scenario": scenario}
        opponent = f"```dispositions\n{json.dumps([contest])}\n```"
    else:
        opponent = ('```dispositions\n[{"id": "C1", "disposition": "concede", '
                    '"reason": "the access log confirms a read-heavy workload"}]\n```')
    fp.enqueue("anthropic", text=answer(f"Use a read-through cache.\n\n{claims}"), match="glm-5.2")
    fp.enqueue("anthropic", text=answer(f"Review.\n\n{opponent}", "reject"), match="deepseek-v4-pro")
    revision = '```revisions\n[{"id": "C1", "response": "revise", "note": "imports go to a replica"}]\n```'
    fp.enqueue("anthropic", text=answer(f"Revised.\n\n{revision}", "apply"), match="glm-5.2")
    ruling = '```ruling\n{"winner": "B", "decisive_argument": "the batch import breaks C1"}\n```'
    fp.enqueue("ollama", text=answer(f"Shard it.\n\n{ruling}", "investigate"))
    result = await call("ask_debate", {"question": "Cache or not?", "proposer": "glm", "opponent": "deepseek",
                                       "adjudicator": "ollama:gpt-oss:120b-cloud"}, http_settings(fp))
    assert result["status"] == "ok", result
    debate = result["debate"]
    assert "decisive_argument" in debate
    if ruled:
        assert debate["resolution"] == "adjudicated"
        assert debate["decisive_argument"] == "the batch import breaks C1"
    else:
        assert debate["resolution"] == "conceded" and debate["decisive_argument"] is None


async def test_council_with_one_recommendation_says_there_is_no_consensus_to_compute(
    fp: FakeProvider,
) -> None:
    """Three answers but one sidecar: the next action says so instead of claiming no recommendations."""
    fp.enqueue("anthropic", text=answer("GLM: keep it.", "investigate"), match="glm-5.2")
    fp.enqueue("ollama", text="Alpha: prose only, no sidecar.", match="alpha:cloud")
    fp.enqueue("ollama", text="Bravo: prose only, no sidecar.", match="bravo:cloud")
    fp.enqueue("anthropic", text=answer("Synthesis.", "investigate"), match="deepseek-v4-pro")
    result = await call("ask_council", {"question": "Is this retry loop bounded?", "synthesizer": "deepseek",
                                        "models": ["glm", "ollama:alpha", "ollama:bravo"]}, http_settings(fp))
    assert result["status"] == "ok", result
    assert result["quorum"] == "3/3" and result["consensus"] == "unknown"
    action = result["recommended_next_action"]
    assert "Only one of the 3 answers carried a recommendation (investigate)" in action
    assert "no consensus to compute" in action and "machine-readable" not in action


LONG_CAUSE = "CAUSE: the account's monthly quota is exhausted"


def _long_error() -> str:
    return f"request rejected upstream; key {KEY} refused; " + "diagnostic padding " * 60 + LONG_CAUSE


@pytest.mark.parametrize("tool", ["ask_council", "ask_chain", "ask_debate"])
async def test_a_failed_members_detail_keeps_its_cause(fp: FakeProvider, tool: str) -> None:
    """A long provider error is bounded and redacted in sources, stages and turns, with its cause kept."""
    fp.enqueue("anthropic", status=400, error=_long_error(), match="glm-5.2", times=None)
    arguments = {
        "ask_council": {"models": ["glm", "ollama:alpha"], "synthesizer": "deepseek"},
        "ask_chain": {"pipeline": "glm > deepseek"},
        "ask_debate": {"proposer": "deepseek", "opponent": "glm", "adjudicator": "ollama:alpha"},
    }[tool]
    result = await call(tool, {"question": "Is this retry loop bounded?", **arguments},
                        http_settings(fp, claude_cli=NO_CLAUDE))
    assert result["status"] == "ok", result
    steps = {"ask_council": "sources", "ask_chain": "stages", "ask_debate": "turns"}[tool]
    failed = next(s for s in result[steps] if s["status"] == "error")
    assert failed["kind"] == "upstream_error"
    assert failed["detail"].startswith("GLM HTTP 400: request rejected upstream")
    assert LONG_CAUSE in failed["detail"] and "characters cut" in failed["detail"]
    assert KEY not in json.dumps(result)
    assert len(failed["detail"]) <= 1200


@pytest.mark.parametrize("tool", ["ask_council", "ask_chain", "ask_debate"])
async def test_a_model_that_cannot_run_says_how_to_fix_it_in_the_result(
    fp: FakeProvider, tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member without its key (DeepSeek) carries the hint the single-model tool gives, and the next
    action names the fix for it and for a member whose CLI is missing (MiniMax's ``mmx``). (Before, the
    result listed the error but not how to fix it.)"""
    monkeypatch.setenv("PATH", str(tmp_path))  # no `mmx` anywhere
    fp.enqueue("anthropic", text=answer("GLM: bounded.", "apply"), match="glm-5.2", times=None)
    fp.enqueue("ollama", text=answer("Alpha: bounded too.", "apply"), match="alpha:cloud", times=None)
    arguments = {
        "ask_council": {"models": ["glm", "deepseek", "m3", "ollama:alpha"], "synthesizer": "glm"},
        "ask_chain": {"pipeline": "deepseek > m3 > glm"},
        "ask_debate": {"proposer": "glm", "opponent": "deepseek", "adjudicator": "ollama:alpha"},
    }[tool]
    result = await call(tool, {"question": "Is this retry loop bounded?", **arguments},
                        http_settings(fp, claude_cli=NO_CLAUDE, deepseek_api_key=""))
    assert result["status"] == "ok", result
    steps = {"ask_council": "sources", "ask_chain": "stages", "ask_debate": "turns"}[tool]
    keyless = next(s for s in result[steps] if s["status"] == "not_configured")
    assert "ASK_FABLE_DEEPSEEK_API_KEY" in keyless["hint"]
    action = result["recommended_next_action"]
    assert "could not run" in action and "ASK_FABLE_DEEPSEEK_API_KEY" in action
    if tool != "ask_debate":
        assert "mmx" in action


@pytest.mark.parametrize("tool", ["ask_council", "ask_atlas_council"])
async def test_a_council_none_of_whose_members_can_run_gives_the_fix(tool: str) -> None:
    """No member can run: the error's hint names each fix once, and every source carries its own."""
    arguments = {"ask_council": {"models": ["deepseek", "glm"]}, "ask_atlas_council": {}}[tool]
    result = await call(tool, {"question": "Is this retry loop bounded?", **arguments},
                        {"deepseek_api_key": "", "glm_api_key": "", "atlas_api_key": "", "cache": False,
                         "hub": False})
    assert (result["status"], result["kind"]) == ("error", "not_configured"), result
    keys = ["ASK_FABLE_DEEPSEEK_API_KEY", "ASK_FABLE_GLM_API_KEY"] if tool == "ask_council" \
        else ["ASK_FABLE_ATLAS_API_KEY"]
    assert all(key in result["hint"] for key in keys)
    assert all(result["hint"].count(key) == 1 for key in keys)
    assert all(source.get("hint") for source in result["sources"])
