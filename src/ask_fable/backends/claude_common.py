"""What the Claude routes share: model resolution, the model ladder, CLI environment, redaction.

The Agent SDK route (:mod:`.claude_sdk`), the ``claude -p`` bridge (:mod:`.claude_cli`) and the
multi-turn sessions (:mod:`.claude_sessions`) all resolve a token to model ids here and walk the
same ladder: the next model is tried only when the current one is *not available*
(:class:`ModelUnavailable`), never after a timeout or another failure. A Fable id found unavailable
is remembered for :data:`UNAVAILABLE_MODEL_TTL_SECONDS` on the App's clock (:class:`UnavailableModels`,
one per App's resources, by endpoint), so new conversations start on the step that worked instead
of asking for the missing id again.
"""

from __future__ import annotations

import os
import platform
import re
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ask_fable.errors import AskFableError, BadArgs, NotConfigured, UpstreamError

if TYPE_CHECKING:
    from ask_fable.backends.base import EventSink, Reply
    from ask_fable.backends.resources import Resources
    from ask_fable.clock import Clock
    from ask_fable.config import Settings
    from ask_fable.values import Usage

#: Newest first; an unpinned ``fable`` walks it until a model answers.
FABLE_LADDER: tuple[str, ...] = ("claude-fable-5-1", "claude-fable-5")
FABLE51_MODEL = "claude-fable-5-1"
#: The ``max_tokens`` Claude Code asks for: the room a conversation leaves for each answer.
CLAUDE_REPLY_TOKENS = 32_000
TOKENS: tuple[str, ...] = ("fable", "fable51", "opus")

#: Keep the CLI to the one model request: no update checks, telemetry, titles or hello pings.
TRAFFIC_ENV: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
}
#: The CLI retries a failing endpoint for minutes by default; a small bound makes a dead one fail fast.
DEFAULT_MAX_RETRIES = "2"
#: What the Claude Code CLI needs from the server's environment besides the base allow-list:
#: its own settings and credentials, and the cloud-provider routes it supports.
CLAUDE_ENV_ALLOW: tuple[str, ...] = (
    "ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "AWS_*", "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUD_ML_REGION", "VERTEX_REGION_*", "NODE_OPTIONS",
)
_NOT_FOUND = re.compile(r"not[ _]found|does not exist|not available|unknown model|no such model", re.I)
#: What Claude Code says when it has no login, or the API refused the key or OAuth token it used.
_AUTH_TEXT = re.compile(
    r"not logged in|/login|invalid api key|x-api-key|oauth token|failed to authenticate|"
    r"authentication_error|permission_error",
    re.I,
)
_AUTH_STATUSES = frozenset({401, 403})
_AUTH_TYPES = frozenset({"authentication_error", "permission_error"})
STDERR_TAIL_LINES = 40
#: How long a Fable id that answered "not available" is skipped when a new conversation starts.
UNAVAILABLE_MODEL_TTL_SECONDS = 3600.0


PROVIDER = "anthropic"


class ModelUnavailable(UpstreamError):
    """The endpoint answered that the model does not exist or is not available to this account."""


class SdkStartError(UpstreamError):
    """The Agent SDK could not start a CLI conversation at all (the ``claude -p`` bridge may still)."""


@dataclass(frozen=True)
class ModelPlan:
    """The model ids a token resolves to, in the order they are tried."""

    token: str
    models: tuple[str, ...]
    #: Set when the user pinned the id: it never falls back.
    pinned_by: str | None = None
    #: Ladder steps left out because they were found unavailable a short while ago.
    skipped: tuple[str, ...] = ()

    @property
    def first(self) -> str:
        """The model tried first (reported as the oracle's model)."""
        return self.models[0]


class UnavailableModels:
    """Model ids an endpoint answered "not available" lately, each forgotten ``ttl`` seconds later."""

    def __init__(self, clock: Clock, ttl: float = UNAVAILABLE_MODEL_TTL_SECONDS) -> None:
        self._clock = clock
        self._ttl = ttl
        self._lock = threading.Lock()
        self._until: dict[tuple[str, str], float] = {}

    @staticmethod
    def _key(model: str) -> tuple[str, str]:
        # Availability belongs to an endpoint (and the account behind it), not to the id alone.
        return os.environ.get("ANTHROPIC_BASE_URL", ""), model

    def remember(self, model: str) -> None:
        """Record that ``model`` answered "not available" just now."""
        with self._lock:
            self._until[self._key(model)] = self._clock.monotonic() + self._ttl

    def __contains__(self, model: object) -> bool:
        """Whether ``model`` answered "not available" within the last ``ttl`` seconds."""
        if not isinstance(model, str):
            return False
        key = self._key(model)
        with self._lock:
            until = self._until.get(key)
            if until is not None and until <= self._clock.monotonic():
                del self._until[key]
                until = None
        return until is not None


