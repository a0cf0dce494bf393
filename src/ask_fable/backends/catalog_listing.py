"""What a catalog listing returns, as its tool sends it: built by ``backends/catalogs.py``, listed as
they are by the catalog tools' results (``surface/tools/http_models.py``).

Typed dicts, light to import (the catalog machinery is loaded only when a listing runs). A ``None``
in them means the catalog did not say (no price, no context window, no model to default to) and is
sent as ``null``.
"""

from __future__ import annotations

from typing import Literal, NotRequired, Required

# typing_extensions' TypedDict, which pydantic reads on Python 3.11 too: these are fields of results.
from typing_extensions import TypedDict


class PickerOption(TypedDict):
    """One choice of a picker: the value sent back, its label and a one-line description."""

    value: str
    label: str
    description: str


class Picker(TypedDict):
    """A model + effort picker offered with a catalog listing."""

    title: str
    models: list[PickerOption]
    efforts: list[PickerOption]
    default_model: str | None
    default_effort: str


class PricePerMillion(TypedDict):
    """Dollars per million prompt and completion tokens."""

    prompt: float | None
    completion: float | None


class ListedModel(TypedDict):
    """One model of a listing's shortlist."""

    id: str
    name: str
    provider: str
    context_length: int | None
    price_per_million: PricePerMillion
    free: bool
    reasoning: bool
    #: The catalog date, ``YYYY-MM-DD``.
    released: str | None
    #: The reasoning efforts the model accepts, when the catalog lists them.
    efforts: NotRequired[list[str]]
    #: Typical seconds to first token, when the catalog publishes a latency.
    latency_s: NotRequired[float]


class CatalogOrigin(TypedDict, total=False):
    """Where a catalog came from: fetched now, or the cache (how old, and why a stale one)."""

    cached: Required[bool]
    fetched: Required[bool]
    age_s: float
    stale: bool
    warning: str


class CatalogListing(CatalogOrigin):
    """A provider's catalog (Atlas Cloud, OpenRouter) ranked for a task, with its picker."""

    status: Required[Literal["ok"]]
    provider: Required[str]
    #: The catalog's URL.
    source: Required[str]
    #: Text models in the catalog (0 when none was fetched).
    count: Required[int]
    task: Required[str]
    ranking: Required[Literal["cheap", "capability"]]
    limit: Required[int]
    models: Required[list[ListedModel]]
    picker: Required[Picker]
    note: Required[str]


class OllamaListing(TypedDict, total=False):
    """The Ollama cloud catalog, the models pulled locally and the configured council."""

    status: Required[Literal["ok"]]
    #: Whether the daemon answered now (``None``: not asked, nothing known).
    reachable: Required[bool | None]
    available_cloud: Required[list[str]]
    pulled_local: Required[list[str]]
    configured_council: Required[list[str]]
    default_model: Required[str]
    base_url: Required[str]
    #: Where ``configure_ollama_council`` saves.
    config_file: Required[str]
    catalog_error: str
    local_error: str
    #: A list that could not be fetched now is served as last fetched.
    stale: bool
    note: str
