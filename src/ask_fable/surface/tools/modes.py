"""The multi-model tools: ask_council, ask_chain, ask_debate, the provider councils and their configuration.

Each tool parses its model tokens up front (a bad token is ``bad_args`` before any model runs),
then hands a mode runner to the pipeline, which does the guard, cache, audit, trace and hub.
"""

from __future__ import annotations

from pydantic import Field

from ask_fable.access import ADMINISTERS, ASKS
from ask_fable.backends.providers.atlas import ATLAS, AtlasSettings
from ask_fable.backends.providers.ollama import OLLAMA, OllamaSettings
from ask_fable.backends.providers.openrouter import OPENROUTER, OpenRouterSettings
from ask_fable.contract import AnswerResult, ChainResult, CouncilResult, DataResult, DebateResult
from ask_fable.core.estimate import PlannedCall
from ask_fable.core.pipeline import Call
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import (
    CONTEXT,
    CONTEXT_REF,
    ESTIMATE,
    MAX_COST_USD,
    QUESTION,
    Args,
    named_or_omitted,
    require_names,
    save_settings,
    saved_note,
)

DEFAULT_PIPELINE = "m3 > glm > deepseek > fable"
#: Used when a provider council has no configured panel and its catalog cannot be reached.
FALLBACK_PANELS: dict[str, list[str]] = {
    "atlas": ["deepseek-ai/deepseek-v4-pro", "zai-org/glm-5.2", "xai/grok-4.6"],
    "openrouter": ["deepseek/deepseek-v4-pro", "z-ai/glm-5.2", "qwen/qwen3-coder"],
}
FEATURED_COUNT = 3

SESSION = Field(
    None, description="Hub label for this call (not a model session)."
)


class CouncilArgs(Args):
    """Arguments of ask_council."""

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF
    models: list[str] | None = Field(
        None,
        description="Member tokens, e.g. [\"twin\",\"m3\"]; overrides tier; omit it for the tier "
        "([] is bad_args).",
    )
    tier: str | None = Field(
        None, description="default, twin, middle or full; omit it for default (\"\" is bad_args)."
    )
    synthesizer: str | None = Field(
        None, description="The token that reconciles the answers (default fable)."
    )
    session: str | None = SESSION
    estimate: bool = ESTIMATE
    max_cost_usd: float = MAX_COST_USD


class ChainArgs(Args):
    """Arguments of ask_chain."""

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF
    pipeline: str | list[str] | None = Field(
        None, description=f"Ordered stages split on '>' (omit for \"{DEFAULT_PIPELINE}\"); repeats allowed."
    )
    models: list[str] | None = Field(None, description="The stages as an ordered list (instead of pipeline).")
    session: str | None = SESSION
    estimate: bool = ESTIMATE
    max_cost_usd: float = MAX_COST_USD


class DebateArgs(Args):
    """Arguments of ask_debate."""

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF
    proposer: str = Field("fable", description="The model that commits to a position (one token).")
    opponent: str = Field("minimax", description="The model that attacks each claim (one token).")
    adjudicator: str = Field(
        "fable", description="The third party that rules; keep it off the debating pair (one token)."
    )
    rounds: int = Field(1, ge=1, le=2, description="1, or 2 to add the opponent's rebuttal pass.")
    session: str | None = SESSION
    estimate: bool = ESTIMATE
    max_cost_usd: float = MAX_COST_USD


class ProviderCouncilArgs(Args):
    """Arguments of ask_ollama_council."""

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF
    models: list[str] | None = Field(
        None, description="Model ids (prefix optional); omit for the configured set ([] is bad_args)."
    )
    session: str | None = SESSION
    estimate: bool = ESTIMATE
    max_cost_usd: float = MAX_COST_USD


class AdjudicatedCouncilArgs(ProviderCouncilArgs):
    """Arguments of ask_atlas_council and ask_openrouter_council."""

    synthesizer: str | None = Field(
        None,
        description="Adjudicator token (default: configured, else local codex CLI → the provider's "
        "openai/gpt-5.6-sol → fable).",
    )


class ConfigureOllamaArgs(Args):
    """Arguments of configure_ollama_council."""

    models: list[str] = Field(description="Ollama Cloud model ids; bare names get ':cloud' (minimax-m3).")
    default_model: str | None = Field(None, description="Default model for ask_ollama.")


