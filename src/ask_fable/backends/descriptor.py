"""What a backend is, in one record: its tokens, lab, transport, settings, factory, probe and tool.

A :class:`Backend` is all the server knows about one backend. Token resolution, ``doctor`` and
``diagnose``, the one-model tools and their descriptions, ``ask_fable_help``, redaction of its key,
council anonymization of its lab's name and the docs all read it through
:mod:`ask_fable.backends.registry`; nothing else names a backend's binary, key variable or install
step. An HTTP provider's own settings are a :class:`~ask_fable.config.ProviderSettings` model it
declares (``settings_model``), read as the settings section named after the backend; other backends
read their settings through typed accessors (``model_of``, ``timeout_of``), so a value the user
changed shows wherever the descriptor is read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from ask_fable.config import ENV_PREFIX, ProviderSettings, Settings, section_fields
from ask_fable.config_sources import env_names

if TYPE_CHECKING:
    from ask_fable.backends.base import Oracle
    from ask_fable.backends.resources import Resources

Transport = Literal["claude", "cli", "http"]
Tier = Literal["default", "middle"]


class Factory(Protocol):
    """Builds the oracle for one call: ``token`` as resolved, ``model`` (``None``: the configured
    default), ``effort`` (``None``: the configured default) and the App's ``resources`` (clients,
    gates, retry policy; ``None``: standalone). A factory ignores what it does not take."""

    def __call__(self, settings: Settings, *, token: str, model: str | None, effort: str | None,
                 resources: Resources | None) -> Oracle:
        """The oracle; raises an ``AskFableError`` (a bad effort, a bad model id) when it cannot be built."""
        ...


class BackendReport(BaseModel):
    """One backend's state, as ``ask-fable doctor`` and the ``diagnose`` tool report it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str  # the transport: claude | cli | http (unknown when diagnosis itself failed)
    configured: bool
    reachable: bool | None = None  # None: not probed
    status: str  # ready | needs_login | unreachable | missing | not_checked
    model: str | None = None
    timeout_s: float | None = None
    breaker: str | None = None
    version: str | None = None
    detail: str | None = None
    enable: str | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-ready view."""
        return self.model_dump()


@dataclass(frozen=True)
class ProbeOptions:
    """How far a probe may go: ``reach`` false checks configuration only (instant); ``timeout``
    bounds each check in seconds."""

    reach: bool = True
    timeout: float = 3.0


#: Checks one backend without a model call and reports its state (never raises for the state).
Probe = Callable[["Backend", "Settings", ProbeOptions], Awaitable[BackendReport]]


@dataclass(frozen=True)
class Token:
    """A model token a backend answers to, its other spellings, and a short note for the token list."""

    name: str
    aliases: tuple[str, ...] = ()
    about: str = ""


#: How a tool that continues a conversation tells its caller to use ``session``.
SESSION_HELP = (
    "Reuse `session` for follow-ups; a new key or reset=true starts a new topic. A `followup` in the "
    "result says what to paste next."
)


@dataclass(frozen=True)
class ModelTool:
    """The one-model tool a backend brings (``ask_deepseek``): its name, its description (which may
    name the backend's :meth:`Backend.facts`: ``{label}``, ``{model}``, ``{key_vars}``…) and whether it
    takes a ``model`` argument (described by ``model_arg``) and an ``effort`` (the quick / standard /
    deep presets; or, with ``effort_choices``, those words, described by ``effort_arg``). With
    ``session``, it is a turn of a conversation with the backend, as ``ask`` with its token: it takes
    ``session`` and ``reset`` instead of a model or an effort."""

    name: str
    description: str
    model_arg: str | None = None
    effort: bool = False
    effort_choices: tuple[str, ...] = ()
    effort_arg: str = ""
    session: bool = False


@dataclass(frozen=True)
class Backend:
    """One backend, registered once.

    ``name`` is what ``doctor`` and ``diagnose`` call it. A backend answers to its ``tokens``
    (the first is ``name`` itself) or, with ``prefix``, to ``<prefix>:<model id>``, whose id
    ``normalize_model`` puts in the provider's form. ``tier`` is the smallest tier it joins (with
    ``tier_needs_key``, only once its key is set) and ``cost_rank`` orders tier members, cheapest
    first. ``settings_model`` is an HTTP provider's own settings (key, endpoint, default model: the
    section named after the backend, variables ``ASK_FABLE_<NAME>_API_KEY`` and so on); ``model_of``
    and ``timeout_of`` read another backend's model and timeout from the settings; ``model_fallback``
    is what the model reads as when its setting is unset (or when there is none).
    ``context_tokens`` is the context window a conversation with its models is fitted into (for a
    prefixed backend, a window its models commonly have). ``labs`` and ``products`` are the names
    (regular expressions) of the lab that makes its models and of the models themselves, by which a
    model may name itself and which a council hides from its synthesizer; ``tool`` is its one-model
    tool, if it has one.
    """

    name: str
    label: str
    family: str
    transport: Transport
    build: Factory
    probe: Probe
    enable: str
    tokens: tuple[Token, ...] = ()
    prefix: str | None = None
    normalize_model: Callable[[str], str] | None = None
    binary: str | None = None
    login_fix: str | None = None
    settings_model: type[ProviderSettings] | None = None
    model_of: Callable[[Settings], str | None] | None = None
    model_fallback: str | None = None
    timeout_of: Callable[[Settings], float | None] | None = None
    needs: str | None = None
    tools: tuple[str, ...] = ()
    tier: Tier | None = None
    tier_needs_key: bool = False
    cost_rank: int | None = None
    context_tokens: int = 128_000
    labs: tuple[str, ...] = ()
    products: tuple[str, ...] = ()
    tool: ModelTool | None = None

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool that serves this backend: its one-model tool first, then the others it names."""
        own = (self.tool.name,) if self.tool else ()
        return (*own, *(name for name in self.tools if name not in own))

    def config(self, settings: Settings) -> ProviderSettings | None:
        """This backend's own settings section (``None`` for a backend without one)."""
        return settings.section(self.name, self.settings_model) if self.settings_model else None

    def oracle(self, settings: Settings, *, token: str | None = None, model: str | None = None,
               effort: str | None = None, resources: Resources | None = None) -> Oracle:
        """The oracle for ``token`` (default: this backend's name) with ``model`` and ``effort``, on
        the App's ``resources``."""
        return self.build(settings, token=token or self.name, model=model, effort=effort, resources=resources)

    def model(self, settings: Settings) -> str:
        """The model this backend asks by default, as the user configured it."""
        config = self.config(settings)
        value = config.model if config else (self.model_of(settings) if self.model_of else None)
        return str(value or self.model_fallback or "")

    def timeout(self, settings: Settings) -> float:
        """Seconds one call may take: the backend's own timeout setting, else the general one."""
        return settings.backend_timeout(self.timeout_of(settings) if self.timeout_of else None)

    def key(self, settings: Settings) -> str | None:
        """The configured API key (``None`` when unset or when the backend takes none)."""
        config = self.config(settings)
        return config.key() if config else None

    def base_url(self, settings: Settings) -> str | None:
        """The configured endpoint (``None`` for a backend without one)."""
        config = self.config(settings)
        return config.base_url if config else None

    @property
    def key_vars(self) -> tuple[str, ...]:
        """The environment variables that set the key: the canonical one first, then its aliases."""
        return self._vars("api_key")

    @property
    def base_url_vars(self) -> tuple[str, ...]:
        """The environment variables that set the endpoint."""
        return self._vars("base_url")

    def _vars(self, field_name: str) -> tuple[str, ...]:
        if self.settings_model is None:
            return ()
        name = f"{self.name}_{field_name}"
        return tuple(env_names(name, section_fields(self.name, self.settings_model)[name], ENV_PREFIX))

    def default_token(self, settings: Settings) -> str:
        """The token that names this backend with its default model (``atlas:<default id>``)."""
        return f"{self.prefix}:{self.model(settings)}" if self.prefix else self.name

    def token_forms(self) -> list[str]:
        """How a token is written for this backend: its tokens, or ``<prefix>:<id>``."""
        return [f"{self.prefix}:<id>"] if self.prefix else [token.name for token in self.tokens]

    def requirement(self) -> str:
        """What it needs, in a few words (the key variables, the logged-in CLI…)."""
        if self.needs:
            return self.needs
        if self.key_vars:
            return " or ".join(f"`{var}`" for var in self.key_vars)
        if self.binary:
            return f"`{self.binary}` CLI, logged in"
        return "nothing to set up"

    def facts(self, settings: Settings) -> dict[str, str]:
        """The values a tool description may name, read from the current ``settings``."""
        return {
            "label": self.label,
            "model": self.model(settings),
            "binary": self.binary or "",
            "login_fix": self.login_fix or "",
            "key_vars": " or ".join(self.key_vars),
            "enable": self.enable,
        }
