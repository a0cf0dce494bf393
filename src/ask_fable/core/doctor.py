"""Diagnosis of every registered backend without a model call: configured, reachable, model,
timeout, breaker.

Each backend's own probe (:mod:`ask_fable.backends.probes`) checks it the cheapest way its transport
allows; all probes run at once, each bounded by a short timeout, so a machine with no network and
no credentials gets its answer in seconds. For each backend that is not usable, ``enable`` is the
exact step that fixes it. Without probes, a backend whose readiness only a probe can tell (a local
Ollama daemon) is ``not_checked``.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ask_fable import __version__
from ask_fable.backends.builtin import BUILTIN
from ask_fable.backends.descriptor import Backend, BackendReport, ProbeOptions
from ask_fable.backends.registry import plugin_problems, registered
from ask_fable.config import Settings
from ask_fable.contract import PluginIssue, SettingIssue

if TYPE_CHECKING:
    from ask_fable.backends.breaker import CircuitBreaker
    from ask_fable.core.settings_in_force import SavedValue, SettingsInForce

#: The built-in backends, in the order they are reported.
BACKENDS: tuple[str, ...] = tuple(backend.name for backend in BUILTIN)
DEFAULT_PROBE_TIMEOUT = ProbeOptions().timeout


@dataclass
class DoctorReport:
    """The whole diagnosis."""

    version: str
    python: str
    config_file: str
    state_dir: str
    backends: list[BackendReport] = field(default_factory=list)
    #: Settings that could not be used as written.
    settings_problems: list[SettingIssue] = field(default_factory=list)
    #: The settings saved to a shared database that the report's settings include.
    saved: list[SavedValue] = field(default_factory=list)
    #: Why a shared database's saved settings could not be read (the report then goes without them).
    saved_unread: str | None = None
    #: Installed backend plugins that could not be loaded.
    plugin_problems: list[PluginIssue] = field(default_factory=list)

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
            "settings_problems": [problem.model_dump(mode="json") for problem in self.settings_problems],
            "saved_settings": [value.shown().model_dump(mode="json") for value in self.saved],
            "saved_settings_unread": self.saved_unread,
            "plugin_problems": [problem.model_dump(mode="json") for problem in self.plugin_problems],
        }


def _breaker_state(breaker: CircuitBreaker | None, token: str, settings: Settings) -> str | None:
    """The breaker state of the oracle ``token`` builds, under the key the breaker tracks it by."""
    if breaker is None:
        return None
    from ask_fable.core.tokens import build_oracle

    try:
        key = build_oracle(token, settings).breaker_key
    except Exception:
        return None
    return breaker.state(key)


async def diagnose(settings: Settings, *, breaker: CircuitBreaker | None = None, probe: bool = True,
                   timeout: float = DEFAULT_PROBE_TIMEOUT, only: list[str] | None = None,
                   in_force: SettingsInForce | None = None) -> DoctorReport:
    """Diagnose every backend (or those in ``only``) concurrently; never raises for a backend's state.
    ``in_force`` (what a shared database's saved settings contributed to ``settings``) goes into the
    report as its saved settings."""
    import anyio

    from ask_fable.config import config_file_path

    chosen = [backend for backend in registered() if not only or backend.name in only]
    options = ProbeOptions(reach=probe, timeout=timeout)
    results: dict[str, BackendReport] = {}

    async def run(backend: Backend) -> None:
        name = backend.name
        try:
            with anyio.fail_after(timeout + 2):
                report = await backend.probe(backend, settings, options)
        except TimeoutError:
            report = BackendReport(name=name, kind="unknown", configured=False, reachable=False,
                                   status="unreachable",
                                   detail=f"diagnosis took longer than {timeout + 2:g}s")
        except Exception as exc:  # diagnosis must describe a broken backend, not crash on it
            report = BackendReport(name=name, kind="unknown", configured=False, reachable=None,
                                   status="missing",
                                   detail=f"could not diagnose: {type(exc).__name__}: {exc}")
        report.model = backend.model(settings)
        report.timeout_s = backend.timeout(settings)
        report.breaker = _breaker_state(breaker, backend.default_token(settings), settings)
        if not report.configured:
            report.status = "missing"
        elif report.reachable is False or report.breaker == "open":
            report.status = "unreachable"
        elif report.status not in ("needs_login", "not_checked"):
            report.status = "ready"
        results[name] = report

    async with anyio.create_task_group() as group:
        for backend in chosen:
            group.start_soon(run, backend)
    return DoctorReport(
        version=__version__, python=platform.python_version(), config_file=str(config_file_path()),
        state_dir=str(settings.state_dir), backends=[results[b.name] for b in chosen],
        settings_problems=[SettingIssue(setting=p.setting, source=p.source, problem=p.problem, using=p.using,
                                        message=p.message()) for p in settings.problems],
        saved=[] if in_force is None else in_force.saved,
        saved_unread=None if in_force is None else in_force.unread,
        plugin_problems=[PluginIssue(plugin=p.plugin, target=p.target, problem=p.problem, message=p.message())
                         for p in plugin_problems()],
    )


def run_doctor(in_force: SettingsInForce | None = None, *, probe: bool = True,
               timeout: float = DEFAULT_PROBE_TIMEOUT) -> DoctorReport:
    """Synchronous :func:`diagnose` for the command line, of the settings the servers run with (on a
    shared database, the saved ones included: see :mod:`ask_fable.core.settings_in_force`)."""
    import anyio

    from ask_fable.core.settings_in_force import settings_in_force

    chosen = in_force or settings_in_force()
    return anyio.run(lambda: diagnose(chosen.settings, probe=probe, timeout=timeout, in_force=chosen))


_MARK = {"ready": "✓", "needs_login": "?", "unreachable": "!", "missing": "✗", "not_checked": "·"}


def format_report(report: DoctorReport) -> str:
    """The human-readable report printed by ``ask-fable doctor``."""
    lines = [f"ask-fable {report.version} (Python {report.python})",
             f"config file: {report.config_file}", f"state dir:   {report.state_dir}", ""]
    lines += settings_section(report.settings_problems)
    lines += saved_section(report.saved, report.saved_unread)
    lines += plugins_section(report.plugin_problems)
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
        lines.append("Start with Claude: run `ask-fable login`, then `ask-fable doctor` again.")
    return "\n".join(lines)


# --- settings ------------------------------------------------------------------------------------


def settings_section(problems: Sequence[SettingIssue]) -> list[str]:
    """The report's settings lines: each value that could not be used, and what is used instead."""
    if not problems:
        return []
    lines = [f"! settings: {len(problems)} could not be used as written (each falls back as stated)"]
    lines += [f"  {problem.message}" for problem in problems]
    return [*lines, ""]


def plugins_section(problems: Sequence[PluginIssue]) -> list[str]:
    """The report's lines on backend plugins that could not be loaded."""
    if not problems:
        return []
    lines = [f"! plugins: {len(problems)} could not be loaded"]
    lines += [f"  {problem.message}" for problem in problems]
    return [*lines, ""]


def saved_section(saved: list[SavedValue], unread: str | None) -> list[str]:
    """The report's lines on a shared database's saved settings: each value with who saved it, and
    the hand-set value it hides with the command that lets that one apply again."""
    if unread is not None:
        return [f"! saved settings: not read ({unread}); the values below are the config file's and the "
                "environment's, which settings saved in the database may override", ""]
    if not saved:
        return []
    lines = ["saved settings (in the shared database, above the config file and environment; every "
             "server runs with them):"]
    for value in saved:
        lines.append(f"  {value.line()}")
        if value.hides is not None:
            lines.append(f"    → to use that value instead: `ask-fable db settings --forget {value.name}`")
    return [*lines, ""]