class ConfigureAtlasArgs(Args):
    """Arguments of configure_atlas_council."""

    models: list[str] = Field(description="Atlas model ids (an 'atlas:' prefix is optional).")
    synthesizer: str | None = Field(
        None, description="Adjudicator token, e.g. codex, opus or openai/gpt-5.6-sol (saved as atlas:…)."
    )


class ConfigureOpenRouterArgs(Args):
    """Arguments of configure_openrouter_council."""

    models: list[str] = Field(description="OpenRouter model ids (an 'openrouter:' prefix is optional).")
    synthesizer: str | None = Field(None, description="Adjudicator token (bare ids get 'openrouter:').")
    effort: str | None = Field(
        None, description="Default panel effort: quick, standard or deep (low, medium, high accepted)."
    )


class ConfigureResult(DataResult):
    """What a configure_* tool persisted."""

    config_file: str | None = None
    ollama_council: list[str] | None = None
    ollama_model: str | None = None
    atlas_council: list[str] | None = None
    atlas_synthesizer: str | None = None
    openrouter_council: list[str] | None = None
    openrouter_synthesizer: str | None = None
    openrouter_effort: str | None = None
    note: str | None = None


# --- handlers ------------------------------------------------------------------------------------------


async def _council(
    ctx: ToolContext,
    tool: str,
    args: ProviderCouncilArgs | CouncilArgs,
    members: list[str],
    synthesizer: str | list[str] | None,
    *,
    effort: str | None = None,
) -> AnswerResult:
    from ask_fable.core.caps import check_council
    from ask_fable.core.modes.council import run_council, synth_ladder
    from ask_fable.core.modes.plans import plan_council
    from ask_fable.core.tokens import default_resolver

    check_council(members, ctx.settings)
    ladder = synth_ladder(synthesizer)
    resolver = default_resolver(ctx.settings, effort=effort, resources=ctx.app.resources)
    # Trimmed from the end (the lowest-ranked member first) when the call must fit max_cost_usd.
    members = list(members)
    over_budget: list[str] = []

    def drop_member() -> str | None:
        if len(members) <= 1:
            return None
        over_budget.append(members.pop())
        return over_budget[-1]

    async def planner(question: str, context: str) -> list[PlannedCall]:
        return plan_council(question, context, members, ladder, resolver)

    call = Call(tool=tool, question=args.question, context=args.context, context_ref=args.context_ref,
                session=args.session, mode="council", result=CouncilResult, cache_models=members,
                cache_extra={"synthesizer": ladder, "effort": effort}, planner=planner,
                drop_member=drop_member, estimate_only=args.estimate, max_cost_usd=args.max_cost_usd or None)
    return await ctx.run(call, lambda q, c, m: run_council(
        q, c, members, m, synthesizer=ladder, resolver=resolver, over_budget=over_budget))


async def ask_council(args: CouncilArgs, ctx: ToolContext) -> AnswerResult:
    """Parallel panel plus an anonymized synthesis."""
    from ask_fable.core.tokens import TIERS, dedupe, expand_models, single_token, tier_models

    models = named_or_omitted(args.models, "models")
    if models is not None:
        members = dedupe(expand_models(models))
    else:
        tier = named_or_omitted(args.tier, "tier", f"a tier ({', '.join(TIERS)})")
        members = tier_models("default" if tier is None else tier, ctx.settings)
    named = named_or_omitted(args.synthesizer, "synthesizer", "a model token")
    synthesizer = single_token(named) if named is not None else None
    return await _council(ctx, "ask_council", args, members, synthesizer)


async def ask_chain(args: ChainArgs, ctx: ToolContext) -> AnswerResult:
    """Ordered draft → critique → decide pipeline."""
    from ask_fable.core.caps import check_chain
    from ask_fable.core.modes.chain import run_chain
    from ask_fable.core.tokens import default_resolver, parse_pipeline

    given: str | list[str] | None = named_or_omitted(args.models, "models")
    if given is None:
        given = named_or_omitted(args.pipeline, "pipeline")
    stages = check_chain(parse_pipeline(DEFAULT_PIPELINE if given is None else given), ctx.settings)
    from ask_fable.core.modes.plans import plan_chain

    resolver = default_resolver(ctx.settings, resources=ctx.app.resources)

    async def planner(question: str, context: str) -> list[PlannedCall]:
        return plan_chain(question, context, stages, resolver)

    call = Call(tool="ask_chain", question=args.question, context=args.context, context_ref=args.context_ref,
                session=args.session, mode="chain", result=ChainResult, cache_models=stages, planner=planner,
                estimate_only=args.estimate, max_cost_usd=args.max_cost_usd or None)
    return await ctx.run(call, lambda q, c, m: run_chain(q, c, stages, m, resolver=resolver))


