"""The ``claude -p`` bridge: one Claude Code process per turn, prompt on stdin, JSON result on stdout.

Used when ``ASK_FABLE_USE_CLI`` is on, or when the Agent SDK cannot start a conversation. The
process runs through the shared subprocess runner (own process group, allow-listed environment,
the App's per-binary gate, hard timeout). Every run passes ``--no-session-persistence``, so Claude
Code keeps no transcript of it: a conversation's earlier exchanges, kept in ask-fable's own store,
are folded into the prompt instead. The JSON result carries no reasoning, so ``Reply.thinking`` is
empty on this route.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ask_fable.backends.base import OracleRequest, Reply
from ask_fable.backends.claude_common import (
    CLAUDE_ENV_ALLOW,
    PROVIDER,
    StderrTail,
    classify_failure,
    claude_cli_env,
    redact_text,
    usage_from,
    with_stderr,
    workdir,
)
from ask_fable.errors import AskFableError, UpstreamError

if TYPE_CHECKING:
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

__all__ = ["CLAUDE_ENV_ALLOW", "bridge_argv", "bridge_env", "cli_ask"]

MAX_OUTPUT_BYTES = 32 * 1024 * 1024


def bridge_argv(cli: str, model: str, system: str) -> list[str]:
    """The ``claude -p`` command line for one turn (the prompt itself goes to stdin)."""
    return [
        cli, "-p", "--output-format", "json", "--model", model, "--system-prompt", system,
        "--max-turns", "1", "--tools", "", "--setting-sources", "", "--no-session-persistence",
    ]


def bridge_env() -> dict[str, str]:
    """The bridge's environment: allow-listed variables plus the traffic and retry flags."""
    return claude_cli_env()


async def cli_ask(
    settings: Settings,
    model: str,
    request: OracleRequest,
    *,
    resources: Resources,
    timeout: float | None = None,
) -> Reply:
    """One turn through ``claude -p``, the request's earlier exchanges folded into its prompt."""
    from ask_fable.backends.claude_sdk import resolve_cli_path
    from ask_fable.backends.subprocess_runner import run_process

    cli = await resolve_cli_path(settings, resources)
    result = await run_process(
        bridge_argv(cli, model, request.system),
        stdin=request.folded_prompt().encode("utf-8"),
        env=bridge_env(),
        timeout=timeout if timeout is not None else request.timeout,
        gates=resources.gates,
        gate="claude",
        gate_limit=settings.cli_max_parallel,
        max_output_bytes=MAX_OUTPUT_BYTES,
        cwd=str(workdir(settings)),
    )
    tail = StderrTail(settings)
    tail.feed(result.stderr)
    payload = _parse(result.stdout)
    if payload is None:
        raise UpstreamError(
            with_stderr(f"`claude -p` exited with code {result.returncode} and no JSON result", tail)
        )
    if payload.get("is_error") or result.returncode != 0:
        raise _bridge_error(payload, model, result.returncode, tail, settings)
    text = str(payload.get("result") or "").strip()
    if not text:
        raise UpstreamError(f"{model} returned an empty answer")
    return Reply(
        text=text,
        model=model,
        provider=PROVIDER,
        usage=usage_from(payload.get("usage"), payload.get("total_cost_usd")),
        session_id=payload.get("session_id"),
        routed_via="claude-cli",
    )


def _parse(stdout: bytes) -> dict[str, Any] | None:
    # The result is the last JSON object the CLI printed.
    for line in reversed(stdout.decode("utf-8", "replace").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


def _bridge_error(
    payload: dict[str, Any], model: str, returncode: int, tail: StderrTail, settings: Settings
) -> AskFableError:
    status = payload.get("api_error_status")
    message = payload.get("result") or "; ".join(payload.get("errors") or []) or payload.get("subtype")
    detail = redact_text(f"{model}: {message}", settings)
    known = classify_failure(detail, status=status, error_type=payload.get("api_error_type"), message=message)
    if known is not None:
        return known
    label = f"HTTP {status}" if status else f"exit code {returncode}"
    return UpstreamError(with_stderr(f"`claude -p` reported an error ({label}): {detail}", tail))
