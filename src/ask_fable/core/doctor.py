"""Diagnosis of every backend without a model call: configured, reachable, model, timeout, breaker.

Reachability is probed the cheapest way each backend allows, all probes at once, each bounded by
a short timeout, so a machine with no network and no credentials gets its answer in seconds:

- Claude (fable, opus): a Claude Code CLI exists (bundled with claude-agent-sdk or on PATH) and
  answers ``--version``;
- CLI backends (minimax, gemini, codex, grok, kimi): the binary is on PATH and answers ``--version``;
- HTTP backends (glm, deepseek, atlas, openrouter): the key is set, and a TCP connection to the
  endpoint opens (no request is sent);
- Ollama: the daemon answers ``GET /api/version`` (free, unauthenticated); ollama.com needs a key.

For each backend that is not usable, ``enable`` is the exact step that fixes it. Without probes,
a backend whose readiness only a probe can tell (a local Ollama daemon) is ``not_checked``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ask_fable import __version__
from ask_fable.config import Settings

BACKENDS: tuple[str, ...] = (
    "fable", "opus", "minimax", "gemini", "codex", "grok", "kimi",
    "glm", "deepseek", "atlas", "openrouter", "ollama",
)
CLI_BINARIES: dict[str, str] = {
    "minimax": "mmx", "gemini": "agy", "codex": "codex", "grok": "grok", "kimi": "kimi",
}
CLI_STEPS: dict[str, str] = {
    "minimax": "install the MiniMax CLI (npm install -g mmx-cli) and run `mmx auth login` once",
    "gemini": "install the `agy` CLI and sign in once (run `agy` interactively)",
    "codex": "install OpenAI's codex CLI (npm install -g @openai/codex) and run `codex login` once",
    "grok": "install the `grok` CLI and log in once",
    "kimi": "install the Kimi Code CLI (`kimi`) and log in once",
}
HTTP_KEYS: dict[str, str] = {
    "glm": "ASK_FABLE_GLM_API_KEY",
    "deepseek": "ASK_FABLE_DEEPSEEK_API_KEY",
    "atlas": "ASK_FABLE_ATLAS_API_KEY",
    "openrouter": "ASK_FABLE_OPENROUTER_API_KEY",
}
HTTP_STEPS: dict[str, str] = {
    "glm": "set ASK_FABLE_GLM_API_KEY to a Z.ai API key (in the server's env or the config file)",
    "deepseek": "set ASK_FABLE_DEEPSEEK_API_KEY to a DeepSeek API key",
    "atlas": "set ASK_FABLE_ATLAS_API_KEY (or ATLASCLOUD_API_KEY) to an Atlas Cloud key",
    "openrouter": "set ASK_FABLE_OPENROUTER_API_KEY (or OPENROUTER_API_KEY) to an OpenRouter key",
}
CLAUDE_STEP = ("install Claude Code (npm install -g @anthropic-ai/claude-code) or reinstall claude-agent-sdk "
               "(it bundles the CLI), then log in once: run `claude` and use /login")
OLLAMA_STEP = ("install Ollama, start it (`ollama serve`) and run `ollama signin` once; or set "
               "ASK_FABLE_OLLAMA_BASE_URL=https://ollama.com and ASK_FABLE_OLLAMA_API_KEY")
DEFAULT_PROBE_TIMEOUT = 3.0


@dataclass
class BackendReport:
    """One backend's state."""

    name: str
    kind: str  # claude | cli | http
    configured: bool
    reachable: bool | None  # None: not probed
    status: str  # ready | needs_login | unreachable | missing | not_checked
    model: str | None = None
    timeout_s: float | None = None
    breaker: str | None = None
    version: str | None = None
    detail: str | None = None
    enable: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return asdict(self)