async def ask_debate(args: DebateArgs, ctx: ToolContext) -> AnswerResult:
    """Proposer vs opponent over a claims ledger, then a third-party ruling."""
    from ask_fable.core.modes.debate import run_debate
    from ask_fable.core.tokens import default_resolver, single_token

    proposer, opponent, adjudicator = (single_token(args.proposer), single_token(args.opponent),
                                       single_token(args.adjudicator))
    from ask_fable.core.modes.plans import plan_debate

    resolver = default_resolver(ctx.settings, resources=ctx.app.resources)

    async def planner(question: str, context: str) -> list[PlannedCall]:
        return plan_debate(question, context, proposer, opponent, adjudicator, args.rounds, resolver)

    call = Call(tool="ask_debate", question=args.question, context=args.context, context_ref=args.context_ref,
                session=args.session, mode="debate", result=DebateResult, planner=planner,
                estimate_only=args.estimate, max_cost_usd=args.max_cost_usd or None)
    return await ctx.run(call, lambda q, c, m: run_debate(
        q, c, m, proposer=proposer, opponent=opponent, adjudicator=adjudicator, rounds=args.rounds,
        resolver=resolver,
    ))


async def ask_ollama_council(args: ProviderCouncilArgs, ctx: ToolContext) -> AnswerResult:
    """An Ollama-only council, synthesized by Fable."""
    from ask_fable.core.tokens import provider_council_tokens

    models = named_or_omitted(args.models, "models")
    configured = ctx.settings.section(OLLAMA.name, OllamaSettings).council
    members = provider_council_tokens("ollama", configured if models is None else models)
    if not members:
        from ask_fable.errors import BadArgs

        raise BadArgs("no Ollama models given or configured; call configure_ollama_council first")
    return await _council(ctx, "ask_ollama_council", args, members, None)


async def _featured(provider: str, ctx: ToolContext) -> tuple[list[str], str | None]:
    """Three provider-diverse catalog models, or a fixed panel when the catalog is unreachable;
    with a note saying so in the latter case."""
    from ask_fable.backends import catalogs
    from ask_fable.backends.providers import atlas, openrouter
    from ask_fable.errors import AskFableError

    listing = atlas.list_atlas_models if provider == "atlas" else openrouter.list_openrouter_models
    try:
        result = await listing(ctx.settings, refresh=True, limit=FEATURED_COUNT, max_age=catalogs.CACHE_TTL,
                               resources=ctx.app.resources)
    except AskFableError as exc:
        why = f"the {provider} model catalog could not be reached ({exc.kind})"
    else:
        ids = [m["id"] for m in result.get("models", [])][:FEATURED_COUNT]
        if ids:
            return ids, None
        why = f"the {provider} model catalog listed no models"
    panel = list(FALLBACK_PANELS[provider])
    return panel, f"{why}; used the built-in panel {', '.join(panel)}"


async def _adjudicated(
    provider: str, tool: str, args: AdjudicatedCouncilArgs, ctx: ToolContext,
    configured: list[str], configured_synth: str | None, effort: str | None,
) -> AnswerResult:
    from ask_fable.core.tokens import provider_council_tokens, provider_synth_ladder

    given = named_or_omitted(args.models, "models")
    models, note = configured if given is None else given, None
    if not models:
        models, note = await _featured(provider, ctx)
    members = provider_council_tokens(provider, models)
    named = named_or_omitted(args.synthesizer, "synthesizer", "a model id")
    ladder = provider_synth_ladder(provider, named if named is not None else configured_synth)
    result = await _council(ctx, tool, args, members, ladder, effort=effort)
    if note and result.status != "error":
        result.note = f"{result.note}; {note}" if result.note else note
    return result


