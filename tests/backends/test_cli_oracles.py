"""CLI oracles at the process level: exact argv and stdin, env isolation, limits and failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.cli_backends import (
    make_codex_oracle,
    make_gemini_oracle,
    make_grok_oracle,
    make_kimi_oracle,
    make_minimax_oracle,
)
from ask_fable.backends.cli_oracles import ARGV_PROMPT_LIMIT, cli_installed
from ask_fable.config import Settings, load_settings
from ask_fable.errors import (
    BadArgs,
    BinaryMissing,
    ContextTooLarge,
    NotConfigured,
    OracleTimeout,
    UpstreamError,
)
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive, stdin_bytes

NASTY = "--model evil -p; rm -rf ~ `id` $(id) | & > < \\ ' \" \t é 中文 🙂 \x01\x7f\n-x"
SYSTEM = "You are a careful reviewer."


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCLIs:
    """Fake CLIs first on PATH."""
    handle = install_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{handle.bin_dir}{os.pathsep}{os.environ['PATH']}")
    return handle


def _settings(**kw: object) -> Settings:
    return load_settings(**kw)


def _request(prompt: str = NASTY, **kw: object) -> OracleRequest:
    return OracleRequest(system=SYSTEM, prompt=prompt, timeout=kw.pop("timeout", 30), **kw)  # type: ignore[arg-type]


async def test_minimax_argv_and_messages_on_stdin(fakes: FakeCLIs) -> None:
    """mmx gets the model and max tokens as flags and a system+user messages array on stdin."""
    reply = await make_minimax_oracle(_settings(max_tokens=1234)).ask(_request(), EventSink())
    call = fakes.calls("mmx")[0]
    assert call["argv"] == ["text", "chat", "--model", "MiniMax-M3", "--max-tokens", "1234",
                            "--messages-file", "-", "--output", "text", "--quiet", "--non-interactive"]
    assert json.loads(stdin_bytes(call)) == [{"role": "system", "content": SYSTEM},
                                             {"role": "user", "content": NASTY}]
    assert reply.text.startswith("Answer from mmx.") and "```sidecar" in reply.text
    assert (reply.model, reply.provider) == ("MiniMax-M3", "minimax")


async def test_gemini_prompt_travels_in_p_byte_identical(fakes: FakeCLIs) -> None:
    """agy gets --model and the composed prompt as one -p value, stdin empty."""
    oracle = make_gemini_oracle(_settings(gemini_model="Gemini X (High)"))
    reply = await oracle.ask(_request(), EventSink())
    call = fakes.calls("agy")[0]
    assert call["argv"] == ["--model", "Gemini X (High)", "-p", f"{SYSTEM}\n\n{NASTY}"]
    assert call["stdin_len"] == 0
    assert (reply.model, reply.provider, oracle.family) == ("Gemini X (High)", "gemini", "google")


async def test_codex_is_hermetic_read_only_with_prompt_on_stdin(fakes: FakeCLIs, tmp_path: Path) -> None:
    """codex exec gets the hermetic flags, model, reasoning and the prompt on stdin, in an empty dir."""
    oracle = make_codex_oracle(_settings(codex_model="gpt-x", codex_reasoning="medium"))
    reply = await oracle.ask(_request(), EventSink())
    call = fakes.calls("codex")[0]
    assert call["argv"] == ["exec", "--ignore-user-config", "--sandbox", "read-only", "--skip-git-repo-check",
                            "--ephemeral", "--color", "never", "-m", "gpt-x",
                            "-c", "model_reasoning_effort=medium", "-"]
    assert stdin_bytes(call) == f"{SYSTEM}\n\n{NASTY}".encode()
    assert call["cwd"] != os.getcwd() and not Path(call["cwd"]).exists()
    assert (reply.model, reply.provider, reply.effort) == ("gpt-x", "codex", "medium")


@pytest.mark.parametrize(
    ("effort", "configured", "expected"),
    [(None, None, "low"), ("deep", None, "low"), ("standard", None, "low"), ("quick", "high", "low"),
     ("standard", "high", "medium"), ("deep", "medium", "medium"), ("deep", "high", "high"),
     (None, "medium", "medium"), ("medium", None, "medium"), ("high", "low", "high")],
)
async def test_grok_reasoning_mapping(fakes: FakeCLIs, effort: str | None, configured: str | None,
                                      expected: str) -> None:
    """Presets climb low/medium/high capped at ASK_FABLE_GROK_REASONING (default low); native levels
    pass through; no effort runs at the configured level."""
    oracle = make_grok_oracle(_settings(grok_reasoning=configured), effort=effort)
    reply = await oracle.ask(_request(), EventSink())
    call = fakes.calls("grok")[0]
    assert call["argv"] == ["--model", "grok-4.6", "--reasoning-effort", expected, "--output-format", "text",
                            "--prompt", "-"]
    assert stdin_bytes(call) == f"{SYSTEM}\n\n{NASTY}".encode()
    assert reply.effort == expected and oracle.family == "xai"


def test_grok_accepts_xai_ids_and_rejects_bad_effort() -> None:
    """An xai/ model id is reduced to the CLI's name; an unknown effort is bad_args."""
    assert make_grok_oracle(_settings(), model="xai/grok-9").model == "grok-9"
    with pytest.raises(BadArgs):
        make_grok_oracle(_settings(), effort="ludicrous")


