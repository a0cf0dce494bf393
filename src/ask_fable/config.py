"""Settings in one object, and the state directory they point into.

Precedence, highest first: what the ``configure_*`` tools saved to the shared database (only
with ``database_url``; see ``stores/saved_settings.py``) → the JSON config file
(``ASK_FABLE_CONFIG_FILE``, default ``${XDG_CONFIG_HOME:-~/.config}/ask_fable/config.json``, where
those tools save without a database) → ``ASK_FABLE_*`` environment variables → the defaults below.
The config file accepts each setting under its field name
(``ollama_council``), its variable name (``ASK_FABLE_OLLAMA_COUNCIL``) or another accepted name.

Settings never stop the program: :func:`load_settings` drops a value that does not validate,
uses the next layer's value (or the default) instead, and keeps a :class:`SettingProblem` for
it, as it does for a config file that cannot be read and for keys it does not know. The
problems travel with the settings (``Settings.problems``); a call learns the ones that matter
to it from the settings it read (:func:`tracking_reads`).

Every field's description is the user-facing documentation: the configuration reference
(docs/configuration.md) is generated from this class and a test keeps them equal.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from ask_fable.config_sources import (
    SECRET_SETTINGS,
    Layer,
    SettingProblem,
    accepted_names,
    mapping_layer,
    read_env_layer,
    read_file_layer,
    shown,
)
from ask_fable.config_sources import quote as quote_value

ENV_PREFIX = "ASK_FABLE_"
CONTEXT_CAP_FLOOR = 512_000


class PriceOverride(BaseModel):
    """A negotiated price for a backend or one of its models: a rate in dollars per million tokens, or
    another model's price (``as``: ``provider_id:model`` as genai-prices names them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    input_per_m: float | None = Field(None, ge=0)
    output_per_m: float | None = Field(None, ge=0)
    price_as: str | None = Field(None, alias="as")

class BackendSettings(BaseModel):
    """A backend's own settings, declared beside the backend (:func:`register_section`).

    Field ``api_key`` of the section ``glm`` is the setting ``glm_api_key``: variable
    ``ASK_FABLE_GLM_API_KEY``, config-file key ``glm_api_key``; a ``validation_alias`` adds other
    accepted names (``AliasChoices("ASK_FABLE_ATLAS_API_KEY", "ATLASCLOUD_API_KEY")``). A
    ``SecretStr`` field is a credential: its value is redacted wherever text leaves the server and
    never quoted in a settings problem. Each field's ``description`` is its documentation.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ProviderSettings(BackendSettings):
    """An HTTP provider's settings: its key, endpoint and default model (a provider sets the defaults
    and descriptions by redeclaring the fields, and may add its own)."""

    api_key: SecretStr | None = Field(None, description="API key.")
    base_url: str = Field(..., description="Endpoint.")
    model: str = Field(..., description="Default model id.")

    def key(self) -> str | None:
        """The key's value (``None`` when unset or empty)."""
        return (self.api_key.get_secret_value() or None) if self.api_key is not None else None


SectionT = TypeVar("SectionT", bound=BackendSettings)

#: Every backend's settings section by name, as the backends registered them.
_SECTIONS: dict[str, type[BackendSettings]] = {}
#: Counts registrations, so that what was derived from the sections knows when to derive again.
_sections_version = 0


def register_section(name: str, model: type[BackendSettings]) -> None:
    """Make ``model`` the settings of section ``name`` (a backend's name): its fields are read from
    the same config file, environment and saved settings as every other setting.

    Raises:
        ValueError: another model already holds ``name``, a field's setting name is already another
            setting's, or a field has no default (a section must be usable with nothing set).
    """
    held = _SECTIONS.get(name)
    if held is not None and held is not model:
        raise ValueError(f"settings section {name!r} is already registered")
    taken = set(Settings.model_fields).union(*(section_fields(other, section) for other, section
                                               in _SECTIONS.items() if other != name))
    clash = [flat for flat in section_fields(name, model) if flat in taken]
    if clash:
        raise ValueError(f"settings section {name!r} redefines {', '.join(clash)}")
    required = [field_name for field_name, info in model.model_fields.items() if info.is_required()]
    if required:
        raise ValueError(f"settings section {name!r} has no default for {', '.join(required)}")
    global _sections_version
    _SECTIONS[name] = model
    _sections_version += 1
    fields = section_fields(name, model)
    SECRET_SETTINGS.update(flat for flat, info in fields.items() if _is_secret_field(info))


def unregister_section(name: str) -> None:
    """Forget section ``name`` (nothing happens when there is none)."""
    global _sections_version
    if _SECTIONS.pop(name, None) is not None:
        _sections_version += 1


#: Registers the backends' sections on first need (set by the backend registry when it is imported).
_section_source: Callable[[], object] | None = None


def set_section_source(load: Callable[[], object]) -> None:
    """Have :func:`sections` call ``load`` first, so that the backends that declare sections are
    registered before anyone lists them (the backend registry installs itself here)."""
    global _section_source
    _section_source = load


def sections() -> dict[str, type[BackendSettings]]:
    """Every registered settings section by name, in registration order."""
    if _section_source is not None:
        _section_source()
    return dict(_SECTIONS)


def section_fields(name: str, model: type[BackendSettings]) -> dict[str, FieldInfo]:
    """Section ``name``'s fields under their setting names (``glm_api_key``)."""
    return {f"{name}_{field_name}": info for field_name, info in model.model_fields.items()}


