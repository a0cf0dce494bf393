"""The HTTP providers' catalogs (Atlas Cloud, OpenRouter, Ollama); their one-model tools come from their
descriptors (:mod:`ask_fable.surface.tools.backend_tools`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from ask_fable.access import FETCHES
from ask_fable.backends.base import is_effort
from ask_fable.backends.catalog_listing import ListedModel, Picker, PickerOption
from ask_fable.contract import DataResult
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import Handler, ToolSpec
from ask_fable.surface.tools.common import clamped_note
from ask_fable.values import SENT_WHOLE


class CatalogArgs(BaseModel):
    """Arguments of list_atlas_models and list_openrouter_models."""

    model_config = ConfigDict(extra="forbid")

    refresh: bool = Field(True, description="Fetch the live catalog now (false: no network, the last fetch).")
    task: str = Field("", description="What the model is for; ranks a provider-diverse shortlist for it.")
    limit: int = Field(5, description="Shortlist size, clamped to 2–8.")
    interactive: bool = Field(
        True, description="Offer a native model + effort picker when the client supports form elicitation."
    )


class OllamaCatalogArgs(BaseModel):
    """Arguments of list_ollama_models."""

    model_config = ConfigDict(extra="forbid")

    refresh: bool = Field(True, description="Fetch the live lists now (false: no network, the last fetch).")


class Selection(BaseModel):
    """What the user chose in the native picker."""

    model_config = ConfigDict(extra="forbid")

    action: str = Field(description="accept, decline or cancel")
    model: str | None = None
    effort: str | None = None


class CatalogResult(DataResult):
    """A ranked catalog shortlist with its picker (and the user's selection when one was made)."""

    provider: str | None = None
    source: str | None = None
    cached: bool | None = None
    fetched: bool | None = None
    stale: bool | None = None
    warning: str | None = None
    age_s: float | None = None
    count: int | None = None
    task: str | None = None
    ranking: str | None = None
    limit: int | None = None
    models: Annotated[list[ListedModel], SENT_WHOLE] | None = None
    picker: Annotated[Picker, SENT_WHOLE] | None = None
    selection: Selection | None = None
    note: str | None = None


class OllamaCatalogResult(DataResult):
    """The Ollama cloud catalog, the locally pulled models and the configured council."""

    reachable: bool | None = None
    available_cloud: list[str] | None = None
    pulled_local: list[str] | None = None
    configured_council: list[str] | None = None
    default_model: str | None = None
    base_url: str | None = None
    config_file: str | None = None
    catalog_error: str | None = None
    local_error: str | None = None
    #: A list that could not be fetched now is served as last fetched.
    stale: bool | None = None
    note: str | None = None


# --- catalogs ----------------------------------------------------------------------------------------


def _choice_field(options: list[PickerOption], default: str | None, title: str,
                  description: str) -> tuple[type[str], object]:
    one_of: list[JsonValue] = [
        {"const": o["value"],
         "title": f"{o['label']} — {o['description']}" if o["description"] else o["label"]}
        for o in options
    ]
    return (str, Field(default=default or options[0]["value"], title=title, description=description,
                       json_schema_extra={"oneOf": one_of}))


def picker_form(picker: Picker) -> type[BaseModel]:
    """The elicitation form for a picker: a model select (when there are models) and an effort select."""
    fields: dict[str, Any] = {}
    if picker.get("models"):
        fields["model"] = _choice_field(picker["models"], picker.get("default_model"), "Model",
                                        "The model to ask")
    fields["effort"] = _choice_field(picker["efforts"], picker.get("default_effort"), "Effort",
                                     "How hard the model should reason")
    return create_model("ModelPicker", **fields)


async def _offer_picker(ctx: ToolContext, picker: Picker) -> Selection | None:
    """Show the native picker; ``None`` when the client cannot elicit."""
    answer = await ctx.elicit(picker.get("title") or "Choose a model and effort", picker_form(picker))
    if answer is None:
        return None
    if answer.action != "accept":
        return Selection(action=answer.action)
    data = answer.data
    model = getattr(data, "model", None)
    effort = getattr(data, "effort", None)
    allowed_models = {o["value"] for o in picker.get("models", [])}
    if model is not None and model not in allowed_models:
        model = picker.get("default_model")
    if not is_effort(effort):
        effort = picker.get("default_effort")
    return Selection(action="accept", model=model, effort=effort)


async def _catalog_tool(provider: str, args: CatalogArgs, ctx: ToolContext) -> CatalogResult:
    from ask_fable.backends import catalogs
    from ask_fable.backends.providers import atlas, openrouter

    listing = atlas.list_atlas_models if provider == "atlas" else openrouter.list_openrouter_models
    # The catalog module sits below the contract: its listing is the typed dict this result is made from.
    listed = await listing(ctx.settings, refresh=args.refresh, task=args.task, limit=args.limit,
                           resources=ctx.app.resources)
    result = CatalogResult.model_validate(listed)
    used = result.limit
    clamped = used is not None and clamped_note("limit", args.limit, used, catalogs.MIN_LIMIT,
                                                catalogs.MAX_LIMIT)
    if clamped:
        result.note = f"{result.note}; {clamped}" if result.note else clamped
    if args.interactive:
        result.selection = await _offer_picker(ctx, listed["picker"])
    return result


async def list_atlas_models(args: CatalogArgs, ctx: ToolContext) -> CatalogResult:
    """The free Atlas Cloud catalog, ranked for a task, with a model + effort picker."""
    return await _catalog_tool("atlas", args, ctx)


async def list_openrouter_models(args: CatalogArgs, ctx: ToolContext) -> CatalogResult:
    """The free OpenRouter catalog, ranked for a task, with a model + effort picker."""
    return await _catalog_tool("openrouter", args, ctx)


async def list_ollama_models(args: OllamaCatalogArgs, ctx: ToolContext) -> OllamaCatalogResult:
    """Cloud catalog, locally pulled models and the configured Ollama council."""
    from ask_fable.backends.providers.ollama import list_ollama_models as listing

    return OllamaCatalogResult.model_validate(
        await listing(ctx.settings, refresh=args.refresh, resources=ctx.app.resources))


def _catalog(name: str, description: str, args: type[BaseModel], result: type[DataResult],
             handler: Handler) -> ToolSpec:
    return ToolSpec(name=name, family="catalogs", description=description, args=args, result=result,
                    handler=handler, effects=FETCHES, idempotent=True)


TOOLS = [
    _catalog(
        "list_atlas_models",
        "The free live Atlas Cloud text-model catalog. With task, ranks a provider-diverse shortlist from "
        "the catalog's own metadata (reasoning, context, price, release date; cheap/fast/high-volume tasks "
        "favour cheap models). Opens a native model + effort picker when the client supports form "
        "elicitation (selection: {action, model, effort}); otherwise the same choices are under picker. "
        "limit 2–8; refresh=true fetches on every call, refresh=false makes none.",
        CatalogArgs,
        CatalogResult,
        list_atlas_models,
    ),
    _catalog(
        "list_openrouter_models",
        "The free live OpenRouter catalog with price per million, context window and per-model reasoning "
        "efforts. With task, ranks a provider-diverse shortlist (cheap/fast/high-volume tasks favour cheap "
        "and free models). Native picker or picker field as for list_atlas_models. limit 2–8; "
        "refresh=true fetches on every call, refresh=false makes none.",
        CatalogArgs,
        CatalogResult,
        list_openrouter_models,
    ),
    _catalog(
        "list_ollama_models",
        "What an Ollama council can use: the live ollama.com catalog as daemon-ready ids, the models "
        "pulled locally, and the configured council (persist a choice with configure_ollama_council).",
        OllamaCatalogArgs,
        OllamaCatalogResult,
        list_ollama_models,
    ),
]
