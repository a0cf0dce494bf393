"""Oracles behind local, already-authenticated CLIs: mmx (MiniMax), agy (Gemini), codex, grok, kimi.

Each oracle builds one invocation — argv, stdin, extra environment — in one small function per
CLI, and runs it through :func:`ask_fable.backends.subprocess_runner.run_process` in an empty
temporary working directory, with an environment allow-listed per CLI and the App's per-binary
gate (``ASK_FABLE_CLI_MAX_PARALLEL``). The server sets no key: each CLI reuses its own login.

Prompt transport: the system text and the prompt are composed into one text (none of these CLIs
gets a separate system prompt except ``mmx``, which takes a messages array); a conversation's
earlier exchanges are folded into that text before the prompt (``mmx`` gets them as messages).
``mmx``, ``codex`` and ``grok`` read it from stdin. ``agy`` and ``kimi`` take it as one argv
value, which the kernel caps at 128 KiB, so prompts over :data:`ARGV_PROMPT_LIMIT` bytes are
refused up front with ``ContextTooLarge`` pointing at an HTTP route, without spawning anything
(a conversation's earlier exchanges are fitted under that bound first).

Outcomes: exit 0 with text → :class:`Reply`; a non-zero exit → ``UpstreamError`` carrying the
CLI's redacted stderr tail; exit 0 with no text → ``UpstreamError``. A failure whose output says the
login is missing, expired or rejected ("not logged in", "unauthorized", "invalid api key", a token
that could not be refreshed…) is ``NotConfigured`` instead, with a ``hint`` naming the CLI's own login
command: it is a configuration state, never a strike against the backend's health.
"""

from __future__ import annotations

import abc
import functools
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.subprocess_runner import BASE_ENV_ALLOW, ProcessResult, build_env, run_process
from ask_fable.errors import BadArgs, BinaryMissing, ContextTooLarge, NotConfigured, UpstreamError
from ask_fable.redact import redact

if TYPE_CHECKING:
    from ask_fable.backends.descriptor import Backend
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

#: Largest composed prompt (UTF-8 bytes) sent as a single argv value; the kernel caps one
#: argument at 131,072 bytes including its terminating NUL.
ARGV_PROMPT_LIMIT = 120_000
#: Largest answer a CLI may print; more than this is treated as a malfunction, not an answer.
MAX_ANSWER_BYTES = 1024 * 1024
#: How much of a failing CLI's stderr is quoted back.
STDERR_TAIL_CHARS = 2000

#: Kimi's levels are low/high/max; presets and other providers' level names map onto them.
KIMI_EFFORTS = {"low": "low", "high": "high", "max": "max", "quick": "low", "standard": "high", "deep": "max",
                "minimal": "low", "medium": "high", "xhigh": "max"}
#: Grok's native levels (other providers' names folded in); presets are handled separately.
GROK_NATIVE_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "minimal": "low", "xhigh": "high",
                       "max": "high"}
#: Grok's levels, lowest first.
GROK_LEVELS = ("low", "medium", "high")
#: The level each preset asks grok for, before ``ASK_FABLE_GROK_REASONING`` caps it.
GROK_PRESET_LEVELS = {"quick": "low", "standard": "medium", "deep": "high"}
EFFORT_PRESETS = ("quick", "standard", "deep")

#: What the CLIs print when their login is missing, expired or rejected (mmx "No credentials found" /
#: "API key rejected" / "OAuth session expired", agy "You are not logged into Antigravity", codex
#: "Not logged in" / "401 Unauthorized" / "Your access token could not be refreshed", grok "No
#: credentials presented" / "unauthenticated", kimi "Authorization failed, please check your login
#: status"), matched case-insensitively on one output line.
AUTH_PHRASES = (
    r"not (?:logged|signed) in",
    r"please (?:log|sign) ?in",
    r"(?:log|sign) ?in again",
    r"check your login",
    r"unauthori[sz]ed",
    r"unauthenticated",
    r"invalid (?:api[ _-]?key|credentials?|(?:access |auth |refresh )?token)",
    r"incorrect api key",
    r"api key (?:was )?(?:rejected|invalid|not valid|expired|revoked)",
    r"no credentials",
    r"(?:token|session|credentials?) (?:has |have |was |were )?(?:expired|been revoked|revoked)",
    r"could not be refreshed",
    r"authentication (?:failed|required|error)",
    r"authori[sz]ation failed",
)