@dataclass
class DoctorReport:
    """The whole diagnosis."""

    version: str
    python: str
    config_file: str
    state_dir: str
    backends: list[BackendReport] = field(default_factory=list)
    #: Settings that could not be used as written (``SettingProblem.to_dict()`` each).
    settings_problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ready(self) -> list[str]:
        """Backends that can answer now."""
        return [b.name for b in self.backends if b.status == "ready"]

    @property
    def missing(self) -> list[str]:
        """Backends that are not ready: not set up, not reachable, or not checked."""
        return [b.name for b in self.backends if b.status != "ready"]

    @property
    def not_checked(self) -> list[str]:
        """Backends whose state only a probe can tell, when probes were skipped."""
        return [b.name for b in self.backends if b.status == "not_checked"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "version": self.version, "python": self.python, "config_file": self.config_file,
            "state_dir": self.state_dir, "ready": self.ready, "missing": self.missing,
            "not_checked": self.not_checked, "backends": [b.to_dict() for b in self.backends],
            "settings_problems": self.settings_problems,
        }


# --- probes ------------------------------------------------------------------------------------


async def cli_version(binary: str, timeout: float) -> tuple[bool, str]:
    """Run ``binary --version`` in its own process group; (succeeded, first output line or reason)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            binary, "--version", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
    except OSError as exc:
        return False, f"cannot start {binary}: {exc.strerror or exc}"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException as exc:  # a timeout or a cancelled diagnose: never leave the probe running
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 1.0)
        if not isinstance(exc, TimeoutError):
            raise
        return False, f"`{Path(binary).name} --version` did not answer within {timeout:g}s"
    first = next((line.strip() for line in out.decode("utf-8", "replace").splitlines() if line.strip()), "")
    if proc.returncode != 0:
        return False, f"`{Path(binary).name} --version` exited {proc.returncode}: {first[:160]}"
    return True, first[:120]


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


# --- per-backend diagnosis -----------------------------------------------------------------------


def _timeout_for(name: str, settings: Settings) -> float:
    specific = {"gemini": settings.gemini_timeout, "codex": settings.codex_timeout,
                "grok": settings.grok_timeout, "kimi": settings.kimi_timeout}.get(name)
    return settings.backend_timeout(specific)


def _model_for(name: str, settings: Settings) -> str:
    return {
        "fable": settings.fable_model or "claude-fable-5-1 (falls back to claude-fable-5)",
        "opus": settings.opus_model,
        "minimax": settings.minimax_model, "gemini": settings.gemini_model, "codex": settings.codex_model,
        "grok": settings.grok_model, "kimi": settings.kimi_model, "glm": settings.glm_model,
        "deepseek": settings.deepseek_model, "atlas": settings.atlas_model,
        "openrouter": settings.openrouter_model, "ollama": settings.ollama_model,
    }[name]


def _token_for(name: str, settings: Settings) -> str:
    if name == "atlas":
        return f"atlas:{settings.atlas_model}"
    if name == "openrouter":
        return f"openrouter:{settings.openrouter_model}"
    if name == "ollama":
        return f"ollama:{settings.ollama_model}"
    return name


def _breaker_state(breaker: Any, token: str, settings: Settings) -> str | None:
    """The breaker state of the oracle ``token`` builds, under the key the breaker tracks it by."""
    if breaker is None:
        return None
    from ask_fable.core.tokens import build_oracle

    try:
        key = build_oracle(token, settings).breaker_key
        snapshot = breaker.snapshot()
    except Exception:
        return None
    entry = snapshot.get(key) if isinstance(snapshot, dict) else None
    return str(entry.get("state", "closed")) if isinstance(entry, dict) else "closed"


def _claude_login_hint() -> str | None:
    if os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("CLAUDE_CODE_OAUTH_TOKEN"):
        return None
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    home = Path(base).expanduser() if base else Path.home() / ".claude"
    if (home / ".credentials.json").exists() or platform.system() == "Darwin":
        return None  # macOS keeps the login in the keychain, which we do not read
    return "no Claude login found: run `claude` once and use /login (or set ANTHROPIC_API_KEY)"


async def _claude(name: str, settings: Settings, timeout: float, probe: bool) -> BackendReport:
    import anyio

    report = BackendReport(name=name, kind="claude", configured=False, reachable=None, status="missing")
    try:
        from ask_fable.backends.claude_sdk import choose_cli_path

        cli = await anyio.to_thread.run_sync(choose_cli_path, settings)
    except Exception as exc:  # BinaryMissing, or the backend not installed at all
        report.detail = getattr(exc, "detail", None) or str(exc)
        report.enable = CLAUDE_STEP
        return report
    report.configured = True
    report.detail = f"Claude Code CLI: {cli}"
    if probe:
        ok, text = await cli_version(cli, timeout)
        report.reachable = ok
        report.version = text if ok else None
        if not ok:
            report.detail = text
    hint = _claude_login_hint()
    if hint:
        report.detail = f"{report.detail}; {hint}"
        report.enable = "log in once: run `claude` and use /login (or set ANTHROPIC_API_KEY)"
        report.status = "needs_login"
    return report


async def _cli(name: str, timeout: float, probe: bool) -> BackendReport:
    binary = CLI_BINARIES[name]
    report = BackendReport(name=name, kind="cli", configured=False, reachable=None, status="missing")
    path = shutil.which(binary)
    if path is None:
        report.detail = f"`{binary}` is not on PATH"
        report.enable = CLI_STEPS[name]
        return report
    report.configured = True
    report.detail = f"{binary}: {path}"
    if probe:
        ok, text = await cli_version(path, timeout)
        report.reachable = ok
        report.version = text if ok else None
        if not ok:
            report.detail = text
            report.enable = f"check that `{binary} --version` works; " + CLI_STEPS[name]
    return report


async def _http(name: str, settings: Settings, timeout: float, probe: bool) -> BackendReport:
    base_url = {"glm": settings.glm_base_url, "deepseek": settings.deepseek_base_url,
                "atlas": settings.atlas_base_url, "openrouter": settings.openrouter_base_url}[name]
    key = {"glm": settings.glm_api_key, "deepseek": settings.deepseek_api_key,
           "atlas": settings.atlas_api_key, "openrouter": settings.openrouter_api_key}[name]
    report = BackendReport(name=name, kind="http", configured=bool(key), reachable=None, status="missing")
    if not key:
        report.detail = f"{HTTP_KEYS[name]} is not set"
        report.enable = HTTP_STEPS[name]
        if name == "atlas" and settings.atlas_model.startswith("xai/grok") and shutil.which("grok"):
            report.detail += "; xai/grok-* models still work through the local grok CLI"
        return report
    report.detail = f"key set; endpoint {base_url}"
    if probe:
        ok, text = await tcp_reachable(base_url, timeout)
        report.reachable = ok
        if not ok:
            report.detail = text
            report.enable = f"check network access to {base_url} (or set the {name} base URL)"
    return report


async def _ollama(settings: Settings, timeout: float, probe: bool) -> BackendReport:
    base_url = settings.ollama_base_url
    host = (urlsplit(base_url).hostname or "").lower()
    remote = host == "ollama.com" or host.endswith(".ollama.com")
    report = BackendReport(name="ollama", kind="http", configured=False, reachable=None, status="missing")
    if remote:
        report.configured = bool(settings.ollama_api_key)
        if not report.configured:
            report.detail = f"{base_url} needs ASK_FABLE_OLLAMA_API_KEY"
            report.enable = "set ASK_FABLE_OLLAMA_API_KEY to an ollama.com API key"
            return report
        report.detail = f"key set; endpoint {base_url}"
        if probe:
            ok, text = await tcp_reachable(base_url, timeout)
            report.reachable = ok
            if not ok:
                report.detail = text
        return report
    if not probe:
        report.configured = True
        report.status = "not_checked"
        report.detail = f"local daemon at {base_url}; only a probe tells whether it is running"
        return report
    ok, text = await ollama_version(base_url, timeout)
    report.configured = ok
    report.reachable = ok
    report.version = text if ok else None
    report.detail = f"daemon at {base_url}" if ok else text
    if not ok:
        report.enable = OLLAMA_STEP
    return report


async def _one(name: str, settings: Settings, timeout: float, probe: bool) -> BackendReport:
    if name in ("fable", "opus"):
        return await _claude(name, settings, timeout, probe)
    if name in CLI_BINARIES:
        return await _cli(name, timeout, probe)
    if name == "ollama":
        return await _ollama(settings, timeout, probe)
    return await _http(name, settings, timeout, probe)


async def diagnose(settings: Settings, *, breaker: Any = None, probe: bool = True,
                   timeout: float = DEFAULT_PROBE_TIMEOUT, only: list[str] | None = None) -> DoctorReport:
    """Diagnose every backend (or those in ``only``) concurrently; never raises for a backend's state."""
    import anyio

    from ask_fable.config import config_file_path

    names = [n for n in BACKENDS if not only or n in only]
    results: dict[str, BackendReport] = {}

    async def run(name: str) -> None:
        try:
            with anyio.fail_after(timeout + 2):
                report = await _one(name, settings, timeout, probe)
        except TimeoutError:
            report = BackendReport(name=name, kind="unknown", configured=False, reachable=False,
                                   status="unreachable",
                                   detail=f"diagnosis took longer than {timeout + 2:g}s")
        except Exception as exc:  # diagnosis must describe a broken backend, not crash on it
            report = BackendReport(name=name, kind="unknown", configured=False, reachable=None,
                                   status="missing",
                                   detail=f"could not diagnose: {type(exc).__name__}: {exc}")
        report.model = _model_for(name, settings)
        report.timeout_s = _timeout_for(name, settings)
        report.breaker = _breaker_state(breaker, _token_for(name, settings), settings)
        if not report.configured:
            report.status = "missing"
        elif report.reachable is False or report.breaker == "open":
            report.status = "unreachable"
        elif report.status not in ("needs_login", "not_checked"):
            report.status = "ready"
        results[name] = report

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(run, name)
    return DoctorReport(
        version=__version__, python=platform.python_version(), config_file=str(config_file_path()),
        state_dir=str(settings.state_dir), backends=[results[n] for n in names],
        settings_problems=[problem.to_dict() for problem in settings.problems],
    )