@pytest.mark.parametrize(("effort", "expected"), [(None, "high"), ("quick", "low"), ("standard", "high"),
                                                  ("deep", "max"), ("max", "max"), ("low", "low")])
async def test_kimi_argv_is_text_only_with_home(fakes: FakeCLIs, tmp_path: Path, effort: str | None,
                                                expected: str) -> None:
    """kimi runs --quiet with a tool-less agent, an empty work dir, KIMI_HOME and the mapped effort."""
    fakes.behave("kimi", report_env=["KIMI_HOME"])
    oracle = make_kimi_oracle(_settings(kimi_home=tmp_path / "kh"), effort=effort)
    reply = await oracle.ask(_request(), EventSink())
    call = fakes.calls("kimi")[0]
    argv = call["argv"]
    assert argv[:6] == ["--quiet", "--model", "kimi-code/k3", "--effort", expected, "--agent-file"]
    assert argv[7] == "--work-dir" and argv[9:] == ["--prompt", f"{SYSTEM}\n\n{NASTY}"]
    assert call["stdin_len"] == 0
    assert call["env_values"]["KIMI_HOME"] == str(tmp_path / "kh")
    assert (reply.model, reply.provider, reply.effort, oracle.family) == ("kimi-code/k3", "kimi", expected,
                                                                           "moonshot")


async def test_kimi_request_effort_used_when_tool_gives_none(fakes: FakeCLIs) -> None:
    """A council's per-request effort applies when the oracle was built without one."""
    await make_kimi_oracle(_settings()).ask(_request(effort="quick"), EventSink())
    assert fakes.calls("kimi")[0]["argv"][4] == "low"