# Instructions for kimi's text-only agent: the agent file declares no tools at all.
_KIMI_AGENT_YAML = """\
version: 1
agent:
  name: ask-fable-text
  system_prompt_path: ./system.md
  tools: []
"""
_KIMI_AGENT_SYSTEM = "Answer in plain text from your own knowledge. You have no tools and no file access.\n"


@dataclass(frozen=True)
class Invocation:
    """One CLI call: the argv (``argv[0]`` is the binary name), stdin bytes and extra env."""

    argv: list[str]
    stdin: bytes | None
    env_extra: dict[str, str] = field(default_factory=dict)


def compose_prompt(system: str, prompt: str) -> str:
    """The single text a CLI without a system-prompt flag receives: system first, then prompt."""
    return f"{system.strip()}\n\n{prompt}" if system.strip() else prompt


def request_text(request: OracleRequest) -> str:
    """The whole request as one text: system, the conversation's earlier exchanges, then the prompt."""
    return compose_prompt(request.system, request.folded_prompt())


# --- argv builders: one per CLI ---------------------------------------------------------------


def mmx_argv(model: str, max_tokens: int) -> list[str]:
    """``mmx text chat``, reading a JSON messages array from stdin, answer as plain text.

    ``--messages-file -`` reads ``[{"role": "system", ...}, {"role": "user", ...}]`` from stdin
    (keeping the system prompt in its own role); ``--output text --quiet`` prints only the answer;
    ``--non-interactive`` fails instead of prompting.
    """
    return ["mmx", "text", "chat", "--model", model, "--max-tokens", str(max_tokens),
            "--messages-file", "-", "--output", "text", "--quiet", "--non-interactive"]


def agy_argv(model: str, prompt: str) -> list[str]:
    """``agy --model <model> -p <prompt>``: non-interactive print mode, plain-text answer on stdout.

    The prompt travels in ``-p`` because print mode is documented only with an argv prompt, so it is
    bounded by :data:`ARGV_PROMPT_LIMIT`.
    """
    return ["agy", "--model", model, "-p", prompt]


def codex_argv(model: str, reasoning: str) -> list[str]:
    """``codex exec``, hermetic and read-only, prompt on stdin (``-``).

    ``--ignore-user-config`` keeps ``~/.codex/config.toml`` and hooks out of the answer,
    ``--sandbox read-only`` forbids writes, ``--skip-git-repo-check`` allows the empty temporary
    working directory, ``--ephemeral`` keeps no session, ``--color never`` keeps stdout plain,
    ``-c model_reasoning_effort=<r>`` sets the effort.
    """
    return ["codex", "exec", "--ignore-user-config", "--sandbox", "read-only", "--skip-git-repo-check",
            "--ephemeral", "--color", "never", "-m", model, "-c", f"model_reasoning_effort={reasoning}", "-"]


def grok_argv(model: str, reasoning: str) -> list[str]:
    """``grok`` headless: ``--prompt -`` reads the prompt from stdin, answer as plain text."""
    return ["grok", "--model", model, "--reasoning-effort", reasoning, "--output-format", "text",
            "--prompt", "-"]


