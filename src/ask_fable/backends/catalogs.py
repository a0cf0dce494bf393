"""Model catalogs (OpenRouter, Atlas Cloud, Ollama): fetch, cache briefly, rank for a task, offer a picker.

A listing with ``refresh=True`` always fetches (falling back to the last catalog fetched, marked
``stale``, when the provider cannot be reached; with none fetched yet, the failure is raised with a
hint naming the setting to check); ``refresh=False`` makes no network call and serves
only what an earlier fetch left in the App's :class:`CatalogCache`. Internal look-ups (OpenRouter
effort clamping, a provider council's featured models) pass ``max_age`` to reuse a catalog fetched
within :data:`CACHE_TTL` seconds. Every function takes the App's resources (cache, HTTP client,
retry policy, clock); without them it works standalone, with nothing kept between calls.

Catalog endpoints are public, so no key is ever sent to them:

- OpenRouter ``GET {openrouter_base_url}/models`` — ``data[]`` with ``id``, ``name``, ``created``
  (unix seconds), ``context_length``, ``pricing.prompt`` / ``pricing.completion`` (dollars per
  token, as strings; ``-1`` marks dynamic routers), ``supported_parameters`` (``reasoning``…),
  ``architecture.output_modalities`` and ``reasoning.supported_efforts`` (highest first; absent
  means every effort is accepted).
- Atlas Cloud ``GET {atlas_base_url}/v1/models`` — an OpenAI-style ``data[]`` list. Atlas does
  not document its extra fields, so the parser reads the common spellings (``context_length`` /
  ``context_window``, ``pricing.prompt`` / ``input``, ``created`` as epoch or ISO date, ``tags`` /
  ``capabilities``, ``type``) and ranks on whatever is present.
- Ollama ``GET {ollama_catalog_url}/api/tags`` (cloud catalog) and ``GET {ollama_base_url}/api/tags``
  (models pulled locally).

Ranking uses only the catalog's own fields — reasoning support, context window, price, release
date, published latency and words of the task found in a model's name or description — so a
model released today ranks with no change here. A task that asks for cheap, fast or high-volume
work flips the weights toward cheap, free and low-latency models. The shortlist takes the best
model of each provider first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ask_fable.backends.base import is_effort
from ask_fable.backends.catalog_listing import (
    CatalogListing,
    CatalogOrigin,
    ListedModel,
    OllamaListing,
    Picker,
    PickerOption,
)
from ask_fable.backends.http_client import (
    RetryPolicy,
    join_url,
    loads_object,
    object_field,
    send,
    text_field,
    versioned_url,
)
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.config import ProviderSettings
from ask_fable.errors import AskFableError, UpstreamError

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

#: Seconds a fetched catalog may be reused by internal look-ups.
CACHE_TTL = 300.0
#: Upper bound on one catalog fetch, retries included.
FETCH_TIMEOUT = 15.0
#: A listing is interactive: one quick retry, then report (a dead local daemon must not stall it).
CATALOG_RETRY = RetryPolicy(attempts=2, base_delay=0.25, max_delay=1.0)
MIN_LIMIT, MAX_LIMIT = 2, 8
EFFORT_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
EFFORT_CHOICES: tuple[PickerOption, ...] = (
    {"value": "quick", "label": "Quick", "description": "Low reasoning effort: fastest and cheapest."},
    {"value": "standard", "label": "Standard", "description": "Medium reasoning effort: balanced."},
    {"value": "deep", "label": "Deep", "description": "High reasoning effort: slowest, most thorough."},
)
#: Words that ask for cheap, fast or high-volume work (``lock-free`` or ``breakfast`` do not count).
CHEAP_PATTERN = re.compile(
    r"(?<![\w-])(?:cheap(?:er|est|ly)?|fast(?:er|est)?|free|bulk|budget|batch(?:es|ed)?|inexpensive"
    r"|low[- ]cost|high[- ]volume|quick(?:er|ly)?|low[- ]latency)(?!\w)",
    re.IGNORECASE,
)
LONG_CONTEXT_WORDS = ("large", "long", "whole", "entire", "repository", "repo", "codebase", "monorepo",
                      "document", "huge", "many files")
_STOPWORDS = frozenset({"the", "and", "for", "with", "from", "into", "that", "this", "what", "best",
                        "model", "models", "task", "about", "using", "use", "need", "want", "give",
                        "find", "good"})
_TEXT_TYPES = frozenset({"text", "llm", "chat", "language", "text-generation", "completion"})

def catalog_cache(resources: Resources) -> CatalogCache:
    """The catalogs ``resources`` fetched recently, by URL, made on first use."""
    return resources.part("catalogs", lambda: CatalogCache(resources.clock))


class CatalogCache:
    """The catalogs one App fetched, by URL, aged on the App's clock."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        # url → (monotonic fetch time, parsed payload)
        self._entries: dict[str, tuple[float, Any]] = {}

    def get(self, url: str, max_age: float | None) -> tuple[Any, float] | None:
        """``(payload, age in seconds)`` of the catalog at ``url`` unless older than ``max_age``."""
        hit = self._entries.get(url)
        if hit is None:
            return None
        age = self._clock.monotonic() - hit[0]
        if max_age is not None and age > max_age:
            return None
        return hit[1], age

    def put(self, url: str, payload: Any) -> None:
        """Remember ``payload`` as the catalog at ``url``, fetched now."""
        self._entries[url] = (self._clock.monotonic(), payload)

    def clear(self) -> None:
        """Forget every cached catalog."""
        self._entries.clear()