def run_doctor(settings: Settings | None = None, *, probe: bool = True,
               timeout: float = DEFAULT_PROBE_TIMEOUT) -> DoctorReport:
    """Synchronous :func:`diagnose` for the command line."""
    import anyio

    from ask_fable.config import load_settings

    chosen = settings or load_settings()
    return anyio.run(lambda: diagnose(chosen, probe=probe, timeout=timeout))


_MARK = {"ready": "✓", "needs_login": "?", "unreachable": "!", "missing": "✗", "not_checked": "·"}


def format_report(report: DoctorReport) -> str:
    """The human-readable report printed by ``ask-fable doctor``."""
    lines = [f"ask-fable {report.version} (Python {report.python})",
             f"config file: {report.config_file}", f"state dir:   {report.state_dir}", ""]
    lines += settings_section(report.settings_problems)
    width = max(len(b.name) for b in report.backends) if report.backends else 8
    for b in report.backends:
        breaker = f", breaker {b.breaker}" if b.breaker and b.breaker != "closed" else ""
        lines.append(f"{_MARK.get(b.status, '?')} {b.name:<{width}}  {b.status.replace('_', ' '):<12} "
                     f"model {b.model}, "
                     f"timeout {b.timeout_s:g}s{breaker}")
        if b.version:
            lines.append(f"  {'':<{width}}  version: {b.version}")
        if b.detail:
            lines.append(f"  {'':<{width}}  {b.detail}")
        if b.enable and b.status != "ready":
            lines.append(f"  {'':<{width}}  → {b.enable}")
    lines.append("")
    ready = report.ready
    lines.append(f"{len(ready)} of {len(report.backends)} backends ready"
                 + (f": {', '.join(ready)}" if ready else ""))
    if report.not_checked:
        lines.append(f"not checked: {', '.join(report.not_checked)} (run `ask-fable doctor` without "
                     "--no-probe to check)")
    if not ready:
        lines.append("Start with Claude: install and log in to Claude Code, then run "
                     "`ask-fable doctor` again.")
    return "\n".join(lines)


# --- settings ------------------------------------------------------------------------------------


def settings_section(problems: list[dict[str, Any]]) -> list[str]:
    """The report's settings lines: each value that could not be used, and what is used instead."""
    if not problems:
        return []
    lines = [f"! settings: {len(problems)} could not be used as written (each falls back as stated)"]
    lines += [f"  {problem['message']}" for problem in problems]
    return [*lines, ""]