def _is_secret_field(info: FieldInfo) -> bool:
    annotation = info.annotation
    return annotation is SecretStr or SecretStr in getattr(annotation, "__args__", ())


@dataclass
class _Inputs:
    """What the settings were read from, kept so that a section registered later reads the same."""

    saved: Mapping[str, Any] | None = None
    file_data: dict[str, Any] = field(default_factory=dict)
    file_source: str = ""
    environ: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Section:
    """One section's values as read, where each came from, and what could not be used."""

    values: BackendSettings
    origins: dict[str, str]
    problems: list[SettingProblem]


#: The settings read since :func:`tracking_reads` began (None: nobody is tracking).

_READS: ContextVar[set[str] | None] = ContextVar("ask_fable_settings_reads", default=None)


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def state_dir() -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/ask_fable`` (not created here)."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "ask_fable"


def default_config_file() -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/ask_fable/config.json``."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "ask_fable" / "config.json"


def config_file_path() -> Path:
    """The config file in force: ``ASK_FABLE_CONFIG_FILE`` or the XDG default."""
    explicit = os.environ.get(f"{ENV_PREFIX}CONFIG_FILE")
    return Path(explicit).expanduser() if explicit else default_config_file()


def split_model_list(value: Any) -> list[str]:
    """Accept a list, a JSON list, or a comma/space separated string of model ids."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return [str(v).strip() for v in json.loads(text) if str(v).strip()]
        return [part for part in re.split(r"[,\s]+", text) if part]
    return [str(v).strip() for v in value if str(v).strip()]


#: A list setting: a list, a JSON list, or a comma/space separated string (a backend's section too).
ModelList = Annotated[list[str], NoDecode, BeforeValidator(split_model_list)]


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The config file's raw contents; a missing or unreadable file is empty (its problems are in
    ``Settings.problems``)."""
    path = path or config_file_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def tracking_reads() -> Iterator[set[str]]:
    """Collect the names of the settings read (in this task and the tasks and threads it starts)."""
    reads: set[str] = set()
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


