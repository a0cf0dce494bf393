"""HTTP plumbing shared by every HTTP oracle and catalog: the client, the retry loop, error mapping.

``send`` is the one retry loop. It retries connect failures, 408, 409, 429 and 5xx with
jittered exponential backoff (honouring ``Retry-After``), at most three attempts in all by
default, never sleeps past the call's deadline nor past the shared deadline a mode may set (a
council's straggler cut, :mod:`ask_fable.backends.deadline`), and hands a successful response to
the caller's ``handle`` coroutine while the body is still streaming. Everything it raises is an
:mod:`ask_fable.errors` error:

    httpx2.ConnectError / reset before headers ─▶ retried, then UpstreamError
    status 408 / 409 / 429 / ≥ 500             ─▶ retried, then UpstreamError
    status 401 / 403                            ─▶ NotConfigured at once, with the caller's ``auth_hint``
    402; 400 / 403 / 429 naming balance or plan ─▶ NotConfigured at once, with the caller's ``billing_hint``
    other status ≥ 400                          ─▶ UpstreamError at once (provider message, redacted)
    deadline passed / read stalled               ─▶ OracleTimeout
    body that is not the expected JSON          ─▶ UpstreamError (raised by ``handle`` via ``bad_body``)
    reply body past ``max_reply_bytes``          ─▶ ReplyTooLarge (an UpstreamError), connection closed

Secrets never reach a message: every detail goes through :func:`scrub` first. Clients come from the
App's :class:`HttpClients` (one pooled client per event loop, closed with the App); a reply body,
streamed or not, is read under a byte bound like a CLI's output, and server-sent events are parsed
by ``httpx2.EventSource``, which also bounds each event.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import ipaddress
import json as jsonlib
import random
import re
import ssl
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import anyio

from ask_fable.backends.base import Oracle, OracleRequest
from ask_fable.backends.deadline import current_deadline
from ask_fable.errors import AskFableError, NotConfigured, OracleTimeout, UpstreamError, hinted
from ask_fable.values import Usage

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from ask_fable.backends.base import EventSink
    from ask_fable.backends.resources import Resources
    from ask_fable.clock import Clock

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})
#: The provider rejected the credentials: a configuration state, never retried.
AUTH_STATUS = frozenset({401, 403})
#: The provider asks for payment: the account is out of credits (OpenRouter, Atlas, DeepSeek).
PAYMENT_STATUS = 402
#: Statuses some providers use for an exhausted balance or a plan that does not cover the call,
#: told apart from a rate limit or a bad request by the body: Z.ai answers 429 with code 1113,
#: OpenAI-compatible APIs 429 ``insufficient_quota``, Anthropic-compatible ones 400 "credit balance is
#: too low", Ollama's cloud 429 "usage limit" and 403 "requires a subscription".
_ACCOUNT_STATUS = frozenset({400, 403, 429})
_ACCOUNT_TEXT = re.compile(
    r"insufficient[ _](?:balance|credits?|quota|funds)|credit balance is too low|no resource package"
    r"|exceeded your current quota|requires a subscription|usage limit|purchase credits|余额不足"
    r"|\"code\"\s*:\s*\"?1113\b",
    re.IGNORECASE,
)
#: Bytes of an error body read to find the provider's message.
ERROR_BODY_LIMIT = 16_384
#: Longest provider message quoted in an error detail.
MESSAGE_LIMIT = 400
#: Bytes of one reply body read before the call fails as too large (the bound a CLI's output has).
MAX_REPLY_BYTES = 8 * 1024 * 1024
#: Bytes one server-sent event may hold.
MAX_EVENT_BYTES = 1024 * 1024
#: Seconds a streamed reply's body may take to end after its final event before it is dropped.
BODY_END_GRACE_S = 1.0
USER_AGENT = "ask-fable"


class ReplyTooLarge(UpstreamError):
    """The provider sent more than the reply bound; the connection was closed."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently the retry loop tries again."""

    #: Requests in all, the first included: a provider failing every time costs three.
    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def backoff(self, attempt: int) -> float:
        """Jittered exponential delay before retry number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


#: The policy used when a caller passes none (an App's resources may carry another).
DEFAULT_RETRY = RetryPolicy()


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret value (and known key shapes) removed."""
    secret_list = [s for s in secrets if s]
    try:
        from ask_fable.redact import redact
    except ImportError:  # pragma: no cover - the stores package ships with the server
        for secret in sorted(secret_list, key=len, reverse=True):
            text = text.replace(secret, "[REDACTED]")
        return text
    return redact(text, secret_list)