def kimi_argv(model: str, effort: str, agent_file: str, work_dir: str, prompt: str) -> list[str]:
    """``kimi --quiet``: one non-interactive prompt, final message only, as plain text.

    ``--agent-file`` points at an agent that declares no tools (pure text reasoning),
    ``--work-dir`` at an empty temporary directory, ``--effort`` sets low/high/max reasoning and
    ``--prompt`` carries the whole prompt as one argv value.
    """
    return ["kimi", "--quiet", "--model", model, "--effort", effort, "--agent-file", agent_file,
            "--work-dir", work_dir, "--prompt", prompt]


# --- effort mapping -------------------------------------------------------------------------


def kimi_effort(explicit: str | None, default: str | None) -> str:
    """Kimi's low/high/max from an explicit value or the configured ``ASK_FABLE_KIMI_EFFORT``
    (presets mapped). A bad explicit value is ``BadArgs``; a bad configured one ``NotConfigured``."""
    if explicit:
        value = explicit.strip().lower()
        if value not in KIMI_EFFORTS:
            raise BadArgs(f"kimi effort must be one of {', '.join(KIMI_EFFORTS)}; got {value!r}")
        return KIMI_EFFORTS[value]
    value = (default or "high").strip().lower()
    if value not in KIMI_EFFORTS:
        raise NotConfigured(
            f"ASK_FABLE_KIMI_EFFORT must be one of {', '.join(KIMI_EFFORTS)}; it is set to {value!r}",
            hint="fix ASK_FABLE_KIMI_EFFORT in the server's environment or config file",
        )
    return KIMI_EFFORTS[value]


def grok_reasoning(explicit: str | None, configured: str | None) -> str:
    """Grok's reasoning effort for one call.

    A native level (``low`` / ``medium`` / ``high``) is used as is. The presets climb the same
    ladder (quick → low, standard → medium, deep → high) but never above the configured
    ``ASK_FABLE_GROK_REASONING`` (default ``low``), which keeps context-heavy turns bounded unless
    the operator raises it; no effort at all runs at that configured level. A bad explicit value is
    ``BadArgs``; a bad configured one ``NotConfigured``.
    """
    ceiling = (configured or "low").strip().lower()
    if ceiling not in GROK_NATIVE_EFFORTS:
        raise NotConfigured(
            f"ASK_FABLE_GROK_REASONING must be one of {', '.join(GROK_NATIVE_EFFORTS)}; "
            f"it is set to {ceiling!r}",
            hint="fix ASK_FABLE_GROK_REASONING in the server's environment or config file",
        )
    ceiling = GROK_NATIVE_EFFORTS[ceiling]
    if explicit is None:
        return ceiling
    value = explicit.strip().lower()
    if value in GROK_PRESET_LEVELS:
        return min(GROK_PRESET_LEVELS[value], ceiling, key=GROK_LEVELS.index)
    if value in GROK_NATIVE_EFFORTS:
        return GROK_NATIVE_EFFORTS[value]
    raise BadArgs(
        f"grok effort must be one of {', '.join((*EFFORT_PRESETS, *GROK_NATIVE_EFFORTS))}; got {value!r}"
    )


# --- the oracle -------------------------------------------------------------------------------


@functools.cache
def _auth_pattern(extra: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join((*AUTH_PHRASES, *extra)), re.IGNORECASE)


def auth_failure(output: str, prompt: str, extra: tuple[str, ...] = ()) -> bool:
    """Whether a failed CLI's ``output`` says its login is missing, expired or rejected.

    Lines that merely echo the ``prompt`` (a CLI may print the request it was given) never count,
    so a question about "unauthorized" responses cannot pass for a login problem.
    """
    pattern = _auth_pattern(extra)
    for line in output.splitlines():
        text = line.strip()
        if text and text not in prompt and pattern.search(text):
            return True
    return False


def cli_installed(binary: str) -> bool:
    """Whether ``binary`` is on the server's PATH (used to reroute HTTP model ids to a local CLI)."""
    return shutil.which(binary, path=os.environ.get("PATH", "")) is not None