def _resources(resources: Resources | None) -> Resources:
    from ask_fable.backends.resources import Resources

    return resources or Resources.standalone()


async def fetch_json(url: str, *, label: str, timeout: float = FETCH_TIMEOUT,
                     headers: dict[str, str] | None = None,
                     transport: httpx2.AsyncBaseTransport | None = None,
                     secrets: Iterable[str] = (), resources: Resources | None = None) -> Any:
    """GET ``url`` through the shared retry loop (the catalog retry policy) and return its JSON object."""

    async def handle(response: httpx2.Response) -> Any:
        return loads_object(await response.aread(), label, secrets)

    res = _resources(resources)
    return await send("GET", url, label=label, timeout=timeout, handle=handle,
                      headers={"accept": "application/json", **(headers or {})}, secrets=secrets,
                      retry=res.given_catalog_retry or CATALOG_RETRY, transport=transport, resources=res)


# -- normalized entries ------------------------------------------------------------------------------

@dataclass
class CatalogModel:
    """One text model as the ranking sees it (``None``: the catalog did not say)."""

    id: str
    name: str
    provider: str
    created: float | None = None
    context_length: int | None = None
    prompt_per_m: float | None = None
    completion_per_m: float | None = None
    reasoning: bool = False
    efforts: list[str] | None = None
    description: str = ""
    tags: list[str] = field(default_factory=list)
    #: Typical seconds to first token, when the catalog publishes a latency.
    latency_s: float | None = None

    @property
    def free(self) -> bool:
        """Both prices are zero (or the id is a ``:free`` variant)."""
        return self.id.endswith(":free") or (self.prompt_per_m == 0 and self.completion_per_m == 0)

    @property
    def blended_price(self) -> float | None:
        """Dollars per million tokens at a 1:3 prompt:completion mix."""
        if self.prompt_per_m is None and self.completion_per_m is None:
            return None
        return ((self.prompt_per_m or 0.0) + 3 * (self.completion_per_m or 0.0)) / 4

    def released(self) -> str | None:
        """The release (catalog) date as ``YYYY-MM-DD``."""
        if self.created is None:
            return None
        return datetime.fromtimestamp(self.created, UTC).strftime("%Y-%m-%d")

    def listed(self) -> ListedModel:
        """This model as a listing's shortlist shows it."""
        out: ListedModel = {"id": self.id, "name": self.name, "provider": self.provider,
                            "context_length": self.context_length,
                            "price_per_million": {"prompt": _round(self.prompt_per_m),
                                                  "completion": _round(self.completion_per_m)},
                            "free": self.free, "reasoning": self.reasoning,
                            "released": self.released()}
        if self.efforts is not None:
            out["efforts"] = self.efforts
        if self.latency_s is not None:
            out["latency_s"] = round(self.latency_s, 3)
        return out

    def describe(self) -> str:
        """A one-line description for a picker option."""
        parts = [self.provider]
        if self.context_length:
            parts.append(f"{_human_tokens(self.context_length)} context")
        if self.free:
            parts.append("free")
        elif self.prompt_per_m is not None or self.completion_per_m is not None:
            parts.append(f"${_round(self.prompt_per_m) or 0}/${_round(self.completion_per_m) or 0} per M")
        if self.reasoning:
            parts.append("reasoning" + (f" ({', '.join(self.efforts)})" if self.efforts else ""))
        if self.released():
            parts.append(f"released {self.released()}")
        return " · ".join(parts)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _human_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:g}M"
    return f"{round(count / 1000)}k" if count >= 1000 else str(count)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().lstrip("$"))
        except ValueError:
            return None
    return None