def unavailable_models(resources: Resources) -> UnavailableModels:
    """The Claude model ids ``resources``' App found unavailable lately, made on first use."""
    return resources.part("unavailable_models", lambda: UnavailableModels(resources.clock))


def model_plan(settings: Settings, token: str, unavailable: UnavailableModels | None = None) -> ModelPlan:
    """Resolve ``fable`` / ``fable51`` / ``opus`` (aliases ``opus5``, ``opus-5``) to model ids; an
    unpinned ``fable`` leaves out the ladder steps in ``unavailable``."""
    name = token.strip().lower()
    if name == "fable":
        if settings.fable_model:
            return ModelPlan("fable", (settings.fable_model,), pinned_by="ASK_FABLE_FABLE_MODEL")
        usable = tuple(model for model in FABLE_LADDER if unavailable is None or model not in unavailable)
        if not usable:  # every step failed lately: try them all again rather than none
            return ModelPlan("fable", FABLE_LADDER)
        return ModelPlan("fable", usable, skipped=tuple(m for m in FABLE_LADDER if m not in usable))
    if name in ("fable51", "fable-5-1", FABLE51_MODEL):
        return ModelPlan("fable51", (FABLE51_MODEL,), pinned_by="the fable51 token")
    if name in ("opus", "opus5", "opus-5"):
        return ModelPlan("opus", (settings.opus_model,))
    raise BadArgs(f"unknown Claude model token {token!r}; expected one of {', '.join(TOKENS)}")


async def run_ladder(
    plan: ModelPlan,
    attempt: Callable[[str], Awaitable[Reply]],
    sink: EventSink,
    unavailable: UnavailableModels | None = None,
) -> Reply:
    """Call ``attempt(model)`` down the plan until one answers; fall through only on ``ModelUnavailable``
    (an unpinned step that fails so is remembered in ``unavailable``)."""
    tried: list[str] = []
    if plan.skipped:
        await sink.note(f"{', '.join(plan.skipped)} was not available lately; starting with {plan.first}")
    for index, model in enumerate(plan.models):
        try:
            return await attempt(model)
        except ModelUnavailable as exc:
            tried.append(model)
            if unavailable is not None and not plan.pinned_by:
                unavailable.remember(model)
            if index + 1 < len(plan.models):
                await sink.note(f"{model} is not available; trying {plan.models[index + 1]}")
                continue
            if plan.pinned_by:
                raise ModelUnavailable(
                    f"model {model} is not available and is pinned by {plan.pinned_by}, so there is "
                    f"no fallback: {exc.detail}"
                ) from exc
            if len(tried) == 1:
                raise
            raise ModelUnavailable(
                f"none of the models {', '.join(tried)} is available: {exc.detail}"
            ) from exc
    raise AssertionError("a model plan is never empty")  # pragma: no cover


def redact_text(text: str, settings: Settings | None = None) -> str:
    """Remove secrets from text headed for an error detail or a log."""
    from ask_fable.redact import redact

    return redact(text, settings)


class StderrTail:
    """Keeps the last lines a CLI wrote to stderr, redacted, for error details; never prints them."""

    def __init__(self, settings: Settings | None = None, lines: int = STDERR_TAIL_LINES) -> None:
        self._settings = settings
        self._lines: deque[str] = deque(maxlen=lines)

    def __call__(self, line: str) -> None:
        """Record one stderr line (the Agent SDK's ``stderr`` callback signature)."""
        line = line.rstrip()
        if line:
            self._lines.append(redact_text(line[:2000], self._settings))

    def feed(self, raw: bytes | str) -> None:
        """Record a whole captured stderr buffer."""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        for line in text.splitlines():
            self(line)

    def text(self, max_chars: int = 1200) -> str:
        """The recorded tail, newest last, bounded to ``max_chars``."""
        joined = "\n".join(self._lines)
        return joined[-max_chars:]


def with_stderr(detail: str, tail: StderrTail) -> str:
    """Append the CLI's stderr tail to an error detail when there is one."""
    extra = tail.text()
    return f"{detail}\nstderr: {extra}" if extra else detail


def claude_env_overrides() -> dict[str, str]:
    """The traffic and retry flags set for every Claude CLI start."""
    env = dict(TRAFFIC_ENV)
    env["CLAUDE_CODE_MAX_RETRIES"] = os.environ.get("CLAUDE_CODE_MAX_RETRIES") or DEFAULT_MAX_RETRIES
    return env


def claude_cli_env() -> dict[str, str]:
    """The Claude CLI's environment: allow-listed variables plus the traffic and retry flags."""
    from ask_fable.backends.subprocess_runner import BASE_ENV_ALLOW, build_env

    return build_env((*BASE_ENV_ALLOW, *CLAUDE_ENV_ALLOW), claude_env_overrides())