class Settings(BaseSettings):
    """Every ``ASK_FABLE_*`` setting. Field ``foo_bar`` is variable ``ASK_FABLE_FOO_BAR``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        populate_by_name=True,
        validate_default=True,
    )

    # --- guard ---------------------------------------------------------------------------
    min_len: int = Field(3, description="Shortest question accepted, in characters.")
    max_len: int = Field(65536, description="Longest question accepted, in characters.")
    max_context_len: int | None = Field(
        None,
        description="Optional cap on context characters; unset means unbounded, and any value is "
        "raised to at least 512,000.",
    )
    denylist_file: Path | None = Field(
        None,
        description="File of terms, one per line, that refuse any question containing them (plural and "
        "verb forms included).",
    )
    allowlist_file: Path | None = Field(
        None,
        description="File of exact phrases, one per line, set aside before the guard judges a question; "
        "rescues only that phrase.",
    )
    guard_model: str | None = Field(
        None,
        description="A model token (e.g. ollama:llama-guard3:8b, or a cheap hosted model) that also "
        "classifies each question the local guard lets through, before any other model is called; unset: "
        "no model stage.",
    )
    guard_model_format: Literal["auto", "llama_guard", "shieldgemma", "rules"] = Field(
        "auto",
        description="How the guard model is asked: llama_guard (answers safe / unsafe and S1..S14), "
        "shieldgemma (Yes / No), rules (any other model, given the guard's rules and a fixed answer "
        "format); auto picks by the model's name.",
    )
    guard_model_on_failure: Literal["open", "closed"] = Field(
        "closed",
        description="When the guard model gives no verdict (down, too slow, an unreadable answer): closed "
        "refuses the question (kind guard_unavailable); open lets it through with a warning.",
    )
    guard_model_timeout: float = Field(
        30, gt=0, description="Seconds the guard model may take to classify one question."
    )

    # --- timeouts and limits ---------------------------------------------------------------
    timeout: float = Field(240, gt=0, description="Wall-clock seconds for one model turn.")
    max_needs_context: int = Field(
        2,
        ge=0,
        description="Consecutive needs_more_context turns on one session before ask returns "
        "context_exhausted (0 stops after the first).",
    )
    max_tokens: int = Field(
        65536,
        gt=0,
        description="Max output tokens for GLM, DeepSeek, Ollama (num_predict) and MiniMax.",
    )
    council_timeout: float | None = Field(
        None,
        description="Wall-clock bound on a council, synthesis included, in seconds (default: timeout + "
        "120); members still running at two thirds of it are cancelled so the synthesis has the rest.",
    )
    chain_timeout: float | None = Field(
        None,
        description="Wall-clock bound on a chain or debate, in seconds "
        "(default: max(600, stages × timeout), at least 10).",
    )
    council_cut_stragglers: bool = Field(
        True,
        description="Once a quorum of council members has answered (half of those still able to), cut "
        "the ones still running after the straggler wait (kind straggler) and synthesize what is in; "
        "0 waits for every member until two thirds of the council bound.",
    )
    council_straggler_factor: float = Field(
        2.0,
        gt=0,
        description="The straggler wait after the quorum, as a multiple of the slowest answer so far "
        "(2: a member may take three times as long as that answer).",
    )
    council_straggler_floor: float = Field(
        2.0, ge=0, description="Shortest straggler wait, in seconds (for very fast answers)."
    )
    max_parallel: int = Field(
        16,
        ge=1,
        description="How many council members run at once; larger councils queue the rest "
        "(CLI members also share ASK_FABLE_CLI_MAX_PARALLEL per binary).",
    )
    cli_max_parallel: int = Field(
        2,
        description="Concurrent processes per CLI binary; 0 or negative disables the gate, "
        "1 serializes each CLI.",
    )
    session_lease_seconds: float = Field(
        10, ge=1, le=300,
        description="Seconds a conversation turn's hold on its session lasts unless renewed (it is renewed "
        "while the turn runs): turns of one session run one at a time across every server on the same store, "
        "and a server that died mid-turn frees its session after this long.",
    )
    session_idle_seconds: float = Field(
        900, gt=0, description="Seconds the Claude Code process of an idle Fable/Opus session stays open."
    )
    max_live_sessions: int = Field(
        16, ge=0, description="Fable/Opus sessions with a Claude Code process open at once in one server (0: "
        "unlimited); past it the least recently used one is closed, its conversation kept."
    )
    max_live_sessions_per_tenant: int = Field(
        4, ge=0, description="The same, per tenant (0: unlimited): one tenant's sessions close its own least "
        "recently used one."
    )

    # --- conversations (ask with a session) ------------------------------------------------------
    session_store_path: Path | None = Field(
        None, description="SQLite store of conversation transcripts (default: <state>/sessions.db)."
    )
    session_retention_days: float = Field(
        30, ge=0,
        description="Days a stored conversation is kept after its last turn (0: until reset_session).",
    )
    session_context_tokens: int = Field(
        0,
        ge=0,
        description="Most tokens one conversation turn may send (earlier turns, question and room for the "
        "answer, estimated at 3 bytes a token); 0 means the model's context window. Older turns beyond it "
        "are left out with a note.",
    )

    # --- Claude (Fable, Opus 5) ----------------------------------------------------------------
    use_cli: bool = Field(False, description="Use the claude CLI bridge instead of the Agent SDK.")
    fable_model: str | None = Field(
        None,
        description="Pin the Fable model id (no fallback); unset tries claude-fable-5-1 then claude-fable-5.",
    )
    opus_model: str = Field("claude-opus-5", description="Model id behind ask_opus5 and the opus token.")
    claude_cli: str | None = Field(
        None,
        description="Claude Code binary the Agent SDK spawns (default: the bundled one, or a "
        "strictly newer claude on PATH).",
    )

    # --- CLI backends ------------------------------------------------------------------------
    minimax_model: str = Field("MiniMax-M3", description="Model passed to the mmx CLI.")
    gemini_model: str = Field("Gemini 3.1 Pro (High)", description="Model passed to the agy CLI.")
    gemini_timeout: float | None = Field(None, description="Seconds for agy (default: timeout).")
    codex_model: str = Field("gpt-5.6-sol", description="Model passed to codex exec.")
    codex_reasoning: str = Field("high", description="model_reasoning_effort passed to codex exec.")
    codex_timeout: float | None = Field(None, description="Seconds for codex (default: timeout).")
    grok_model: str = Field("grok-4.6", description="Model passed to the grok CLI.")
    grok_reasoning: str | None = Field(
        None,
        description="Grok reasoning (low, medium, high) with no effort given, and the cap on the quick, "
        "standard and deep presets; unset means low.",
    )
    grok_timeout: float | None = Field(None, description="Seconds for grok (default: timeout).")
    kimi_model: str = Field("kimi-code/k3", description="Model passed to the kimi CLI.")
    kimi_effort: str = Field("high", description="Kimi effort: low, high, max, quick, standard or deep.")
    kimi_timeout: float | None = Field(None, description="Seconds for kimi (default: timeout).")
    kimi_home: Path = Field(Path("~/.kimi-code"), description="KIMI home directory handed to the kimi CLI.")

    # --- console -----------------------------------------------------------------------------
    quiet: bool = Field(False, description="Silence the progress trace on stderr.")
    show_reasoning: bool = Field(True, description="Show reasoning excerpts in the stderr trace.")
    stream_reasoning: bool = Field(False, description="Stream reasoning live to stderr as it arrives.")
    return_thinking: bool = Field(False, description="Attach a capped reasoning excerpt to results.")
    thinking_chars: int = Field(4000, ge=0, description="Cap for the returned reasoning excerpt.")
    debug: bool = Field(
        False, description="When the ask-fable command fails unexpectedly, print the traceback after the "
        "one-line error (for bug reports)."
    )

    # --- context bus and packing --------------------------------------------------------------
    context_path: Path | None = Field(None, description="SQLite context bus (default: <state>/context.db).")
    project_root: Path | None = Field(
        None, description="Root context_pack may read from; unset disables context_pack."
    )
    pack_max_chars: int = Field(24000, gt=0, description="Character budget of one context_pack bundle.")
    pack_max_files: int = Field(32, gt=0, description="Files admitted in one context_pack.")
    pack_max_file_bytes: int = Field(1_000_000, gt=0, description="Per-file read cap for context_pack.")

    # --- audit --------------------------------------------------------------------------------
    audit_path: Path | None = Field(None, description="Audit log (default: <state>/decisions.jsonl).")
    audit_raw: bool = Field(False, description="Store raw questions (and context) instead of hashes.")
    audit_raw_context: bool | None = Field(
        None, description="Store raw context; follows audit_raw when unset."
    )
    audit_max_bytes: int = Field(52_428_800, gt=0, description="Audit log size that triggers rotation.")
    audit_backups: int | None = Field(
        None, ge=0, description="Rotated audit segments kept (unset: all; 0 discards on rotation)."
    )

    # --- cache and breaker ----------------------------------------------------------------------
    cache: bool = Field(True, description="Cache successful single-shot, council and chain answers.")
    cache_ttl: float = Field(3600, ge=0, description="Cache freshness window in seconds.")
    cache_path: Path | None = Field(None, description="SQLite cache (default: <state>/cache.db).")
    cache_max_rows: int = Field(10000, gt=0, description="Row cap of the cache (swept to 90%).")
    circuit_breaker: bool = Field(True, description="Skip chronically failing oracles for a cooldown.")
    breaker_window: int = Field(20, gt=0, description="Outcomes remembered per oracle.")
    breaker_threshold: float = Field(
        0.5, gt=0, le=1,
        description="Error rate that opens the breaker (≥ 5 samples, or a full window when it holds fewer).",
    )
    breaker_cooldown: float = Field(300, ge=0, description="Seconds before an open breaker allows a probe.")

    # --- session hub ----------------------------------------------------------------------------
    hub: bool = Field(True, description="Mirror successful turns into the cross-instance session hub.")
    hub_path: Path | None = Field(None, description="SQLite hub (default: <state>/hub.db).")
    hub_max_rows: int = Field(10000, gt=0, description="Hub turns retained (swept to 90%).")
    hub_stale_seconds: float = Field(300, gt=0, description="Heartbeat age after which a session is stale.")
    hub_preview_chars: int = Field(160, gt=0, description="Length of last_question previews in session_list.")
    agent_id: str | None = Field(None, description="Hub attribution label (default: the MCP client's name).")
    project_id: str | None = Field(
        None, description="Project label stored with traces (default: from the working directory)."
    )

    # --- traces and saved answers -------------------------------------------------------------
    trace_mode: Literal["safe", "full"] = Field(
        "safe", description="safe stores metadata only; full also writes redacted content bundles."
    )
    trace_path: Path | None = Field(None, description="SQLite trace index (default: <state>/traces.db).")
    trace_dir: Path | None = Field(None, description="Full-mode trace bundles (default: <state>/traces).")
    trace_max_content_bytes: int = Field(104_857_600, gt=0, description="Content captured per trace bundle.")
    trace_max_rows: int = Field(
        100_000, ge=0, description="Traces kept, oldest swept first with their bundles (0: all)."
    )
    trace_max_event_bytes: int = Field(1_048_576, gt=0, description="Largest trace event line read back.")
    trace_query_max_events: int = Field(100_000, gt=0, description="Events one trace query may scan.")
    trace_query_max_bytes: int = Field(52_428_800, gt=0, description="Bytes one trace query may scan.")
    save: bool | None = Field(
        None, description="1 saves answer Markdown, 0 never; unset saves only in full trace mode."
    )
    output_dir: Path | None = Field(None, description="Saved answers (default: <state>/answers).")
    max_answers: int = Field(0, ge=0, description="Saved answers kept (0: unlimited).")
    max_sessions: int = Field(0, ge=0, description="Session transcript dumps kept (0: unlimited).")

    # --- shared database ------------------------------------------------------------------------
    database_url: str | None = Field(
        None, description="postgresql://… puts every store in PostgreSQL, shared by replicas (needs "
        "ask-fable[postgres] and `ask-fable db upgrade`); unset: SQLite files under the state directory.",
    )
    database_connect_timeout: float = Field(
        2.0, gt=0, le=60, description="Seconds a store call waits for a PostgreSQL connection before it "
        "fails as unavailable.",
    )
    database_pool_size: int = Field(
        10, gt=0, le=1000, description="PostgreSQL connections one server process keeps at most (it opens "
        "two more outside the pool: the settings listener and the readiness probe).",
    )
    database_statement_timeout: float = Field(
        5.0, gt=0, le=600, description="Seconds one store transaction may take on PostgreSQL; past that it "
        "is cancelled (or, on a database that stopped answering, its connection cut) and the call fails as "
        "unavailable.",
    )

    # --- surfaces ------------------------------------------------------------------------------
    toolsets: ModelList = Field(
        default_factory=lambda: ["default"], description="Tool groups served (see ask-fable --help)."
    )
    http_allowed_hosts: ModelList = Field(
        default_factory=list, description="Extra Host values the HTTP server accepts."
    )
    http_allowed_origins: ModelList = Field(
        default_factory=list, description="Origins the HTTP server accepts from browsers."
    )
    http_trusted_proxies: ModelList = Field(
        default_factory=lambda: ["127.0.0.1", "::1"],
        description="Addresses or networks of the proxies whose X-Forwarded-Proto and X-Forwarded-For "
        "the HTTP server believes (the web view's cookie is Secure when one says https; '*': any peer).",
    )
    http_max_body_bytes: int = Field(4_194_304, gt=0, description="Largest HTTP request body accepted.")
    http_max_connections: int = Field(
        512, ge=1, description="Open HTTP connections at most; past it the oldest idle one is closed "
        "(lowered, with a warning at start, when the open-file limit cannot hold it)."
    )
    http_max_requests: int = Field(
        256, ge=1, description="HTTP requests served at once; more get 503 (health checks always answer)."
    )
    http_header_timeout: float = Field(
        5, gt=0, description="Seconds a connection has to send a request's headers before it is closed."
    )
    http_body_timeout: float = Field(
        30, gt=0, description="Seconds a client has to send a request's body once its headers arrived (408)."
    )
    http_body_stall_timeout: float = Field(
        5, gt=0, description="Seconds a request's body may go without a byte arriving (before its first "
        "byte too) before the request is dropped (408)."
    )
    http_max_key_requests: int = Field(
        32, ge=1, description="HTTP requests one API key may have in progress at once, those still waiting "
        "for their body included; more get 429. Never more than half of ASK_FABLE_HTTP_MAX_REQUESTS, so "
        "no one key can take every request slot."
    )
    http_keepalive_timeout: int = Field(
        5, ge=1, description="Seconds an idle keep-alive HTTP connection is kept open."
    )
    metrics_port: int | None = Field(
        None, ge=0, le=65535,
        description="Port of the team server's Prometheus /metrics, on its own listener (off when unset; "
        "`serve --http --metrics-port` sets it too). Never served on the public /mcp port.",
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Address the Prometheus /metrics listener binds (loopback by default)."
    )
    shared_context: bool = Field(
        False, description="One team-wide context bus for every tenant (off: each tenant has its own)."
    )
    shared_cache: bool = Field(
        False, description="One team-wide answer cache for every tenant (off: a tenant hits only its own)."
    )
    ui_session_ttl: float = Field(
        28_800, gt=0, description="Seconds a login to the web view (/ui) lasts before it must be repeated."
    )
    ui_max_sessions: int = Field(
        10_000, ge=1, description="Logins to the web view kept at once, every key's together; past it the "
        "oldest is ended."
    )
    ui_max_key_sessions: int = Field(
        8, ge=1, description="Logins to the web view one API key may hold at once; logging in again past it "
        "ends that key's oldest login, never another key's."
    )

    # --- caps and quotas -------------------------------------------------------------------------
    max_council_members: int = Field(
        24, ge=1, description="Most members one council call may ask (every council tool); more is "
        "bad_args before any model runs."
    )
    max_chain_stages: int = Field(
        8, ge=1, description="Most stages one ask_chain pipeline may have; more is bad_args before any "
        "model runs."
    )
    context_max_tenant_bytes: int = Field(
        67_108_864, ge=0, description="Bytes of context entries one tenant may keep (0: unlimited); a "
        "context_write over it is bad_args and stores nothing."
    )
    context_max_tenant_entries: int = Field(
        2000, ge=0, description="Context entries one tenant may keep (0: unlimited); a new key over it is "
        "bad_args."
    )
    key_rpm: int = Field(
        60, ge=0, description="Calls per minute per HTTP key, model calls, catalog fetches and diagnose "
        "alike (0: unlimited), unless the key sets its own (ask-fable keys create/update --rpm)."
    )
    key_concurrent: int = Field(
        8, ge=0, description="Calls in flight at once per HTTP key (0: unlimited), unless the key sets "
        "its own (--concurrent)."
    )
    key_daily_usd: float = Field(
        50.0, ge=0, description="Dollars of reported cost per HTTP key per UTC day (0: unlimited), unless "
        "the key sets its own (--daily-usd)."
    )
    quota_reserve_usd: float = Field(
        0.25, ge=0, description="Dollars set aside from a key's daily budget while one of its calls runs, "
        "replaced by the call's reported cost when it ends."
    )
    quota_lease_seconds: float = Field(
        30.0, ge=1, description="Seconds a call in flight keeps its place in its key's quota unless its "
        "server renews it (every third of this while the call runs): a server killed mid-call frees its "
        "calls' places within this."
    )
    prices: dict[str, PriceOverride] = Field(
        default_factory=dict,
        description="Negotiated prices, a JSON object keyed by backend (deepseek) or backend:model "
        "(openrouter:qwen/qwen3-coder): {\"input_per_m\": 0.5, \"output_per_m\": 2} in dollars per million "
        "tokens, or {\"as\": \"provider_id:model\"} for another model's genai-prices price. Used instead of "
        "catalog and library prices where a provider reports no cost.",
    )
    unknown_price_input_per_m: float = Field(
        15.0, ge=0, description="Dollars per million input tokens a key's daily budget counts for a model "
        "no price source knows (its result says cost_source unknown)."
    )
    unknown_price_output_per_m: float = Field(
        75.0, ge=0, description="Dollars per million output tokens a key's daily budget counts for a model "
        "no price source knows."
    )
    local_quota: bool = Field(
        False, description="Apply the per-key defaults (key_rpm, key_concurrent, key_daily_usd) to the local "
        "caller too (stdio and the command line); off: the local caller is unlimited."
    )

    @field_validator("prices", mode="before")
    @classmethod
    def _price_json(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @field_validator("database_url", mode="after")
    @classmethod
    def _postgresql_only(cls, value: str | None) -> str | None:
        # A libpq "key=value" string has no scheme; a URL must name PostgreSQL.
        scheme = value.split("://", 1)[0].lower() if value and "://" in value else None
        if scheme is not None and scheme not in ("postgresql", "postgres"):
            raise ValueError(f"must be a postgresql:// URL, not {scheme}://")
        return value

    @field_validator("max_context_len", mode="after")
    @classmethod
    def _floor_context_cap(cls, value: int | None) -> int | None:
        return None if value is None else max(value, CONTEXT_CAP_FLOOR)

    @field_validator("guard_model", mode="after")
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings layers the config file and the environment itself, so that each value
        # keeps its source and a bad one can be replaced instead of failing the whole object.
        return (init_settings,)

    # --- problems and reads ----------------------------------------------------------------------
    _problems: tuple[SettingProblem, ...] = PrivateAttr(default=())
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)
    _inputs: _Inputs = PrivateAttr(default_factory=_Inputs)
    _sections: dict[str, _Section] = PrivateAttr(default_factory=dict)
    _secrets: tuple[int, list[str]] | None = PrivateAttr(default=None)
    _all_problems: tuple[int, tuple[SettingProblem, ...]] | None = PrivateAttr(default=None)

    @property
    def problems(self) -> tuple[SettingProblem, ...]:
        """Values, config-file keys or the config file itself that could not be used as written
        (a backend's settings included)."""
        registered = sections()
        cached = self._all_problems
        if cached is not None and cached[0] == _sections_version:
            return cached[1]
        known = {key for name, model in registered.items()
                 for key in accepted_names(section_fields(name, model), ENV_PREFIX)}
        own = [p for p in self._problems if p.key is None or p.key.lower() not in known]
        theirs = (p for name, model in registered.items() for p in self._section(name, model).problems)
        found = (*own, *theirs)
        self._all_problems = (_sections_version, found)
        return found

    def origin(self, name: str) -> str | None:
        """Where setting ``name`` was written (a variable name or ``config file <path>``); None: default."""
        if name in self._origins:
            return self._origins[name]
        for section, model in sections().items():
            if name in section_fields(section, model):
                return self._section(section, model).origins.get(name)
        return None

    def section(self, name: str, model: type[SectionT]) -> SectionT:
        """Section ``name``'s settings (a backend's own: key, endpoint, default model…), typed as
        ``model`` declares them."""
        reads = _READS.get()
        if reads is not None:
            reads.update(f"{name}_{field_name}" for field_name in model.model_fields)
        values = self._section(name, model).values
        if not isinstance(values, model):
            raise TypeError(f"settings section {name!r} is a {type(values).__name__}, not a {model.__name__}")
        return values

    def _section(self, name: str, model: type[BackendSettings]) -> _Section:
        found = self._sections.get(name)
        if found is None or type(found.values) is not model:
            found = _read_section(self._inputs, name, model)
            self._sections[name] = found
        return found

    def value_of(self, name: str) -> Any:
        """The value of setting ``name`` (a section's too) without counting it as read; ``KeyError``
        when no setting has that name."""
        if name in Settings.model_fields:
            return vars(self)[name]
        for section, model in sections().items():
            prefix = f"{section}_"
            if name.startswith(prefix) and name[len(prefix):] in model.model_fields:
                return getattr(self._section(section, model).values, name[len(prefix):])
        raise KeyError(name)

    @staticmethod
    def known_fields() -> dict[str, FieldInfo]:
        """Every setting's field by name: the top-level ones, then each registered section's."""
        fields = dict(Settings.model_fields)
        for name, model in sections().items():
            fields.update(section_fields(name, model))
        return fields

    def problems_for(self, reads: Iterable[str]) -> list[SettingProblem]:
        """The problems that matter to a call that read the settings ``reads``."""
        names = set(reads)
        return [p for p in self.problems if p.concerns is None or p.concerns in names]

    # --- derived paths and values --------------------------------------------------------------
    @cached_property
    def state_dir(self) -> Path:
        """The per-user state directory every default path lives under."""
        return state_dir()

    def _under_state(self, explicit: Path | None, name: str) -> Path:
        return Path(explicit).expanduser() if explicit else self.state_dir / name

    @property
    def context_db(self) -> Path:
        """The context bus database."""
        return self._under_state(self.context_path, "context.db")

    @property
    def cache_db(self) -> Path:
        """The answer cache database."""
        return self._under_state(self.cache_path, "cache.db")

    @property
    def hub_db(self) -> Path:
        """The session hub database."""
        return self._under_state(self.hub_path, "hub.db")

    @property
    def traces_db(self) -> Path:
        """The trace index database."""
        return self._under_state(self.trace_path, "traces.db")

    @property
    def traces_dir(self) -> Path:
        """Where full-mode trace bundles go."""
        return self._under_state(self.trace_dir, "traces")

    @property
    def audit_file(self) -> Path:
        """The active audit log segment."""
        return self._under_state(self.audit_path, "decisions.jsonl")

    @property
    def answers_dir(self) -> Path:
        """Where saved answer Markdown goes."""
        return self._under_state(self.output_dir, "answers")

    @property
    def sessions_dir(self) -> Path:
        """Where reset_session transcript dumps go."""
        return self.state_dir / "sessions"

    @property
    def session_db(self) -> Path:
        """The conversation transcript store."""
        return self._under_state(self.session_store_path, "sessions.db")

    @property
    def keys_db(self) -> Path:
        """HTTP API keys (hashes only)."""
        return self.state_dir / "keys.db"

    @property
    def quotas_db(self) -> Path:
        """Each key's calls per minute, calls in flight and spend per day."""
        return self.state_dir / "quotas.db"

    @property
    def ui_sessions_db(self) -> Path:
        """The team server's web view logins (digests of their ids only)."""
        return self.state_dir / "ui_sessions.db"

    @property
    def config_file(self) -> Path:
        """The tool-writable config file."""
        return config_file_path()

    @property
    def audit_raw_context_effective(self) -> bool:
        """Whether raw context goes to the audit log."""
        return self.audit_raw if self.audit_raw_context is None else self.audit_raw_context

    @property
    def save_answers(self) -> bool:
        """Whether successful answers are written as Markdown."""
        return self.trace_mode == "full" if self.save is None else self.save

    @property
    def council_deadline(self) -> float:
        """Wall-clock bound of a council."""
        return self.council_timeout if self.council_timeout else self.timeout + 120

    def chain_deadline(self, stages: int) -> float:
        """Wall-clock bound of a chain or debate with ``stages`` sequential calls."""
        if self.chain_timeout:
            return max(10.0, self.chain_timeout)
        return max(10.0, max(600.0, stages * self.timeout))

    def backend_timeout(self, specific: float | None) -> float:
        """A backend's own timeout, falling back to the global one."""
        return specific if specific else self.timeout

    def secret_values(self) -> list[str]:
        """Every configured credential's value, for redaction: each section's ``SecretStr`` fields, a
        key-named value (``*_API_KEY``) of a section not registered yet, and the database password."""
        # Read without tracking: redacting is not depending on a key.
        registered = sections()
        cached = self._secrets
        if cached is not None and cached[0] == _sections_version:
            return list(cached[1])
        keys: list[str] = []
        for name, model in registered.items():
            values = self._section(name, model).values
            for field_name in model.model_fields:
                value = getattr(values, field_name)
                if isinstance(value, SecretStr):
                    keys.append(value.get_secret_value())
        keys.extend(_raw_secrets(self._inputs))
        password = url_password(vars(self)["database_url"])
        found = list(dict.fromkeys(k for k in [*keys, password] if k and len(k) >= 6))
        self._secrets = (_sections_version, found)
        return list(found)


class _TrackedField:
    """A setting read through the instance: notes the read for :func:`tracking_reads`, then returns
    the value pydantic keeps in the instance's ``__dict__`` (a data descriptor, so it is consulted
    before that dict; installed on each field after the class is built, so type checkers still see
    the field's own type)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:
            return self
        reads = _READS.get()
        if reads is not None:
            reads.add(self.name)
        try:
            return vars(instance)[self.name]
        except KeyError:
            raise AttributeError(self.name) from None

    def __set__(self, instance: object, value: object) -> None:
        vars(instance)[self.name] = value


for _name in Settings.model_fields:
    setattr(Settings, _name, _TrackedField(_name))
def _raw_secrets(inputs: _Inputs) -> list[str]:
    """Values given under a credential's name in any input, whether or not its section is registered:
    a key-named setting (``*_api_key``) or a registered secret's other accepted names."""
    from ask_fable.config_sources import env_names, is_secret

    def secret_name(key: str) -> bool:
        name = key.lower().removeprefix(ENV_PREFIX.lower())
        return name != "database_url" and is_secret(name)  # the URL's password is added on its own

    values: list[str] = []
    for mapping in (inputs.overrides, inputs.file_data, inputs.saved or {}):
        values.extend(v for k, v in mapping.items() if isinstance(v, str) and secret_name(str(k)))
    secret_vars = {var.upper() for name, info in Settings.known_fields().items() if name in SECRET_SETTINGS
                   for var in env_names(name, info, ENV_PREFIX)}
    values.extend(v for k, v in inputs.environ.items()
                  if (k.upper().startswith(ENV_PREFIX) and secret_name(k)) or k.upper() in secret_vars)
    return values
_ACCEPTED_NAMES = accepted_names(Settings.model_fields, ENV_PREFIX)


def database_url_problem(settings: Settings) -> str | None:
    """Why the ``database_url`` that was set cannot be used (the value was refused as the settings
    were read, so ``settings.database_url`` fell back to none), or ``None``. Whatever would run on the
    stores must stop on it: falling back to this machine's SQLite files would split a team's state."""
    for problem in settings.problems:
        if problem.setting == "database_url":
            return (f"{problem.source}: {problem.problem}; not using this machine's SQLite files instead, "
                    "which no other server would share")
    return None


def url_password(url: str | None) -> str | None:
    """The password in a database URL's user part (``postgresql://user:PASSWORD@host/db``), if any."""
    if not url:
        return None
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


#: Where settings saved to the shared database come from, as problems and origins name it.
SAVED_SOURCE = "the database (saved by a configure tool)"


def load_settings(*, saved: Mapping[str, Any] | None = None, **overrides: Any) -> Settings:
    """Settings from ``saved`` (what the configure tools saved to the shared database), the config
    file, the environment and the defaults (``overrides`` win over all).

    Never fails for what a user wrote: a value that does not validate is dropped and the next
    layer's value (config file, environment, then default) is used, with a :class:`SettingProblem`
    saying so. A bad value in ``overrides`` (code, not a user) still raises ``ValidationError``.
    A backend's settings section (:meth:`Settings.section`) is read from the same inputs when first
    asked for, so a backend registered after this call reads what this one read.
    """
    fields = Settings.model_fields
    path = config_file_path()
    inputs = _Inputs(saved=saved, file_data=read_config_file(path), file_source=f"config file {path}",
                     environ=dict(os.environ),
                     overrides={name: value for name, value in overrides.items() if name not in fields})
    # Every known name, a backend's included, is accepted in the file and can be a did-you-mean.
    layers = _layers(inputs, fields, file_layer=read_file_layer(path, Settings.known_fields(), ENV_PREFIX))
    own = {name: value for name, value in overrides.items() if name in fields}

    def error_field(loc: str) -> str | None:
        return _ACCEPTED_NAMES.get(loc.lower())

    settings, origins, rejected = _settle(fields, layers, own, lambda values: Settings(**values), error_field)
    settings._problems = tuple(
        [p for layer in layers for p in layer.problems]
        + [_rejection(vars(settings)[item[0]], item) for item in rejected]
    )
    settings._origins = origins
    settings._inputs = inputs
    return settings


def _layers(inputs: _Inputs, fields: dict[str, FieldInfo], *, file_layer: Layer | None = None) -> list[Layer]:
    """The raw values ``inputs`` supply for ``fields``, highest layer first."""
    if file_layer is None:
        file_layer = mapping_layer(inputs.file_data, inputs.file_source, fields, ENV_PREFIX)
    layers = [file_layer, read_env_layer(fields, ENV_PREFIX, inputs.environ)]
    if inputs.saved:
        layers.insert(0, mapping_layer(inputs.saved, SAVED_SOURCE, fields, ENV_PREFIX))
    return layers


ModelT = TypeVar("ModelT", bound=BaseModel)
#: A value that did not validate: (setting, where it was written, the value, why, what is used instead).
_Rejected = tuple[str, str, Any, str, str | None]


def _settle(fields: dict[str, FieldInfo], layers: list[Layer], overrides: dict[str, Any],
            build: Callable[[dict[str, Any]], ModelT],
            error_field: Callable[[str], str | None]) -> tuple[ModelT, dict[str, str], list[_Rejected]]:
    """Build the model from the highest layer's value of each field, dropping a value that does not
    validate for the next layer's (``error_field`` names the setting a validation error is about)."""
    candidates = {
        name: [(layer.origins[name], layer.values[name]) for layer in layers if name in layer.values]
        for name in fields
        if name not in overrides
    }
    rejected: list[tuple[str, str, Any, str]] = []
    while True:
        values = dict(overrides)
        values.update({name: found[0][1] for name, found in candidates.items() if found})
        try:
            built = build(values)
            break
        except ValidationError as exc:
            failed: dict[str, list[str]] = {}
            for error in exc.errors():
                name = error_field(str(error["loc"][0])) if error["loc"] else None
                if name is None or not candidates.get(name):
                    raise
                failed.setdefault(name, []).append(error["msg"])
            for name, messages in failed.items():
                origin, raw = candidates[name].pop(0)
                rejected.append((name, origin, raw, "; ".join(dict.fromkeys(messages))))
    origins = {name: found[0][0] for name, found in candidates.items() if found}
    return built, origins, [(*item, origins.get(item[0])) for item in rejected]


def _read_section(inputs: _Inputs, name: str, model: type[BackendSettings]) -> _Section:
    """Section ``name`` read from ``inputs`` as :func:`load_settings` reads the top-level settings."""
    fields = section_fields(name, model)
    layers = _layers(inputs, fields)
    overrides = {flat[len(name) + 1:]: value for flat, value in inputs.overrides.items() if flat in fields}
    prefix = f"{name}_"

    def build(values: dict[str, Any]) -> BackendSettings:
        own = dict(overrides)
        own.update({flat[len(prefix):]: value for flat, value in values.items() if flat.startswith(prefix)})
        return model(**own)

    def error_field(loc: str) -> str | None:
        flat = prefix + loc
        return flat if flat in fields else accepted_names(fields, ENV_PREFIX).get(loc.lower())

    bare = {flat: info for flat, info in fields.items() if flat[len(prefix):] not in overrides}
    values, origins, rejected = _settle(bare, layers, {}, build, error_field)
    problems = [_rejection(getattr(values, item[0][len(prefix):]), item) for item in rejected]
    return _Section(values, origins, problems)


def _rejection(used: Any, item: _Rejected) -> SettingProblem:
    """The problem for a value that did not validate, naming the value used in its place."""
    name, origin, raw, why, instead_from = item
    shown_used = shown(name, used)
    if instead_from is not None:
        instead = f"using the value from {instead_from} ({shown_used})"
    else:
        instead = f"using the default ({shown_used})"
    why = why[:1].lower() + why[1:]
    return SettingProblem(origin, f"{quote_value(name, raw)} is not valid: {why}", instead, setting=name)


def problem_lines(problems: Iterable[SettingProblem]) -> list[str]:
    """One stderr line per settings problem."""
    return [f"ask-fable: settings problem: {problem.message()}" for problem in problems]


def env_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    return f"{ENV_PREFIX}{field.upper()}"


def update_config_file(updates: dict[str, Any]) -> Path:
    """Merge ``updates`` into the config file atomically (0600, dir 0700); ``None`` removes a key.

    A file that exists but is not a JSON object is left untouched (BadArgs): rewriting it from
    scratch would silently drop the user's other settings. Concurrent updates are serialized
    with a lock file, so neither loses the other's keys.
    """
    import fcntl

    from ask_fable.errors import BadArgs
    from ask_fable.files import atomic_write_text, ensure_private_dir

    path = config_file_path()
    ensure_private_dir(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data: dict[str, Any] = {}
        if path.exists():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
            except (OSError, ValueError) as exc:
                raise BadArgs(f"{path} is not valid JSON ({exc}); fix or remove it, then try again") from exc
            if not isinstance(loaded, dict):
                raise BadArgs(f"{path} must hold a JSON object; fix or remove it, then try again")
            data = loaded
        for key, value in updates.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    finally:
        os.close(fd)
    return path