def _per_million(value: Any) -> float | None:
    """A price as dollars per million tokens; values below $0.001 are taken as per-token."""
    number = _number(value)
    if number is None:
        return None
    return number * 1_000_000 if 0 < number < 0.001 else number


def _timestamp(value: Any) -> float | None:
    number = _number(value)
    if number is not None:
        return number / 1000 if number > 1e12 else number
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None


def _first(entry: dict[str, Any], *names: str) -> Any:
    for name in names:
        if entry.get(name) not in (None, ""):
            return entry[name]
    return None


def _string_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float)]
    if isinstance(value, dict):
        return [str(k) for k, v in value.items() if v]
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    return []


def _is_text_model(entry: dict[str, Any]) -> bool:
    kind = _first(entry, "type", "model_type", "category", "task")
    if isinstance(kind, str) and kind.lower() not in _TEXT_TYPES:
        return False
    arch = entry.get("architecture")
    if isinstance(arch, dict):
        outputs = arch.get("output_modalities")
        if isinstance(outputs, list) and outputs and "text" not in outputs:
            return False
    return True


def _latency(entry: dict[str, Any]) -> float | None:
    """Seconds of latency from ``latency`` / ``latency_ms`` style fields (values above 100 are ms)."""
    for name in ("latency_ms", "avg_latency_ms", "ttft_ms", "first_token_latency_ms"):
        value = _number(entry.get(name))
        if value is not None and value >= 0:
            return value / 1000
    for name in ("latency", "avg_latency", "ttft", "first_token_latency"):
        value = _number(entry.get(name))
        if value is not None and value >= 0:
            return value / 1000 if value > 100 else value
    return None


def _provider_of(model_id: str, owned_by: Any) -> str:
    if "/" in model_id:
        return model_id.split("/", 1)[0].lower()
    return str(owned_by).lower() if isinstance(owned_by, str) and owned_by else "other"