def is_model_unavailable(status: object, error_type: object, message: object) -> bool:
    """Whether a Claude Code error result means "this model is not available" (the ladder steps
    down): HTTP 404, a ``not_found_error``, or an invalid request whose message says not found."""
    text = str(message or "")
    if status == 404 or error_type == "not_found_error" or "not_found_error" in text:
        return True
    invalid = status == 400 or error_type == "invalid_request_error" or "invalid_request" in text
    return invalid and bool(_NOT_FOUND.search(text))


def is_auth_failure(
    status: object, error_type: object, message: object, assistant_error: object = None
) -> bool:
    """Whether a Claude Code error means "no usable login": not logged in, a rejected API key, an
    expired or revoked OAuth token (HTTP 401/403, or the CLI's ``authentication_failed``)."""
    if assistant_error == "authentication_failed" or status in _AUTH_STATUSES or error_type in _AUTH_TYPES:
        return True
    return bool(_AUTH_TEXT.search(str(message or "")))


def login_found() -> bool:
    """Whether the server shows a Claude login: an API key or OAuth token in its environment, or
    Claude Code's credentials file. macOS keeps the login in the keychain, which is not read, so
    there a login is assumed."""
    if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("CLAUDE_CODE_OAUTH_TOKEN"):
        return True
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    home = Path(base).expanduser() if base else Path.home() / ".claude"
    return (home / ".credentials.json").exists() or platform.system() == "Darwin"


def login_hint() -> str:
    """The exact fix for a missing or rejected Claude login, for the server as it runs now."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return (
            "the server's ANTHROPIC_API_KEY was rejected: set a valid key in the server's environment "
            "and restart it, or remove it to use your Claude login (run `ask-fable login`)"
        )
    return (
        "log in to Claude as the user running this server: run `ask-fable login` (the next call uses "
        "the new login); or set ANTHROPIC_API_KEY in the server's environment and restart it"
    )


def is_billing_failure(status: object, message: object, assistant_error: object = None) -> bool:
    """Whether a Claude Code error means the account cannot pay for the call (credit balance too low,
    HTTP 402, the CLI's ``billing_error``): an account state, not an outage."""
    from ask_fable.backends.http_client import says_account_refused

    return assistant_error == "billing_error" or status == 402 or says_account_refused(str(message or ""))


def billing_hint(message: str = "") -> str:
    """The fix for an Anthropic account out of credits, or a Claude plan at its usage limit (as
    ``message`` says), for the server as it runs now."""
    if "usage limit" in message.lower():
        return ("the Claude plan's usage limit is reached: wait until it resets (the message says when) or "
                "upgrade the plan; ask-fable does not retry it or count it as an outage")
    if os.environ.get("ANTHROPIC_API_KEY"):
        return ("add credits to the Anthropic account of the server's ANTHROPIC_API_KEY (Anthropic Console, "
                "Plans & Billing), or remove the key to use your Claude Code login; ask-fable does not "
                "retry it or count it as an outage")
    return ("add credits to the Anthropic account Claude Code is logged in with, or check its plan; "
            "ask-fable does not retry it or count it as an outage")


def classify_failure(
    detail: str, *, status: object, error_type: object, message: object, assistant_error: object = None
) -> AskFableError | None:
    """The error a failed Claude Code turn stands for when it is not a plain upstream failure:
    :class:`NotConfigured` (with :func:`login_hint`) for a login problem or (with
    :func:`billing_hint`) an account out of credits, :class:`ModelUnavailable`
    when the model does not exist for this account; ``None`` otherwise. ``detail`` is redacted."""
    if is_auth_failure(status, error_type, message, assistant_error):
        return NotConfigured(f"Claude Code has no usable login ({detail})", hint=login_hint())
    if is_billing_failure(status, message, assistant_error):
        return NotConfigured(f"the Anthropic account refused the call for its balance or plan ({detail})",
                             hint=billing_hint(str(message or "")))
    if assistant_error == "model_not_found" or is_model_unavailable(status, error_type, message):
        return ModelUnavailable(detail)
    return None


def workdir(settings: Settings) -> Path:
    """A private working directory for the CLI (0700 under the state dir): no project files in reach."""
    from ask_fable.files import ensure_private_dir

    return ensure_private_dir(settings.state_dir / "claude-cwd")


_VERSION = re.compile(r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"2.1.332 (Claude Code)"`` → ``(2, 1, 332)``; ``None`` when no version is found."""
    match = _VERSION.search(text or "")
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def usage_from(raw: dict[str, Any] | None, cost: float | None) -> Usage | None:
    """Our :class:`Usage` from the CLI's usage dict and total cost (numbers validated)."""
    from ask_fable.backends.http_client import usage_from as validated_usage

    raw = raw if isinstance(raw, dict) else {}
    details = raw.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return validated_usage(raw.get("input_tokens"), raw.get("output_tokens"), thinking or None, cost)