def join_url(base: str, path: str) -> str:
    """``base`` + ``path`` with exactly one slash between them."""
    return base.rstrip("/") + "/" + path.lstrip("/")


def versioned_url(base: str, path: str) -> str:
    """``{base}/v1/{path}``, or ``{base}/{path}`` when ``base`` already ends in a version (``/api/v1``)."""
    try:
        last = urlsplit(base).path.rstrip("/").rsplit("/", 1)[-1]
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket
        raise NotConfigured(f"invalid base URL {base!r} ({exc})",
                            hint="set the provider's base URL to an http:// or https:// address") from exc
    if len(last) >= 2 and last[0] == "v" and last[1:].isdigit():
        return join_url(base, path)
    return join_url(base, "v1/" + path.lstrip("/"))


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (a local daemon needs no key)."""
    try:
        host = (urlsplit(url).hostname or "").strip("[]").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every client (building one costs ~30 ms; it is immutable once made)."""
    import httpx2

    return httpx2.create_ssl_context()


def new_client(timeout: float, transport: httpx2.AsyncBaseTransport | None = None) -> httpx2.AsyncClient:
    """A client with no redirects (a key must not follow one) and room for a wide fan-out.

    The read timeout is the whole budget: a stream may be quiet while the model thinks, and
    the deadline in :func:`send` is what bounds a stalled provider.
    """
    import httpx2

    from ask_fable.backends.http_pool import quick_idle_checks

    limits = httpx2.Limits(max_connections=256, max_keepalive_connections=32)
    return quick_idle_checks(httpx2.AsyncClient(
        timeout=request_timeouts(timeout), transport=transport, follow_redirects=False, limits=limits,
        headers={"user-agent": USER_AGENT}, verify=_ssl_context() if transport is None else True))


def request_timeouts(timeout: float) -> httpx2.Timeout:
    """Per-request timeouts: the read timeout is the whole budget (a thinking model may be quiet)."""
    import httpx2

    return httpx2.Timeout(connect=min(10.0, timeout), read=timeout, write=min(30.0, timeout),
                          pool=min(10.0, timeout))


def retry_policy(resources: Resources) -> RetryPolicy:
    """The retry policy of model calls on ``resources`` (the module default unless it carries one)."""
    return resources.given_retry or DEFAULT_RETRY


def http_clients(resources: Resources) -> HttpClients:
    """The pooled HTTP clients (one per event loop) ``resources`` holds, made on first use."""
    return resources.part("http", lambda: HttpClients(pooled=resources.pooled))


class HttpClients:
    """The HTTP clients one App opens: one pooled client per event loop, so calls to a provider
    reuse its connections (and TLS), all closed by :meth:`aclose`.

    ``pooled=False`` opens a private client per call instead (for code running outside an App,
    where nobody would close a pool).
    """

    def __init__(self, *, pooled: bool = True) -> None:
        self.pooled = pooled
        self._clients: weakref.WeakKeyDictionary[Any, httpx2.AsyncClient] = weakref.WeakKeyDictionary()

    @contextlib.asynccontextmanager
    async def client(self, timeout: float,
                     transport: httpx2.AsyncBaseTransport | None = None) -> AsyncIterator[httpx2.AsyncClient]:
        """The loop's pooled client, or a private one (a test's ``transport``, no pool, no asyncio)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on asyncio: no pool to share
            loop = None
        if transport is not None or loop is None or not self.pooled:
            async with new_client(timeout, transport) as private:
                yield private
            return
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = self._clients[loop] = new_client(timeout)
        yield client

    async def aclose(self) -> None:
        """Close every pooled client (one left on another, finished event loop is only dropped)."""
        try:
            loop: Any = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        clients, self._clients = dict(self._clients), weakref.WeakKeyDictionary()
        for owner, client in clients.items():
            if owner is loop:
                await client.aclose()


@functools.cache
def _bounded_stream_class() -> type[Any]:
    import httpx2

    class BoundedStream(httpx2.AsyncByteStream):
        """A response body that fails with :class:`ReplyTooLarge` past ``limit`` bytes."""

        def __init__(self, inner: httpx2.AsyncByteStream, limit: int, label: str) -> None:
            self._inner, self._limit, self._label = inner, limit, label

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._inner:
                seen += len(chunk)
                if seen > self._limit:
                    # Raised mid-body: httpx closes the connection instead of returning it to the pool.
                    raise ReplyTooLarge(f"{self._label} sent a reply larger than {_mib(self._limit)}; "
                                        "the connection was closed")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return BoundedStream


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def bound_reply(response: httpx2.Response, limit: int, label: str) -> None:
    """Make every read of ``response``'s body raise :class:`ReplyTooLarge` past ``limit`` bytes."""
    response.stream = _bounded_stream_class()(response.stream, limit, label)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number or an HTTP date; ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def provider_message(body: bytes | str) -> str:
    """The human message inside an error body (OpenAI, Anthropic and Ollama shapes), else its text."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = jsonlib.loads(text)
    except ValueError:
        data = None
    message: Any = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            message = err.get("message") or err.get("detail") or err.get("type")
            meta = err.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("raw"), str):
                message = f"{message}: {meta['raw']}" if message else meta["raw"]
        elif isinstance(err, str):
            message = err
        if not message and isinstance(data.get("message"), str):
            message = data["message"]
    if not message:
        message = " ".join(text.split())
    from ask_fable.redact import bounded

    # Both ends kept: a provider's own cause often comes last (OpenRouter's metadata.raw).
    return bounded(str(message), MESSAGE_LIMIT)


def bad_body(label: str, what: str, secrets: Iterable[str] = ()) -> UpstreamError:
    """The error for a reply body that is not what the provider's API promises."""
    snippet = " ".join(what.split())[:200]
    return UpstreamError(scrub(f"{label} returned an unexpected body: {snippet}", secrets))