async def ask_atlas_council(args: AdjudicatedCouncilArgs, ctx: ToolContext) -> AnswerResult:
    """An Atlas-only council adjudicated by GPT (codex CLI → Atlas-hosted GPT → Fable)."""
    config = ctx.settings.section(ATLAS.name, AtlasSettings)
    return await _adjudicated("atlas", "ask_atlas_council", args, ctx, config.council, config.synthesizer,
                              config.effort)


async def ask_openrouter_council(args: AdjudicatedCouncilArgs, ctx: ToolContext) -> AnswerResult:
    """A cross-lab OpenRouter council adjudicated by GPT (codex CLI → OpenRouter GPT → Fable)."""
    config = ctx.settings.section(OPENROUTER.name, OpenRouterSettings)
    return await _adjudicated("openrouter", "ask_openrouter_council", args, ctx, config.council,
                              config.synthesizer, config.effort)


#: The fields of a ``configure_*`` result that are settings it saves.
_SAVED_SETTINGS = set(ConfigureResult.model_fields) - set(DataResult.model_fields) - {"config_file", "note"}


async def _persist(chosen: ConfigureResult, ctx: ToolContext) -> ConfigureResult:
    """Save the settings ``chosen`` sets; ``chosen`` with where they went."""
    where = await save_settings(ctx, chosen.model_dump(include=_SAVED_SETTINGS, exclude_none=True))
    return chosen.model_copy(update={"config_file": where,
                                     "note": saved_note(where, "the matching ASK_FABLE_* variables")})


async def configure_ollama_council(args: ConfigureOllamaArgs, ctx: ToolContext) -> ConfigureResult:
    """Persist the Ollama council (and optionally the ask_ollama default model)."""
    from ask_fable.core.tokens import dedupe, normalize_ollama_model

    require_names(args.models, "give at least one Ollama model id")
    council = dedupe([normalize_ollama_model(m) for m in args.models if str(m).strip()])
    model = normalize_ollama_model(args.default_model) if args.default_model else None
    return await _persist(ConfigureResult(status="ok", ollama_council=council, ollama_model=model), ctx)


async def configure_atlas_council(args: ConfigureAtlasArgs, ctx: ToolContext) -> ConfigureResult:
    """Persist the Atlas council and its adjudicator."""
    from ask_fable.core.tokens import dedupe, normalize_atlas_model, normalize_synthesizer

    require_names(args.models, "give at least one Atlas model id")
    council = dedupe([normalize_atlas_model(m) for m in args.models if str(m).strip()])
    synthesizer = normalize_synthesizer(args.synthesizer, "atlas") if args.synthesizer else None
    return await _persist(ConfigureResult(status="ok", atlas_council=council, atlas_synthesizer=synthesizer),
                          ctx)


async def configure_openrouter_council(args: ConfigureOpenRouterArgs, ctx: ToolContext) -> ConfigureResult:
    """Persist the OpenRouter council, its adjudicator and effort."""
    from ask_fable.backends.http_client import normalize_effort
    from ask_fable.core.tokens import dedupe, normalize_openrouter_model, normalize_synthesizer

    require_names(args.models, "give at least one OpenRouter model id")
    council = dedupe([normalize_openrouter_model(m) for m in args.models if str(m).strip()])
    synthesizer = normalize_synthesizer(args.synthesizer, "openrouter") if args.synthesizer else None
    effort = normalize_effort(args.effort) or None  # quick/standard/deep, or low/medium/high
    return await _persist(ConfigureResult(status="ok", openrouter_council=council,
                                          openrouter_synthesizer=synthesizer, openrouter_effort=effort), ctx)


# --- declarations -----------------------------------------------------------------------------------

