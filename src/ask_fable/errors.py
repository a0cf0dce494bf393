"""The error tree every failure is translated into before it reaches a caller.

    AskFableError                 status "error" unless overridden; carries ``kind`` and ``detail``
     ├── BadArgs                  kind "bad_args"          the caller's arguments are wrong
     ├── Forbidden                kind "forbidden"         the caller's key may not do this
     ├── QuotaExceeded            kind "quota_exceeded"    the caller's key is over one of its quotas
     ├── NotConfigured            kind "not_configured"    a key / setting is missing (config state)
     ├── BinaryMissing            kind "binary_missing"    a CLI backend is not installed (config state)
     ├── ContextTooLarge          kind "context_too_large" the prompt cannot fit the backend's transport
     ├── CircuitOpen              kind "circuit_open"      the breaker is shedding calls to this oracle
     ├── OracleTimeout            kind "timeout"           a deadline passed
     ├── UpstreamError            kind "upstream_error"    the provider / CLI / SDK failed
     └── Unavailable              kind "unavailable"       the shared database cannot be reached
          └── SchemaMismatch                               its schema is not the one this release uses

Backends raise these at their boundary (``raise UpstreamError(...) from exc``); the pipeline turns
them into ``{"status": "error", "kind": ..., "detail": ...}`` plus the fields of :class:`ErrorFields`
the error carries. Nothing else escapes a tool.
"""

from __future__ import annotations

from typing import Literal, TypedDict, Unpack

from pydantic import JsonValue


class ErrorFields(TypedDict, total=False):
    """Every field an error may carry beside its kind and detail, each named once here.

    The tool's result keeps those its contract model has (a nested one as the JSON its model built
    above this layer) and validates them; the others are context for the logs only.
    """

    #: How to fix it: a setting to set, a command to run.
    hint: str
    #: The values an argument may take.
    allowed: list[str]
    #: Seconds until a shed or refused call may be tried again (None: on no day for this call).
    retry_after_s: float | None
    #: What the refused call was expected to cost (a ``CostEstimate``).
    estimate: dict[str, JsonValue]
    # context_pack's refusal when nothing was packed.
    key: str
    root: str
    max_chars: int
    files: list[JsonValue]
    skipped: list[JsonValue]
    # What a failed mode still reports: its members, stages or turns (its ``ModeFields``).
    mode: Literal["council", "chain", "debate"]
    pipeline: list[str]
    stages: list[JsonValue]
    answered: int
    requested: int
    sources: list[JsonValue]
    quorum: str
    turns: list[JsonValue]
    # Log context only.
    binary: str
    exit_code: int
    required_scope: str
    limit_bytes: int
    prompt_bytes: int


class ErrorResult(ErrorFields):
    """The contract's error shape: ``status``, ``kind`` and ``detail``, and the fields the error carries."""

    status: str
    kind: str
    detail: str


def hinted(hint: str | None) -> ErrorFields:
    """``hint`` as an error's field, none when there is no hint."""
    return {"hint": hint} if hint else {}


class AskFableError(Exception):
    """Base of every structured failure; ``to_result`` gives the contract's error shape."""

    kind: str = "internal"
    status: str = "error"
    #: Config states never count against a circuit breaker.
    counts_as_failure: bool = True

    def __init__(self, detail: str, **extra: Unpack[ErrorFields]) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def to_result(self) -> ErrorResult:
        """The structured result a tool returns for this error."""
        return {"status": self.status, "kind": self.kind, "detail": self.detail, **self.extra}


class BadArgs(AskFableError):
    """The caller passed arguments the tool cannot use."""

    kind = "bad_args"
    counts_as_failure = False


class Forbidden(AskFableError):
    """The caller's key may not do what it asked (another tenant's data without admin scope)."""

    kind = "forbidden"
    counts_as_failure = False


class QuotaExceeded(AskFableError):
    """The caller's key is over its calls per minute, calls in flight or daily budget."""

    kind = "quota_exceeded"
    counts_as_failure = False
    #: Which limit refused the call: ``rpm``, ``concurrent`` or ``daily_usd`` (for metrics, not the result).
    limit: str | None = None


class NotConfigured(AskFableError):
    """A backend or feature needs a setting that is not present."""

    kind = "not_configured"
    counts_as_failure = False


class BinaryMissing(AskFableError):
    """A CLI backend's executable is not on PATH."""

    kind = "binary_missing"
    counts_as_failure = False


class ContextTooLarge(AskFableError):
    """The prompt is larger than the backend's transport accepts."""

    kind = "context_too_large"
    counts_as_failure = False


class CircuitOpen(AskFableError):
    """The circuit breaker is shedding calls to a chronically failing oracle."""

    kind = "circuit_open"
    counts_as_failure = False


class OracleTimeout(AskFableError):
    """A call (or a whole mode) ran past its deadline."""

    kind = "timeout"


class UpstreamError(AskFableError):
    """The provider, CLI or SDK answered with a failure or an unusable reply."""

    kind = "upstream_error"


class Unavailable(AskFableError):
    """The database the stores live on cannot be reached now (down, restarting, out of connections)."""

    kind = "unavailable"
    counts_as_failure = False

    def __init__(self, detail: str, **extra: Unpack[ErrorFields]) -> None:
        extra.setdefault("hint", "the database is unreachable; the call can be retried once it is back")
        super().__init__(detail, **extra)


class SchemaMismatch(Unavailable):
    """A store's schema is older or newer than the one this release of ask-fable uses."""

    @classmethod
    def behind(cls, where: str, found: int | str, wanted: int | str) -> SchemaMismatch:
        """The schema at ``where`` still needs migrations: ``ask-fable db upgrade`` applies them."""
        return cls(f"the {where} schema is at revision {found}, this ask-fable needs {wanted}; "
                   "run `ask-fable db upgrade`", hint="run `ask-fable db upgrade`, then start again")

    @classmethod
    def newer(cls, where: str, found: int | str, known: int | str) -> SchemaMismatch:
        """The schema at ``where`` was written by a newer release."""
        return cls(f"the {where} schema is at revision {found}, newer than this ask-fable (which knows "
                   f"{known}); upgrade ask-fable", hint="install the ask-fable release that wrote it")