class CliOracle(Oracle):
    """An oracle answered by one local CLI. Subclasses build the invocation; the factories
    (:mod:`ask_fable.backends.cli_backends`) hand each its ``backend`` descriptor.

    From the ``backend`` descriptor come ``token`` and ``provider`` (its name), ``family``,
    ``binary`` (the executable), ``install_hint`` (what to install / log in to) and ``login_fix``
    (the command that fixes a missing or rejected login). A subclass adds ``auth_phrases`` (this
    CLI's own wording of a login failure, beyond :data:`AUTH_PHRASES`) and ``env_allow`` (extra
    variable names or patterns the CLI may see); ``timeout_s`` is this backend's own timeout and
    ``resources`` the App's (whose per-binary gates the runs take a slot of; standalone when built
    outside an App).
    """

    binary: str
    install_hint: str
    login_fix: str
    auth_phrases: tuple[str, ...] = ()
    env_allow: tuple[str, ...] = ()

    def __init__(self, settings: Settings, *, backend: Backend, model: str, timeout_s: float,
                 resources: Resources | None = None) -> None:
        from ask_fable.backends.resources import Resources

        self.backend = backend
        self.token = self.provider = backend.name
        self.family = backend.family
        self.binary = backend.binary or backend.name
        self.install_hint = backend.enable
        self.login_fix = backend.login_fix or backend.binary or backend.name
        self.settings = settings
        self.model = model
        self.timeout_s = timeout_s
        self.resources = resources or Resources.standalone()

    def ensure_available(self) -> None:
        """Raise :class:`BinaryMissing` naming what to install when the CLI is not on PATH."""
        if not cli_installed(self.binary):
            raise BinaryMissing(
                f"`{self.binary}` is not on PATH: {self.install_hint}", binary=self.binary,
                hint=self.install_hint,
            )

    def effective_effort(self, request: OracleRequest) -> str | None:
        """The effort this call runs at, reported on the reply (``None`` when not applicable)."""
        return None

    def login_hint(self) -> str:
        """The step that fixes a missing, expired or rejected login."""
        return f"run `{self.login_fix}` as the user the ask-fable server runs as, then retry"

    @abc.abstractmethod
    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """The argv, stdin and extra env for ``request``; may raise ``ContextTooLarge``."""

    def check_size(self, request: OracleRequest) -> None:
        """Refuse a request this CLI's transport cannot carry, before anything is spawned."""

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Run the CLI once and turn its exit status and output into a Reply or an error."""
        self.check_size(request)
        effort = self.effective_effort(request)
        self.ensure_available()
        timeout = min(self.timeout_s, request.timeout)
        with tempfile.TemporaryDirectory(prefix=f"ask-fable-{self.binary}-") as tmp:
            work_dir = Path(tmp)
            call = self.invocation(request, work_dir)
            env = build_env((*BASE_ENV_ALLOW, *self.env_allow), extra=call.env_extra)
            try:
                result = await run_process(
                    call.argv,
                    stdin=call.stdin,
                    env=env,
                    timeout=timeout,
                    gates=self.resources.gates,
                    gate=self.binary,
                    gate_limit=self.settings.cli_max_parallel,
                    cwd=str(work_dir),
                    max_output_bytes=MAX_ANSWER_BYTES,
                )
            except BinaryMissing as exc:
                raise BinaryMissing(
                    f"`{self.binary}` is not on PATH: {self.install_hint}", binary=self.binary,
                    hint=self.install_hint,
                ) from exc
        if result.stdout_truncated and result.returncode == 0:
            # No real answer is this long: a flood is a malfunction, and half of it is no answer.
            raise UpstreamError(
                f"`{self.binary}` wrote more than {MAX_ANSWER_BYTES >> 20} MiB of output; it was discarded",
                binary=self.binary,
            )
        return self._reply(result, effort, request_text(request))

    def _reply(self, result: ProcessResult, effort: str | None, prompt: str) -> Reply:
        text = result.stdout.decode("utf-8", errors="replace").strip()
        if result.returncode != 0 or not text:
            self._raise_if_logged_out(result, prompt)
        if result.returncode != 0:
            how = (f"was killed by signal {-result.returncode}" if result.returncode < 0
                   else f"exited with status {result.returncode}")
            raise UpstreamError(f"`{self.binary}` {how}: {self._tail(result) or '(no output)'}",
                                binary=self.binary, exit_code=result.returncode)
        if not text:
            tail = self._tail(result)
            raise UpstreamError(
                f"`{self.binary}` returned an empty answer" + (f": {tail}" if tail else ""),
                binary=self.binary,
            )
        return Reply(text=text, model=self.model, provider=self.provider, effort=effort)

    def _raise_if_logged_out(self, result: ProcessResult, prompt: str) -> None:
        """Raise ``NotConfigured`` with the login fix when a failed run's output blames the login."""
        output = "\n".join(
            stream.decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
            for stream in (result.stderr, result.stdout)
        )
        if auth_failure(output, prompt, self.auth_phrases):
            raise NotConfigured(
                f"`{self.binary}` is not logged in, or its login expired or was rejected: "
                f"{self._tail(result) or '(no output)'}",
                hint=self.login_hint(),
                binary=self.binary,
            )

    def _tail(self, result: ProcessResult) -> str:
        raw = result.stderr.decode("utf-8", errors="replace").strip()
        if not raw and result.returncode != 0:
            raw = result.stdout.decode("utf-8", errors="replace").strip()
        return redact(raw[-STDERR_TAIL_CHARS:], self.settings)


