"""Probes: each backend's state without a model call, the cheapest way its transport allows.

- Claude: a Claude Code CLI exists (bundled with claude-agent-sdk or on PATH) and answers
  ``--version``, and a login is found;
- CLI backends: the binary is on PATH and answers ``--version``;
- HTTP backends with a key: the key is set, and a TCP connection to the endpoint opens (no request
  is sent);
- Ollama: the daemon answers ``GET /api/version`` (free, unauthenticated); ollama.com needs a key.

Every binary is run through :func:`cli_version`, the one probe runner. A probe never raises for a
backend's state: it reports it, with ``enable`` the exact step that fixes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ask_fable.backends.descriptor import Backend, BackendReport, ProbeOptions

if TYPE_CHECKING:
    from ask_fable.config import Settings


def new_report(backend: Backend) -> BackendReport:
    """A report for ``backend`` that says missing until a probe finds otherwise."""
    return BackendReport(name=backend.name, kind=backend.transport, configured=False, reachable=None,
                         status="missing")


# --- primitives -----------------------------------------------------------------------------------


async def cli_version(binary: str, timeout: float) -> tuple[bool, str]:
    """Run ``binary --version`` through the subprocess runner (own process session, base allow-list
    only: no key of the server's environment); (succeeded, first output line or reason)."""
    from ask_fable.backends.subprocess_runner import probe_version

    return await probe_version(binary, timeout)


async def tcp_reachable(url: str, timeout: float) -> tuple[bool, str]:
    """Whether a TCP connection to ``url``'s host and port opens (nothing is sent)."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return False, f"cannot read a host from {url!r}"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return False, f"{host}:{port} did not accept a connection within {timeout:g}s"
    except OSError as exc:
        return False, f"{host}:{port} unreachable ({exc.strerror or type(exc).__name__})"
    writer.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.wait_closed(), 1.0)
    return True, f"{host}:{port} accepts connections"


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an HTTP backend's base URL (a scheme other than http/https, no host, a
    malformed host or port), or ``None``."""
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port
    except ValueError as exc:
        return f"{url!r} is not an http:// or https:// address ({exc})"
    if parts.scheme not in ("http", "https") or not host:
        return f"{url!r} is not an http:// or https:// address"
    return None


def _bad_base_url(backend: Backend, settings: Settings, report: BackendReport) -> bool:
    """Report a base URL that cannot work, naming the variable that sets it; whether there was one."""
    problem = base_url_problem(backend.base_url(settings) or "")
    if problem is None:
        return False
    setting = backend.base_url_vars[0] if backend.base_url_vars else "the base URL"
    report.configured = False
    report.detail = problem
    report.enable = f"set {setting} to the provider's http:// or https:// address"
    return True


async def ollama_version(base_url: str, timeout: float) -> tuple[bool, str]:
    """``GET <base>/api/version`` (free, no key); (answered, version or reason)."""
    import httpx2

    url = base_url.rstrip("/") + "/api/version"
    try:
        async with httpx2.AsyncClient(timeout=timeout) as client:
            response = await asyncio.wait_for(client.get(url), timeout)
    except (TimeoutError, httpx2.HTTPError) as exc:
        return False, f"no Ollama at {base_url} ({type(exc).__name__})"
    if response.status_code != 200:
        return False, f"{url} answered HTTP {response.status_code}"
    try:
        return True, str(response.json().get("version", "unknown"))
    except ValueError:
        return True, "unknown"


async def _version(report: BackendReport, binary: str, options: ProbeOptions) -> bool:
    """Run the version probe into ``report``; whether it answered."""
    ok, text = await cli_version(binary, options.timeout)
    report.reachable = ok
    report.version = text if ok else None
    if not ok:
        report.detail = text
    return ok


# --- probes by transport ----------------------------------------------------------------------------


async def probe_claude(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """A Claude backend: the CLI the Agent SDK would run, its ``--version``, and a login."""
    from ask_fable.backends.claude_common import login_found, login_hint

    report = new_report(backend)
    try:
        from ask_fable.backends.claude_sdk import ClaudeCliChoice

        cli = await ClaudeCliChoice().path(settings)
    except Exception as exc:  # BinaryMissing, or the backend not installed at all
        report.detail = getattr(exc, "detail", None) or str(exc)
        report.enable = backend.enable
        return report
    report.configured = True
    report.detail = f"Claude Code CLI: {cli}"
    if options.reach:
        await _version(report, cli, options)
    if not login_found():
        report.detail = f"{report.detail}; no Claude login found"
        report.enable = login_hint()
        report.status = "needs_login"
    return report


async def probe_cli(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """A CLI backend: its binary is on PATH and answers ``--version``."""
    binary = backend.binary or backend.name
    report = new_report(backend)
    path = shutil.which(binary)
    if path is None:
        report.detail = f"`{binary}` is not on PATH"
        report.enable = backend.enable
        return report
    report.configured = True
    report.detail = f"{binary}: {path}"
    if options.reach and not await _version(report, path, options):
        report.enable = f"check that `{binary} --version` works; {backend.enable}"
    return report


async def probe_key(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """An HTTP backend with a key: the key is set and the endpoint accepts a connection."""
    report = new_report(backend)
    base_url = backend.base_url(settings) or ""
    report.configured = bool(backend.key(settings))
    if not report.configured:
        report.detail = f"{backend.key_vars[0]} is not set"
        report.enable = backend.enable
        return report
    if _bad_base_url(backend, settings, report):
        return report
    report.detail = f"key set; endpoint {base_url}"
    if options.reach:
        ok, text = await tcp_reachable(base_url, options.timeout)
        report.reachable = ok
        if not ok:
            report.detail = text
            report.enable = f"check network access to {base_url} (or set the {backend.name} base URL)"
    return report


async def probe_ollama(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """Ollama: a remote endpoint needs its key; a local daemon must answer ``/api/version``."""
    base_url = backend.base_url(settings) or ""
    report = new_report(backend)
    if _bad_base_url(backend, settings, report):
        return report
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "ollama.com" or host.endswith(".ollama.com"):
        report = await probe_key(backend, settings, options)
        if not report.configured:
            report.detail = f"{base_url} needs {backend.key_vars[0]}"
            report.enable = f"set {backend.key_vars[0]} to an ollama.com API key"
        return report
    if not options.reach:
        report.configured = True
        report.status = "not_checked"
        report.detail = f"local daemon at {base_url}; only a probe tells whether it is running"
        return report
    ok, text = await ollama_version(base_url, options.timeout)
    report.configured = ok
    report.reachable = ok
    report.version = text if ok else None
    report.detail = f"daemon at {base_url}" if ok else text
    if not ok:
        report.enable = backend.enable
    return report