def parse_model(entry: Any) -> CatalogModel | None:
    """Normalize one catalog entry (OpenRouter or OpenAI-style); ``None`` for non-text or router models."""
    if not isinstance(entry, dict):
        return None
    model_id = _first(entry, "id", "model", "model_id", "name")
    if not isinstance(model_id, str) or not model_id.strip() or not _is_text_model(entry):
        return None
    pricing = object_field(entry, "pricing")
    prompt = _per_million(_first(pricing, "prompt", "input", "input_price", "input_per_million")
                          if pricing else _first(entry, "input_price", "prompt_price"))
    completion = _per_million(_first(pricing, "completion", "output", "output_price", "output_per_million")
                              if pricing else _first(entry, "output_price", "completion_price"))
    if (prompt is not None and prompt < 0) or (completion is not None and completion < 0):
        return None  # dynamic routers price per call, not per token
    top = object_field(entry, "top_provider")
    context = _number(_first(entry, "context_length", "context_window", "max_context_length",
                             "contextLength", "max_model_len", "context") or top.get("context_length"))
    params = _string_list(entry.get("supported_parameters"))
    tags = _string_list(_first(entry, "tags", "capabilities", "features", "supported_features"))
    reasoning_info = entry.get("reasoning")
    efforts = None
    if isinstance(reasoning_info, dict):
        listed = reasoning_info.get("supported_efforts")
        efforts = [str(e) for e in listed] if isinstance(listed, list) and listed else None
    reasoning = bool(reasoning_info) or bool(entry.get("supports_reasoning")) or any(
        "reason" in item.lower() or "thinking" in item.lower() for item in [*params, *tags])
    description = text_field(entry, "description")
    return CatalogModel(
        id=model_id.strip(),
        name=str(_first(entry, "name", "display_name", "displayName") or model_id).strip(),
        provider=_provider_of(model_id.strip(), entry.get("owned_by")),
        created=_timestamp(_first(entry, "created", "created_at", "release_date", "released_at")),
        context_length=int(context) if context else None,
        prompt_per_m=prompt,
        completion_per_m=completion,
        reasoning=reasoning,
        efforts=efforts,
        description=description[:2000],
        tags=tags,
        latency_s=_latency(entry),
    )


def parse_catalog(payload: Any) -> list[CatalogModel]:
    """Every text model of a catalog payload (``{"data": [...]}``, ``{"models": [...]}`` or a list)."""
    items: Any = payload
    if isinstance(payload, dict):
        items = payload.get("data", payload.get("models", []))
    if not isinstance(items, list):
        return []
    models = [m for m in (parse_model(item) for item in items) if m is not None]
    return [m for m in models if m.provider != "openrouter"]  # meta-routers, not models


# -- ranking -----------------------------------------------------------------------------------------

def clamp_limit(limit: int | None) -> int:
    """``limit`` forced into 2–8 (default 5)."""
    try:
        value = int(limit) if limit is not None else 5
    except (TypeError, ValueError):
        value = 5
    return max(MIN_LIMIT, min(MAX_LIMIT, value))


def wants_cheap(task: str) -> bool:
    """Whether ``task`` asks for cheap, fast or high-volume work."""
    return CHEAP_PATTERN.search(task) is not None