def loads_object(text: str | bytes, label: str, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """Parse a JSON object or raise :class:`UpstreamError` (never a crash on garbage)."""
    try:
        data = jsonlib.loads(text)
    except ValueError as exc:
        raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        raise bad_body(label, raw or "(empty)", secrets) from exc
    if not isinstance(data, dict):
        raise bad_body(label, f"JSON {type(data).__name__} instead of an object", secrets)
    return data


def text_field(obj: object, key: str) -> str:
    """``obj[key]`` when ``obj`` is a JSON object holding a string there, else ``""``."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def object_field(obj: object, key: str) -> dict[str, Any]:
    """``obj[key]`` when ``obj`` is a JSON object holding an object there, else ``{}``."""
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


async def iter_events(response: httpx2.Response, label: str,
                      secrets: Iterable[str] = ()) -> AsyncGenerator[tuple[str, str], None]:
    """``(event, data)`` pairs of a server-sent event stream (``httpx2.EventSource``); comments,
    keep-alives and events without data skipped. An event past :data:`MAX_EVENT_BYTES` is an
    :class:`UpstreamError`."""
    import httpx2

    default = response.default_encoding
    if isinstance(default, str) and "charset" not in response.headers.get("content-type", "").lower():
        # What httpx2 decodes a body naming no charset as; set up front, it is not looked for by
        # parsing the content type with the email package (≈ 7 µs a reply).
        response.encoding = default
    try:
        async for event in httpx2.EventSource(response, max_event_size=MAX_EVENT_BYTES):
            if event.data:
                yield event.event, event.data
    except httpx2.SSEError as exc:
        raise UpstreamError(scrub(f"{label} sent an unreadable event stream ({exc})", secrets)) from exc


async def read_to_end(rest: AsyncIterator[object]) -> None:
    """Read what is left of a streamed reply once its final event is in (normally only the end of the
    body, already received), so the connection goes back to the pool instead of being closed and
    every reader of the body finishes rather than waiting for the garbage collector. A provider that
    keeps the stream open longer than :data:`BODY_END_GRACE_S`, or breaks it now, costs only that
    connection: the answer is complete and stands."""
    import httpx2

    with anyio.move_on_after(BODY_END_GRACE_S):
        try:
            async for _ in rest:
                pass
        except (httpx2.HTTPError, UpstreamError):
            pass  # the answer is already whole; the connection is closed, not reused


def is_event_stream(response: httpx2.Response) -> bool:
    """Whether the provider answered with server-sent events (rather than one JSON body)."""
    return response.headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream"


async def _read_capped(response: httpx2.Response, limit: int = ERROR_BODY_LIMIT) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def _is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def is_account_refusal(status: int, body: bytes | str) -> bool:
    """Whether an error reply means the account cannot pay for the call (no credits or balance left,
    a plan or usage window that does not cover it): an account state, not an outage."""
    if status == PAYMENT_STATUS:
        return True
    if status not in _ACCOUNT_STATUS:
        return False
    return says_account_refused(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)


def says_account_refused(text: str) -> bool:
    """Whether a provider's error text says the account's balance or plan does not cover the call."""
    return bool(_ACCOUNT_TEXT.search(text))


def billing_fix(label: str) -> str:
    """The fix for a provider refusing the call over the account's balance or plan."""
    return (f"add credits to the {label} account or check its plan (the provider refused the call "
            "for the account's balance or plan); ask-fable does not retry it or count it as an outage")


@dataclass(frozen=True)
class _Wire:
    """How one :func:`send` reaches the network."""

    clients: HttpClients
    retry: RetryPolicy
    transport: httpx2.AsyncBaseTransport | None
    max_reply_bytes: int
    clock: Clock


async def send(
    method: str,
    url: str,
    *,
    label: str,
    timeout: float,
    handle: Callable[[httpx2.Response], Awaitable[T]],
    headers: Mapping[str, str] | None = None,
    json: Any = None,
    secrets: Iterable[str] = (),
    sink: EventSink | None = None,
    retry: RetryPolicy | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    auth_hint: str | None = None,
    billing_hint: str | None = None,
    resources: Resources | None = None,
) -> T:
    """Send one request with the retry loop and return ``await handle(response)`` for a 2xx.

    ``timeout`` bounds the whole call, retries and backoff included. ``label`` names the
    provider in messages. ``secrets`` are scrubbed from every detail raised. ``auth_hint`` is the
    fix named when the provider rejects the credentials (401 / 403), ``billing_hint`` the one named
    when it refuses over the account's balance or plan (402, :func:`is_account_refusal`). The client,
    the retry policy (unless ``retry`` is given) and the reply bound come from ``resources`` (the
    App's); without them a private client is opened for this call.
    """
    from ask_fable.backends.resources import Resources

    res = resources or Resources.standalone()
    wire = _Wire(clients=http_clients(res), retry=retry or retry_policy(res), transport=transport,
                 max_reply_bytes=res.given_max_reply_bytes or MAX_REPLY_BYTES, clock=res.clock)
    secret_list = tuple(s for s in secrets if s)
    try:
        with anyio.fail_after(timeout):
            return await _send_with_retries(method, url, label=label, timeout=timeout, handle=handle,
                                            headers=headers, json=json, secrets=secret_list, sink=sink,
                                            wire=wire, auth_hint=auth_hint, billing_hint=billing_hint)
    except TimeoutError as exc:
        raise OracleTimeout(f"{label} did not answer within {timeout:g}s") from exc


async def _send_with_retries(
    method: str,
    url: str,
    *,
    label: str,
    timeout: float,
    handle: Callable[[httpx2.Response], Awaitable[T]],
    headers: Mapping[str, str] | None,
    json: Any,
    secrets: tuple[str, ...],
    sink: EventSink | None,
    wire: _Wire,
    auth_hint: str | None,
    billing_hint: str | None,
) -> T:
    import httpx2

    retry = wire.retry
    deadline = anyio.current_time() + timeout
    attempt = 0
    unreachable: str | None = None  # the hint, once the last failure was not reaching the host at all
    async with wire.clients.client(timeout, wire.transport) as client:
        while True:
            attempt += 1
            failure: str
            cause: str  # what went wrong as metadata only (no reply body), for the trace's retry event
            wait: float | None = None
            try:
                # The first attempt has the whole budget; a retry, what its backoff left of it.
                left = timeout if attempt == 1 else max(0.001, deadline - anyio.current_time())
                async with client.stream(method, url, headers=headers, json=json,
                                         timeout=request_timeouts(left)) as response:
                    status = response.status_code
                    if status < 400:
                        bound_reply(response, wire.max_reply_bytes, label)
                        try:
                            return await handle(response)
                        except AskFableError:
                            raise
                        except httpx2.TimeoutException as exc:
                            raise OracleTimeout(f"{label} stalled mid-answer") from exc
                        except httpx2.TransportError as exc:
                            raise UpstreamError(scrub(
                                f"{label} connection failed mid-answer ({type(exc).__name__})", secrets
                            )) from exc
                        except (httpx2.HTTPError, ValueError, TypeError, AttributeError, LookupError) as exc:
                            # A body shaped unlike the provider's API: report it, never crash.
                            raise UpstreamError(scrub(
                                f"{label} returned a malformed reply ({type(exc).__name__})", secrets
                            )) from exc
                    body = await _read_capped(response)
                    message = scrub(provider_message(body), secrets)
                    failure = f"{label} HTTP {status}: {message}"
                    cause = f"HTTP {status}"
                    if is_account_refusal(status, body):
                        raise NotConfigured(failure, hint=billing_hint or billing_fix(label))
                    if status in AUTH_STATUS:
                        raise NotConfigured(failure, hint=auth_hint or f"check the key sent to {label}")
                    if not _is_retryable(status):
                        raise UpstreamError(failure)
                    wait = retry_after_seconds(response.headers.get("retry-after"), wire.clock.now())
            except (httpx2.InvalidURL, httpx2.UnsupportedProtocol) as exc:
                # A malformed base URL never gets better on retry: it is configuration.
                raise NotConfigured(
                    scrub(f"invalid base URL for {label}: {url!r} ({exc})", secrets),
                    hint=f"set {label}'s base URL to an http:// or https:// address",
                ) from exc
            except httpx2.TimeoutException as exc:
                if not isinstance(exc, httpx2.ConnectTimeout | httpx2.PoolTimeout):
                    raise OracleTimeout(f"{label} did not answer within {timeout:g}s") from exc
                cause = "connection timed out"
                where = _host_port(url)
                failure = f"{label} {cause} (tried {where})"
                unreachable = _unreachable_hint(label, where)
            except httpx2.TransportError as exc:
                # Connect failures and a reset before any response header: nothing was processed.
                cause = f"connection failed ({type(exc).__name__})"
                where = _host_port(url)
                failure = f"{label} connection failed ({type(exc).__name__}; tried {where})"
                refused = isinstance(exc, httpx2.ConnectError)
                unreachable = _unreachable_hint(label, where) if refused else None
            else:
                unreachable = None
            if attempt >= retry.attempts:
                raise UpstreamError(scrub(f"{failure} (after {attempt} attempts)", secrets),
                                    **hinted(unreachable))
            delay = retry.backoff(attempt) if wait is None else wait
            await _back_off(delay, failure, cause, attempt, deadline, f"the {timeout:g}s deadline", label,
                            secrets, sink, unreachable)


def _host_port(url: str) -> str:
    """``host:port`` of ``url`` (the scheme's port when none is written); ``url`` unparsed, never its
    path or query, which may carry a key."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:
        return "its base URL"
    host = parts.hostname or "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _unreachable_hint(label: str, where: str) -> str:
    return (f"check that this machine reaches {where} (network, firewall, HTTPS_PROXY) and that {label}'s "
            "base URL setting names the right host; `ask-fable doctor` checks every backend")


async def _back_off(delay: float, failure: str, cause: str, attempt: int, deadline: float,
                    deadline_name: str, label: str, secrets: tuple[str, ...], sink: EventSink | None,
                    hint: str | None = None) -> None:
    """Wait ``delay`` seconds before the next attempt, or raise the failure as an
    :class:`UpstreamError` when the wait would end past the call's own deadline or past the
    shared deadline a mode set (:mod:`ask_fable.backends.deadline`), also if that one moves
    earlier during the wait."""
    shared = current_deadline()

    def give_up(passed: str) -> UpstreamError:
        tries = "attempt" if attempt == 1 else "attempts"
        return UpstreamError(scrub(
            f"{failure} (after {attempt} {tries}; a retry in {delay:.1f}s would pass {passed})", secrets
        ), **hinted(hint))

    if delay >= deadline - anyio.current_time():
        raise give_up(deadline_name)
    if shared is not None and delay >= shared.remaining():
        raise give_up(shared.reason)
    if sink is not None:
        sink.retry(attempt, cause, delay)
        await sink.note(f"{label}: {failure.removeprefix(label + ' ')}; retrying in {delay:.1f}s")
    if shared is None:
        await anyio.sleep(delay)
    elif not await shared.sleep(delay):
        raise give_up(shared.reason)


EFFORTS = ("quick", "standard", "deep")
_EFFORT_SYNONYMS = {"low": "quick", "medium": "standard", "high": "deep"}


def normalize_effort(value: str | None) -> str | None:
    """``quick`` / ``standard`` / ``deep`` (``low`` / ``medium`` / ``high`` accepted); ``None`` stays unset.

    Raises:
        BadArgs: any other value.
    """
    if value is None or not str(value).strip():
        return None
    text = str(value).strip().lower()
    text = _EFFORT_SYNONYMS.get(text, text)
    if text not in EFFORTS:
        from ask_fable.errors import BadArgs

        raise BadArgs(f"effort must be one of quick, standard, deep (got {value!r})")
    return text


class HttpOracle(Oracle):
    """What every HTTP oracle shares: endpoint, key, defaults, the key check and the App's resources.

    Subclasses (one per wire shape) implement :meth:`ask` by building the request body and
    calling :func:`send` with a reply parser. ``resources`` (the App's) supply the pooled client,
    the retry policy unless ``retry`` overrides it, and the reply bound; without them the oracle
    works standalone (a private client per call).
    """

    def __init__(
        self,
        *,
        token: str,
        provider: str,
        model: str,
        family: str,
        label: str,
        base_url: str,
        api_key: str | None,
        key_var: str | None,
        key_alias: str | None = None,
        effort: str | None = None,
        max_tokens: int | None = None,
        secrets: Iterable[str] = (),
        retry: RetryPolicy | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        resources: Resources | None = None,
    ) -> None:
        from ask_fable.backends.resources import Resources

        self.token = token
        self.provider = provider
        self.model = model
        self.family = family
        self.label = label
        self.base_url = base_url
        self.api_key = api_key or None
        self.key_var = key_var
        self.key_alias = key_alias
        self.effort = normalize_effort(effort)
        self.max_tokens = max_tokens
        own = [api_key] if api_key and len(api_key) >= 6 else []  # as Settings.secret_values does
        self.secrets = tuple({*(s for s in secrets if s), *own})
        self.retry = retry
        self.transport = transport
        self.resources = resources or Resources.standalone()

    def ensure_available(self) -> None:
        """Raise ``NotConfigured`` naming the variable to set when the key is required and missing."""
        if self.key_var and not self.api_key:
            alias = f" (or {self.key_alias})" if self.key_alias else ""
            raise NotConfigured(f"{self.label} needs an API key: set {self.key_var}{alias}",
                                hint=f"set {self.key_var} in the server's environment or config file")

    def reply_tokens(self, request: OracleRequest) -> int:
        """The answer's room: the request's ``max_tokens``, else this oracle's, else 8192."""
        return request.max_tokens or self.max_tokens or 8192

    def billing_hint(self) -> str:
        """The fix named when the provider refuses the call over the account's balance or plan."""
        return billing_fix(self.label)

    def auth_hint(self) -> str:
        """The fix named when the provider rejects the credentials (HTTP 401 / 403)."""
        if not self.key_var:
            return f"check the key sent to {self.label}"
        alias = f" (or {self.key_alias})" if self.key_alias else ""
        return (f"set a valid {self.key_var}{alias} in the server's environment or config file; "
                "the provider rejected the one configured or it lacks access to this model")

    async def post(self, url: str, *, timeout: float, handle: Callable[[httpx2.Response], Awaitable[T]],
                   headers: Mapping[str, str], json: Any, sink: EventSink) -> T:
        """POST through :func:`send` with this oracle's label, secrets, resources, retry policy,
        transport, auth hint and billing hint."""
        return await send("POST", url, label=self.label, timeout=timeout, handle=handle, headers=headers,
                          json=json, secrets=self.secrets, sink=sink, retry=self.retry,
                          transport=self.transport, auth_hint=self.auth_hint(),
                          billing_hint=self.billing_hint(), resources=self.resources)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(token={self.token!r}, base_url={self.base_url!r})"


def usage_from(
    input_tokens: Any = None, output_tokens: Any = None, reasoning_tokens: Any = None, cost: Any = None
) -> Usage | None:
    """A :class:`Usage` from loosely typed provider numbers; ``None`` when nothing was reported."""

    def as_int(value: Any) -> int | None:
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def as_float(value: Any) -> float | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return None
        return None

    read_in, read_out, reasoned, dollars = (as_int(input_tokens), as_int(output_tokens),
                                            as_int(reasoning_tokens), as_float(cost))
    if read_in is None and read_out is None and reasoned is None and dollars is None:
        return None
    return Usage(input_tokens=read_in, output_tokens=read_out, reasoning_tokens=reasoned, cost_usd=dollars)