def _refuse_argv_prompt(binary: str, size: int, route: str) -> ContextTooLarge:
    return ContextTooLarge(
        f"`{binary}` takes the prompt as one command-line argument (capped near 128 KiB); this prompt "
        f"is {size:,} bytes, over the {ARGV_PROMPT_LIMIT:,}-byte limit. Use {route} for larger context.",
        limit_bytes=ARGV_PROMPT_LIMIT,
        prompt_bytes=size,
    )


class MiniMaxOracle(CliOracle):
    """MiniMax through ``mmx`` (token ``minimax``)."""

    env_allow = ("MMX_*", "MINIMAX_*")

    def reply_tokens(self, request: OracleRequest) -> int:
        """The ``--max-tokens`` this call passes."""
        return request.max_tokens or self.settings.max_tokens

    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """``mmx text chat`` with a messages array (system, the conversation, the prompt) on stdin."""
        messages = request.chat_messages()
        if request.system.strip():
            messages.insert(0, {"role": "system", "content": request.system})
        max_tokens = request.max_tokens or self.settings.max_tokens
        stdin = json.dumps(messages, ensure_ascii=False).encode("utf-8")
        return Invocation(mmx_argv(self.model, max_tokens), stdin)


class GeminiOracle(CliOracle):
    """Gemini through ``agy`` (token ``gemini``)."""

    env_allow = ("AGY_*", "GEMINI_*")
    prompt_limit_bytes = ARGV_PROMPT_LIMIT

    def login_hint(self) -> str:
        """Print mode cannot sign in by itself: one interactive run does."""
        return ("run `agy` once in a terminal, as the user the ask-fable server runs as, and complete the "
                "Google sign-in; then retry")

    def check_size(self, request: OracleRequest) -> None:
        """Refuse a composed prompt over the argv limit."""
        size = len(request_text(request).encode("utf-8"))
        if size > ARGV_PROMPT_LIMIT:
            raise _refuse_argv_prompt(self.binary, size, "ask_openrouter with a google/gemini-* model")

    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """``agy --model <m> -p <system + prompt>``, stdin closed."""
        return Invocation(agy_argv(self.model, request_text(request)), None)