async def test_kimi_prompt_near_limit_arrives_intact(fakes: FakeCLIs) -> None:
    """A prompt just under the argv limit is passed whole."""
    prompt = "é" * ((ARGV_PROMPT_LIMIT - len(SYSTEM) - 10) // 2)
    await make_kimi_oracle(_settings()).ask(_request(prompt), EventSink())
    assert fakes.calls("kimi")[0]["argv"][-1] == f"{SYSTEM}\n\n{prompt}"


@pytest.mark.parametrize("factory", [make_kimi_oracle, make_gemini_oracle])
async def test_argv_prompt_over_limit_is_refused_without_spawning(fakes: FakeCLIs, factory: object) -> None:
    """A 200 KB prompt is context_too_large naming an HTTP route, and no process starts."""
    oracle = factory(_settings())  # type: ignore[operator]
    with pytest.raises(ContextTooLarge, match="ask_") as info:
        await oracle.ask(_request("x" * 200_000), EventSink())
    assert info.value.to_result()["kind"] == "context_too_large"
    assert fakes.events(oracle.binary) == []


async def test_large_stdin_prompt_is_fine_for_stdin_clis(fakes: FakeCLIs) -> None:
    """Prompts far above the argv cap go through stdin for codex."""
    prompt = "y" * 2_000_000
    await make_codex_oracle(_settings()).ask(_request(prompt), EventSink())
    assert fakes.calls("codex")[0]["stdin_len"] == len(f"{SYSTEM}\n\n{prompt}".encode())


async def test_only_allow_listed_env_reaches_each_cli(
    fakes: FakeCLIs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys of this server and of other providers never reach a CLI; each CLI's own namespace does."""
    planted = {"ASK_FABLE_GLM_API_KEY": "glm-000000000", "ASK_FABLE_ATLAS_API_KEY": "atl-0000000",
               "OPENROUTER_API_KEY": "or-000000000", "ANTHROPIC_API_KEY": "ant-000000000",
               "AWS_SECRET_ACCESS_KEY": "aws", "MMX_REGION": "global", "CODEX_HOME": "/c", "KIMI_FLAG": "1"}
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    settings = _settings()
    for oracle in (make_minimax_oracle(settings), make_gemini_oracle(settings), make_codex_oracle(settings),
                   make_grok_oracle(settings), make_kimi_oracle(settings)):
        await oracle.ask(_request("hello"), EventSink())
        names = set(fakes.calls(oracle.binary)[0]["env_names"])
        assert not names & {"ASK_FABLE_GLM_API_KEY", "ASK_FABLE_ATLAS_API_KEY", "OPENROUTER_API_KEY",
                            "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "ASK_FABLE_QUIET"}, oracle.binary
        assert "PATH" in names and "HOME" in names
    assert "MMX_REGION" in fakes.calls("mmx")[0]["env_names"]
    assert "CODEX_HOME" in fakes.calls("codex")[0]["env_names"]
    assert "CODEX_HOME" not in fakes.calls("grok")[0]["env_names"]
    assert {"KIMI_FLAG", "KIMI_HOME"} <= set(fakes.calls("kimi")[0]["env_names"])


async def test_missing_binary_names_what_to_install(fakes: FakeCLIs) -> None:
    """No binary on PATH → binary_missing with an install hint, from ensure_available and ask."""
    fakes.remove("codex")
    oracle = make_codex_oracle(_settings())
    assert not cli_installed("codex")
    with pytest.raises(BinaryMissing, match="codex login"):
        oracle.ensure_available()
    with pytest.raises(BinaryMissing) as info:
        await oracle.ask(_request(), EventSink())
    assert info.value.to_result()["kind"] == "binary_missing"


async def test_nonzero_exit_is_upstream_error_with_redacted_stderr(fakes: FakeCLIs) -> None:
    """A failing CLI's stderr is quoted, but configured keys and token shapes are removed."""
    secret = "glm-key-abcdef123456"
    token = "Bearer abc123def456ghi789"
    fakes.behave("grok", exit_code=2, stderr=f"auth failed for {secret}; {token}; key sk-1234567890abcdef\n")
    with pytest.raises(UpstreamError) as info:
        await make_grok_oracle(_settings(glm_api_key=secret)).ask(_request(), EventSink())
    detail = info.value.detail
    assert "status 2" in detail and "auth failed" in detail
    assert secret not in detail and "abc123def456ghi789" not in detail and "sk-1234567890abcdef" not in detail


async def test_empty_answer_is_upstream_error(fakes: FakeCLIs) -> None:
    """Exit 0 with only whitespace on stdout is not an answer."""
    fakes.behave("mmx", answer="  \n", stderr="quota warning\n")
    with pytest.raises(UpstreamError, match="empty answer"):
        await make_minimax_oracle(_settings()).ask(_request(), EventSink())


#: How each CLI really reports a missing, expired or rejected login, and the fix the hint must name.
LOGGED_OUT = {
    "mmx no credentials": (make_minimax_oracle, "mmx", 3,
                           "\nError: No credentials found.\n\n  Log in:          mmx auth login\n",
                           "mmx auth login"),
    "mmx key rejected": (make_minimax_oracle, "mmx", 3,
                         "\nError: API key rejected (HTTP 401).\n\n  Re-authenticate: mmx auth login\n",
                         "mmx auth login"),
    "agy signed out": (make_gemini_oracle, "agy", 1,
                       "E0520 log.go:398] error getting token source: You are not logged into Antigravity.\n",
                       "`agy`"),
    "codex logged out": (make_codex_oracle, "codex", 1, "Error: Not logged in\n", "codex login"),
    "codex token revoked": (make_codex_oracle, "codex", 1,
                            "ERROR: Your access token could not be refreshed because your refresh token was "
                            "revoked. Please log out and sign in again.\n", "codex login"),
    "codex 401": (make_codex_oracle, "codex", 1,
                  "ERROR: exceeded retry limit, last status: 401 Unauthorized, request id: 99438b\n",
                  "codex login"),
    "grok no credentials": (make_grok_oracle, "grok", 1,
                            "Error: No credentials presented. [WKE=unauthenticated:no-credentials]\n",
                            "grok login"),
    "kimi llm not set": (make_kimi_oracle, "kimi", 1, "LLM not set\n", "kimi login"),
    "kimi authorization": (make_kimi_oracle, "kimi", 1,
                           "Authorization failed, please check your login status\n", "kimi login"),
}


@pytest.mark.parametrize("case", list(LOGGED_OUT))
async def test_logged_out_cli_is_not_configured_with_its_login_fix(fakes: FakeCLIs, case: str) -> None:
    """A CLI failing because its login is missing, expired or rejected is not_configured naming its fix."""
    factory, binary, code, stderr, fix = LOGGED_OUT[case]
    fakes.behave(binary, exit_code=code, stderr=stderr)
    with pytest.raises(NotConfigured) as info:
        await factory(_settings()).ask(_request(), EventSink())
    result = info.value.to_result()
    assert result["kind"] == "not_configured" and fix in result["hint"]
    assert stderr.strip().splitlines()[-1].strip() in result["detail"]


async def test_logged_out_cli_with_an_empty_answer_is_not_configured(fakes: FakeCLIs) -> None:
    """Exit 0 with no answer and a sign-in complaint on stderr is a login problem, not an empty answer."""
    fakes.behave("agy", answer="", stderr="You are not logged into Antigravity.\n")
    with pytest.raises(NotConfigured) as info:
        await make_gemini_oracle(_settings()).ask(_request(), EventSink())
    assert "sign-in" in info.value.to_result()["hint"]


async def test_kimi_login_hint_names_the_home_it_runs_with(fakes: FakeCLIs, tmp_path: Path) -> None:
    """kimi's fix logs in to the KIMI_HOME ask-fable hands the CLI."""
    fakes.behave("kimi", exit_code=1, stderr="LLM not set\n")
    with pytest.raises(NotConfigured) as info:
        await make_kimi_oracle(_settings(kimi_home=tmp_path / "kh")).ask(_request(), EventSink())
    assert f"KIMI_HOME={tmp_path / 'kh'} kimi login" in info.value.to_result()["hint"]


async def test_a_prompt_about_auth_echoed_by_a_failing_cli_is_not_a_login_problem(fakes: FakeCLIs) -> None:
    """Lines that merely echo the prompt never count: a failure stays an upstream_error."""
    question = "Why does the gateway answer 401 Unauthorized after the token expired?"
    echo = f"user\n{question}\nERROR: stream disconnected before completion\n"
    fakes.behave("codex", exit_code=1, stderr=echo)
    with pytest.raises(UpstreamError) as info:
        await make_codex_oracle(_settings()).ask(_request(question), EventSink())
    assert "stream disconnected" in info.value.detail


async def test_an_answer_about_auth_is_an_answer(fakes: FakeCLIs) -> None:
    """A successful run is never inspected for login phrases."""
    fakes.behave("grok", answer="Return 401 Unauthorized when the token expired.\n",
                 stderr="warning: not logged in to telemetry\n")
    reply = await make_grok_oracle(_settings()).ask(_request(), EventSink())
    assert reply.text.startswith("Return 401 Unauthorized")


async def test_timeout_uses_the_smaller_deadline_and_leaves_no_orphans(fakes: FakeCLIs) -> None:
    """request.timeout below the backend timeout wins; the hung CLI and its child are gone afterwards."""
    fakes.behave("agy", hang=True, spawn_child=True, ignore_sigterm=True)
    oracle = make_gemini_oracle(_settings(gemini_timeout=300))
    with anyio.fail_after(20), pytest.raises(OracleTimeout):
        await oracle.ask(_request(timeout=1), EventSink())
    pids = [fakes.calls("agy")[0]["pid"], *fakes.child_pids("agy")]
    with anyio.move_on_after(3):
        while any(is_alive(p) for p in pids):
            await anyio.sleep(0.02)
    assert [p for p in pids if is_alive(p)] == []


async def test_backend_timeout_applies_when_smaller(fakes: FakeCLIs) -> None:
    """ASK_FABLE_KIMI_TIMEOUT bounds the call even when the request allows more."""
    fakes.behave("kimi", hang=True)
    with anyio.fail_after(20), pytest.raises(OracleTimeout):
        await make_kimi_oracle(_settings(kimi_timeout=0.5)).ask(_request(timeout=60), EventSink())


async def test_gate_limit_comes_from_settings(fakes: FakeCLIs) -> None:
    """ASK_FABLE_CLI_MAX_PARALLEL=1 serializes calls to one binary."""
    fakes.behave("codex", sleep=0.2)
    oracle = make_codex_oracle(_settings(cli_max_parallel=1))
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(oracle.ask, _request("q"), EventSink())
    assert [c["peers"] for c in fakes.calls("codex")] == [0, 0, 0]


def test_identity_attributes() -> None:
    """Tokens, providers and families are fixed per backend."""
    settings = _settings()
    table = {(o.token, o.provider, o.family, o.binary) for o in (
        make_minimax_oracle(settings), make_gemini_oracle(settings), make_codex_oracle(settings),
        make_grok_oracle(settings), make_kimi_oracle(settings))}
    assert table == {("minimax", "minimax", "minimax", "mmx"), ("gemini", "gemini", "google", "agy"),
                     ("codex", "codex", "openai", "codex"), ("grok", "grok", "xai", "grok"),
                     ("kimi", "kimi", "moonshot", "kimi")}


def test_bad_configured_grok_reasoning_and_kimi_effort_name_the_variable() -> None:
    """A bad configured level is not_configured naming the variable, not the caller's bad_args."""
    from ask_fable.errors import NotConfigured

    with pytest.raises(NotConfigured, match="ASK_FABLE_GROK_REASONING") as grok:
        make_grok_oracle(_settings(grok_reasoning="ludicrous"), effort="quick")
    assert grok.value.kind == "not_configured"
    with pytest.raises(NotConfigured, match="ASK_FABLE_KIMI_EFFORT"):
        make_kimi_oracle(_settings(kimi_effort="turbo"))
    assert make_kimi_oracle(_settings(kimi_effort="turbo"), effort="low").effort == "low"
    with pytest.raises(BadArgs, match="kimi effort"):
        make_kimi_oracle(_settings(), effort="turbo")


def test_grok_accepts_openrouter_x_ai_ids() -> None:
    """OpenRouter's x-ai/ spelling is reduced to the CLI's model name too."""
    assert make_grok_oracle(_settings(), model="x-ai/grok-9").model == "grok-9"