def _task_words(task: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9+#.-]{2,}", task.lower()) if w not in _STOPWORDS}


def _spread(values: list[float | None]) -> tuple[float, float]:
    present = [v for v in values if v is not None]
    if not present:
        return 0.0, 0.0
    return min(present), max(present)


def _norm(value: float | None, low: float, high: float) -> float:
    if value is None or high <= low:
        return 0.0 if value is None else 1.0
    return (value - low) / (high - low)


def rank(models: list[CatalogModel], task: str = "", limit: int = 5) -> list[CatalogModel]:
    """A provider-diverse shortlist of ``models`` for ``task`` (best first, ``limit`` clamped 2–8)."""
    limit = clamp_limit(limit)
    cheap = wants_cheap(task)
    pool = [m for m in models if cheap or not m.id.endswith(":free")]
    if not pool:
        return []
    words = _task_words(task)
    long_context = any(w in task.lower() for w in LONG_CONTEXT_WORDS)
    created_lo, created_hi = _spread([m.created for m in pool])
    ctx_lo, ctx_hi = _spread([math.log(m.context_length) if m.context_length else None for m in pool])
    lat_lo, lat_hi = _spread([m.latency_s for m in pool])
    price_lo, price_hi = _spread([math.log1p(p) if (p := m.blended_price) is not None else None
                                  for m in pool])

    def score(m: CatalogModel) -> float:
        recency = _norm(m.created, created_lo, created_hi)
        context = _norm(math.log(m.context_length) if m.context_length else None, ctx_lo, ctx_hi)
        price = m.blended_price
        cost = _norm(math.log1p(price) if price is not None else None, price_lo, price_hi)
        cheapness = 1.0 if m.free else (1.0 - cost if price is not None else 0.3)
        haystack = f"{m.id} {m.name} {m.description} {' '.join(m.tags)}".lower()
        relevance = min(1.0, sum(1 for w in words if w in haystack) / 3) if words else 0.0
        reasoning = 1.0 if m.reasoning else 0.0
        if cheap:
            speed = 1.0 - _norm(m.latency_s, lat_lo, lat_hi) if m.latency_s is not None else 0.0
            return (3.0 * cheapness + 1.0 * m.free + 0.75 * speed + 0.75 * recency + 0.5 * reasoning
                    + 0.5 * context + 1.0 * relevance)
        premium = cost if price is not None else 0.0
        return (2.0 * reasoning + 1.5 * recency + (2.5 if long_context else 1.0) * context
                + 0.5 * premium + 1.0 * relevance)

    ordered = sorted(pool, key=lambda m: (-score(m), m.id))
    chosen: list[CatalogModel] = []
    seen: set[str] = set()
    for m in ordered:
        if len(chosen) == limit:
            break
        if m.provider not in seen:
            chosen.append(m)
            seen.add(m.provider)
    for m in ordered:
        if len(chosen) == limit:
            break
        if m not in chosen:
            chosen.append(m)
    return chosen


def build_picker(provider: str, shortlist: list[CatalogModel], default_effort: str | None) -> Picker:
    """Model options (label + description) and the quick/standard/deep effort options."""
    return {
        "title": f"Choose the {provider} model and reasoning effort",
        "models": [{"value": m.id, "label": m.name, "description": m.describe()} for m in shortlist],
        "efforts": [PickerOption(**choice) for choice in EFFORT_CHOICES],
        "default_model": shortlist[0].id if shortlist else None,
        "default_effort": default_effort if is_effort(default_effort) else "standard",
    }


def clamp_effort(wanted: str, entry: CatalogModel | None) -> str | None:
    """The effort closest to ``wanted`` that the model's catalog entry accepts.

    No entry (catalog unavailable) or no published list → ``wanted`` unchanged; a model that
    does not reason → ``None`` (send no reasoning effort). Ties go to the lower, cheaper effort.
    """
    if entry is None:
        return wanted
    if not entry.reasoning:
        return None
    if not entry.efforts:
        return wanted
    allowed = [e for e in entry.efforts if e in EFFORT_ORDER and e != "none"]
    if not allowed:
        return wanted
    if wanted in allowed:
        return wanted
    target = EFFORT_ORDER.index(wanted) if wanted in EFFORT_ORDER else EFFORT_ORDER.index("medium")
    return min(allowed, key=lambda e: (abs(EFFORT_ORDER.index(e) - target), EFFORT_ORDER.index(e)))


# -- OpenRouter and Atlas ----------------------------------------------------------------------------

def openrouter_catalog_url(base_url: str) -> str:
    """The OpenRouter catalog endpoint for an API base URL (``…/api/v1`` → ``…/api/v1/models``)."""
    return versioned_url(base_url, "models")


def atlas_catalog_url(base_url: str) -> str:
    """The Atlas Cloud catalog endpoint (``https://api.atlascloud.ai`` → ``…/v1/models``)."""
    return versioned_url(base_url, "models")


def unreachable_hint(what: str, settings: str) -> str:
    """The fix named when a catalog cannot be fetched (``what`` went wrong) and none was fetched earlier."""
    return (f"{what}, and this server has no earlier catalog to fall back on: check {settings} and the "
            "network, then list again")


async def _catalog(url: str, label: str, refresh: bool, timeout: float,
                   transport: httpx2.AsyncBaseTransport | None, resources: Resources,
                   max_age: float | None = None,
                   setting: str | None = None) -> tuple[list[CatalogModel] | None, CatalogOrigin]:
    """The parsed catalog at ``url`` and facts about where it came from.

    ``refresh`` fetches, unless ``max_age`` allows a catalog fetched that recently; without
    ``refresh`` only the cache is read. A failed fetch with nothing cached is raised, with a hint
    naming ``setting`` (unless the error carries a hint of its own that is not about reaching the host).
    """
    cache = catalog_cache(resources)
    if not refresh or max_age is not None:
        hit = cache.get(url, max_age if refresh else None)
        if hit is not None:
            return hit[0], {"cached": True, "age_s": round(hit[1], 1), "fetched": False}
        if not refresh:
            return None, {"cached": False, "fetched": False}
    try:
        payload = await fetch_json(url, label=label, timeout=timeout, transport=transport,
                                   resources=resources)
    except AskFableError as exc:
        stale = cache.get(url, None)
        if stale is None:
            if setting and (exc.kind == "upstream_error" or "hint" not in exc.extra):
                # The catalog's own hint names the setting to check, which a generic one cannot.
                exc.extra["hint"] = unreachable_hint(f"{label} gave no usable catalog", setting)
            raise
        return stale[0], {"cached": True, "age_s": round(stale[1], 1), "fetched": False, "stale": True,
                          "warning": exc.detail}
    models = parse_catalog(payload)
    cache.put(url, models)
    return models, {"cached": False, "age_s": 0.0, "fetched": True}


async def list_models(provider: str, label: str, url: str, settings: Settings, *, refresh: bool,
                       task: str, limit: int, default_effort: str | None, max_age: float | None,
                       transport: httpx2.AsyncBaseTransport | None,
                       resources: Resources | None) -> CatalogListing:
    """``provider``'s catalog at ``url`` ranked for ``task`` with a model + effort picker (no key
    needed). ``refresh`` fetches the live catalog (``max_age``: unless one was fetched that recently);
    without it only a catalog already in memory is used."""
    timeout = min(FETCH_TIMEOUT, settings.timeout)
    from ask_fable.config import env_name

    setting = env_name(f"{provider}_base_url")
    models, origin = await _catalog(url, label, refresh, timeout, transport, _resources(resources), max_age,
                                    setting)
    limit = clamp_limit(limit)
    shortlist = rank(models, task, limit) if models else []
    if models is None:
        note = "refresh=false and no cached catalog: only effort choices are offered"
    else:
        note = "ranked from live catalog metadata (reasoning, context, price, release date); " \
               "guidance, not a benchmark"
    return {
        "status": "ok",
        "provider": provider,
        "source": url,
        **origin,
        "count": len(models) if models is not None else 0,
        "task": task,
        "ranking": "cheap" if wants_cheap(task) else "capability",
        "limit": limit,
        "models": [m.listed() for m in shortlist],
        "picker": build_picker(label, shortlist, default_effort),
        "note": note,
    }


async def openrouter_entry(base_url: str, model: str, *, timeout: float = FETCH_TIMEOUT,
                           transport: httpx2.AsyncBaseTransport | None = None,
                           resources: Resources | None = None) -> CatalogModel | None:
    """The catalog entry of ``model`` (a catalog fetched within :data:`CACHE_TTL` first); ``None`` when
    unknown or unreachable."""
    try:
        models, _ = await _catalog(openrouter_catalog_url(base_url), "OpenRouter catalog", True, timeout,
                                   transport, _resources(resources), CACHE_TTL)
    except AskFableError:
        return None
    return next((m for m in models or [] if m.id == model), None)


# -- Ollama ------------------------------------------------------------------------------------------

def cloud_id(name: str) -> str:
    """A catalog name as the id the local daemon runs: ``gpt-oss:120b`` → ``gpt-oss:120b-cloud``."""
    if name.endswith("cloud"):
        return name
    base, sep, tag = name.partition(":")
    return f"{base}:{tag}-cloud" if sep and tag else f"{base}:cloud"


def _tag_names(payload: Any) -> list[str]:
    items = payload.get("models") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        return []
    names = []
    for item in items:
        name = _first(item, "name", "model") if isinstance(item, dict) else item
        if isinstance(name, str) and name.strip():
            names.append(name.strip())
    return names


@dataclass
class _Tags:
    """One Ollama model list: the names (``None``: none known), why a fetch failed, whether the names
    are the last ones fetched before that failure."""

    names: list[str] | None
    error: str | None = None
    stale: bool = False


async def _ollama_tags(url: str, label: str, refresh: bool, timeout: float, headers: dict[str, str],
                       transport: httpx2.AsyncBaseTransport | None, secrets: Iterable[str],
                       resources: Resources) -> _Tags:
    hit = catalog_cache(resources).get(url, None)
    if not refresh:
        return _Tags(hit[0] if hit else None)
    try:
        payload = await fetch_json(url, label=label, timeout=timeout, headers=headers, transport=transport,
                                   secrets=secrets, resources=resources)
    except AskFableError as exc:
        return _Tags(hit[0] if hit else None, exc.detail, stale=hit is not None)
    names = _tag_names(payload)
    catalog_cache(resources).put(url, names)
    return _Tags(names)


async def list_ollama_catalog(settings: Settings, ollama: ProviderSettings, council: list[str],
                              catalog_url: str, refresh: bool = True, *,
                              transport: httpx2.AsyncBaseTransport | None = None,
                              resources: Resources | None = None) -> OllamaListing:
    """The cloud catalog at ``catalog_url`` (as daemon-ready ids), the models pulled on ``ollama``'s
    endpoint and the ``council``.

    A list that cannot be fetched now is served as last fetched, with ``stale``; when neither can be
    fetched and none was fetched before, the failure is raised with a hint.
    """
    from ask_fable.stores.saved_settings import LOCATION as SAVED_LOCATION

    timeout = min(FETCH_TIMEOUT, settings.timeout)
    catalog_tags = join_url(catalog_url, "api/tags")
    local_url = join_url(ollama.base_url, "api/tags")
    from ask_fable.backends.ollama import ollama_headers

    local_headers = ollama_headers(ollama.base_url, ollama.key())
    secrets = settings.secret_values()
    res = _resources(resources)
    cloud = await _ollama_tags(catalog_tags, "Ollama catalog", refresh, timeout, {}, transport, secrets, res)
    local = await _ollama_tags(local_url, "Ollama", refresh, timeout, local_headers, transport, secrets, res)
    if cloud.error and local.error and cloud.names is None and local.names is None:
        settings_named = ("ASK_FABLE_OLLAMA_BASE_URL (start the daemon with `ollama serve`) and "
                          "ASK_FABLE_OLLAMA_CATALOG_URL")
        hint = unreachable_hint("neither the Ollama catalog nor the Ollama daemon answered", settings_named)
        raise UpstreamError(f"{cloud.error}; {local.error}", hint=hint)
    fetched_local = local.names is not None and not local.stale
    result: OllamaListing = {
        "status": "ok",
        "reachable": fetched_local if refresh else (True if local.names is not None else None),
        "available_cloud": sorted({cloud_id(n) for n in cloud.names or []}),
        "pulled_local": sorted(set(local.names or [])),
        "configured_council": list(council),
        "default_model": ollama.model,
        "base_url": ollama.base_url,
        # Where configure_ollama_council saves: the shared database when there is one.
        "config_file": SAVED_LOCATION if settings.database_url else str(settings.config_file),
    }
    if cloud.error:
        result["catalog_error"] = cloud.error
    if local.error:
        result["local_error"] = local.error
    if cloud.stale or local.stale:
        result["stale"] = True
    if not refresh:
        result["note"] = "refresh=false: cached lists only, no network call"
    return result