class CodexOracle(CliOracle):
    """OpenAI through ``codex exec`` (token ``codex``)."""

    env_allow = ("CODEX_*",)

    def effective_effort(self, request: OracleRequest) -> str | None:
        """The configured ``model_reasoning_effort``."""
        return self.settings.codex_reasoning

    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """Hermetic read-only ``codex exec -`` with system + prompt on stdin."""
        stdin = request_text(request).encode("utf-8")
        return Invocation(codex_argv(self.model, self.settings.codex_reasoning), stdin)


class GrokOracle(CliOracle):
    """Grok through the ``grok`` CLI (token ``grok``)."""

    env_allow = ("GROK_*",)

    def __init__(self, settings: Settings, *, backend: Backend, model: str, timeout_s: float,
                 effort: str | None,
                 resources: Resources | None = None) -> None:
        super().__init__(settings, backend=backend, model=model, timeout_s=timeout_s, resources=resources)
        self.effort = effort
        grok_reasoning(effort, settings.grok_reasoning)  # reject a bad effort at construction

    def effective_effort(self, request: OracleRequest) -> str | None:
        """Grok's reasoning level for this call (see :func:`grok_reasoning`)."""
        return grok_reasoning(self.effort or request.effort, self.settings.grok_reasoning)

    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """``grok --prompt -`` with system + prompt on stdin."""
        stdin = request_text(request).encode("utf-8")
        return Invocation(grok_argv(self.model, self.effective_effort(request) or "low"), stdin)


class KimiOracle(CliOracle):
    """Kimi through the ``kimi`` CLI, sandboxed to text (token ``kimi``)."""

    auth_phrases = (r"llm not set", r"run /login")
    env_allow = ("KIMI_*",)
    prompt_limit_bytes = ARGV_PROMPT_LIMIT

    def login_hint(self) -> str:
        """``kimi login`` into the home ask-fable hands the CLI (``ASK_FABLE_KIMI_HOME``)."""
        return (f"run `KIMI_HOME={self.settings.kimi_home} kimi login` as the user the ask-fable server runs "
                "as (ask-fable runs kimi with that home; ASK_FABLE_KIMI_HOME changes it), then retry")

    def __init__(self, settings: Settings, *, backend: Backend, model: str, timeout_s: float,
                 effort: str | None,
                 resources: Resources | None = None) -> None:
        super().__init__(settings, backend=backend, model=model, timeout_s=timeout_s, resources=resources)
        self.effort = effort
        kimi_effort(effort, settings.kimi_effort)  # reject a bad effort at construction

    def effective_effort(self, request: OracleRequest) -> str | None:
        """Kimi's low/high/max for this call (see :func:`kimi_effort`)."""
        return kimi_effort(self.effort or request.effort, self.settings.kimi_effort)

    def check_size(self, request: OracleRequest) -> None:
        """Refuse a composed prompt over the argv limit."""
        size = len(request_text(request).encode("utf-8"))
        if size > ARGV_PROMPT_LIMIT:
            raise _refuse_argv_prompt(
                self.binary, size, "ask_atlas (or ask_openrouter) with model moonshotai/kimi-k3"
            )

    def invocation(self, request: OracleRequest, work_dir: Path) -> Invocation:
        """``kimi --quiet --prompt <system + prompt>`` with a tool-less agent and KIMI_HOME set."""
        agent_dir = work_dir / ".agent"
        agent_dir.mkdir()
        (agent_dir / "system.md").write_text(_KIMI_AGENT_SYSTEM, encoding="utf-8")
        agent_file = agent_dir / "agent.yaml"
        agent_file.write_text(_KIMI_AGENT_YAML, encoding="utf-8")
        sandbox = work_dir / "work"
        sandbox.mkdir()
        argv = kimi_argv(self.model, self.effective_effort(request) or "high", str(agent_file),
                         str(sandbox), request_text(request))
        home = str(Path(self.settings.kimi_home).expanduser())
        return Invocation(argv, None, {"KIMI_HOME": home})