TOOLS = [
    ToolSpec(
        name="ask_council",
        family="core",
        description=(
            "Several models answer at once; a synthesizer reconciles their anonymized answers "
            "(synthesizer null: none ran). Unavailable members, and stragglers cut once a quorum "
            "answered, are reported in sources and skipped. Check quorum, degraded and consensus "
            "before acting: 1/M is one opinion. Tokens: ask_fable_help(topic='tokens')."
        ),
        args=CouncilArgs,
        result=CouncilResult,
        handler=ask_council,
        effects=ASKS,
        title="Council",
    ),
    ToolSpec(
        name="ask_chain",
        family="core",
        description=(
            "An ordered pipeline such as \"m3 > glm > fable\": the first stage drafts, middle stages "
            "critique, the last decides. Failed stages are skipped; recommendation_drift shows whether "
            "later stages changed the answer."
        ),
        args=ChainArgs,
        result=ChainResult,
        handler=ask_chain,
        effects=ASKS,
        title="Chain",
    ),
    ToolSpec(
        name="ask_debate",
        family="core",
        description=(
            "Stress-test one hard-to-reverse decision: a proposer states claims, an opponent concedes or "
            "contests each, the proposer revises, a third model rules. debate.resolution comes from the "
            "claims ledger; debate.decisive_argument is null when nobody ruled. The most expensive mode."
        ),
        args=DebateArgs,
        result=DebateResult,
        handler=ask_debate,
        effects=ASKS,
        title="Debate",
    ),
    ToolSpec(
        name="ask_ollama_council",
        family="councils",
        description=(
            "A council of Ollama Cloud models (the 'ollama:' prefix is optional; bare names get ':cloud'), "
            "synthesized by Fable. Default members: the configured set (configure_ollama_council, "
            "ASK_FABLE_OLLAMA_COUNCIL)."
        ),
        args=ProviderCouncilArgs,
        result=CouncilResult,
        handler=ask_ollama_council,
        effects=ASKS,
    ),
    ToolSpec(
        name="ask_atlas_council",
        family="councils",
        description=(
            "A council of Atlas Cloud models, adjudicated by the synthesizer given or configured, else by "
            "GPT: the local codex CLI → Atlas-hosted openai/gpt-5.6-sol → Fable; synthesis says which ran. "
            "Default members: the configured set, else three featured catalog models (one per provider)."
        ),
        args=AdjudicatedCouncilArgs,
        result=CouncilResult,
        handler=ask_atlas_council,
        effects=ASKS,
    ),
    ToolSpec(
        name="ask_openrouter_council",
        family="councils",
        description=(
            "A cross-lab council on one OpenRouter key, adjudicated by the synthesizer given or configured, "
            "else by the local codex CLI → OpenRouter's openai/gpt-5.6-sol → Fable. Default members: "
            "configure_openrouter_council / ASK_FABLE_OPENROUTER_COUNCIL, else three featured catalog models."
        ),
        args=AdjudicatedCouncilArgs,
        result=CouncilResult,
        handler=ask_openrouter_council,
        effects=ASKS,
    ),
    ToolSpec(
        name="configure_ollama_council",
        family="catalogs",
        description=(
            "Save the Ollama council (and ask_ollama's default model) to the config file (to the shared "
            "database when there is one, for every replica), which overrides ASK_FABLE_OLLAMA_COUNCIL / "
            "ASK_FABLE_OLLAMA_MODEL. Call list_ollama_models first and ask the user which models they want."
        ),
        args=ConfigureOllamaArgs,
        result=ConfigureResult,
        handler=configure_ollama_council,
        effects=ADMINISTERS,
        idempotent=True,
    ),
    ToolSpec(
        name="configure_atlas_council",
        family="catalogs",
        description=(
            "Save the Atlas council members and adjudicator to the config file, or the shared database "
            "when there is one (overrides ASK_FABLE_ATLAS_COUNCIL / ASK_FABLE_ATLAS_SYNTHESIZER). 'gpt' "
            "is saved as codex; a bare openai/gpt-5.6-sol as atlas:openai/gpt-5.6-sol."
        ),
        args=ConfigureAtlasArgs,
        result=ConfigureResult,
        handler=configure_atlas_council,
        effects=ADMINISTERS,
        idempotent=True,
    ),
    ToolSpec(
        name="configure_openrouter_council",
        family="catalogs",
        description=(
            "Save the OpenRouter council members, adjudicator and effort to the config file, or the shared "
            "database when there is one (overrides ASK_FABLE_OPENROUTER_COUNCIL / _SYNTHESIZER / _EFFORT)."
        ),
        args=ConfigureOpenRouterArgs,
        result=ConfigureResult,
        handler=configure_openrouter_council,
        effects=ADMINISTERS,
        idempotent=True,
    ),
]
