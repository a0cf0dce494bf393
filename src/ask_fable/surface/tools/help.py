"""``ask_fable_help``: the server's manual on demand — local, instant, no model call.

The tool list is what this server serves; every other tool is named with the toolset that
brings it and the exact start option that adds it, so a client never calls a tool it was told
about and gets ``unknown_tool``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.access import READS, scope_allows
from ask_fable.contract import DataResult, Strict
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import FAMILIES, ToolSpec, all_tools, family_about
from ask_fable.surface.toolsets import toolsets_adding

if TYPE_CHECKING:
    from ask_fable.config import Settings

_WIDTH = 100

Topic = Literal[
    "all", "tools", "modes", "tokens", "context", "refusals", "councils", "sidecar", "tracing", "config"
]

def tokens_topic() -> str:
    """The model tokens, group and tiers of the registered backends."""
    from ask_fable.core.tokens import tiers_text, tokens_text

    return textwrap.fill(
        f"Model tokens (ask's `model`, councils, chains, debates): {tokens_text()}. The group `twin` (twins, "
        "twin flames, twin-flame, twin_flames) means fable + opus and is accepted wherever a list is taken, "
        f"never in a single slot. Tiers: {tiers_text()}.",
        _WIDTH,
    )


def config_topic() -> str:
    """Where settings come from, and what the registered backends need."""
    from ask_fable.backends.registry import registered

    backends = registered()
    keys = ", ".join(b.key_vars[0] for b in backends if b.transport == "http" and b.key_vars)
    logins = ", ".join(b.binary for b in backends if b.transport == "cli" and b.binary)
    claude = " and ".join(b.label for b in backends if b.transport == "claude")
    return textwrap.fill(
        "Settings come from the config file (ASK_FABLE_CONFIG_FILE, default "
        "~/.config/ask_fable/config.json), then ASK_FABLE_* environment variables, then defaults. "
        f"Keys for HTTP backends: {keys}. CLI backends reuse their own logins ({logins}). {claude} "
        "reuse Claude Code's login. A missing or rejected key and a logged-out CLI are status error, kind "
        "not_configured, with `hint` naming the fix; they never trip the circuit breaker, whose "
        "circuit_open results carry retry_after_s, as do quota_exceeded results (a team server key "
        "over its calls per minute, calls at once or daily budget; no model was called). A value that "
        "cannot be used (a word where a number belongs, a file that is not valid JSON, an unknown key) "
        "never stops the server: it falls back to the next source or the default, and the problem is "
        "named at start (stderr, the server instructions), in `ask-fable doctor`, and in the `warnings` "
        "of each call that reads that setting. `ask-fable doctor` (or the diagnose tool) shows each "
        "backend's state and the step that enables it.",
        _WIDTH,
    )


#: Each topic's text, or the function that writes it from the registered backends.
TOPICS: dict[str, str | Callable[[], str]] = {
    "modes": """\
Four ways to reason, cheapest first:
- ask: one model with memory: Fable, or any one model with `model` (a token below: opus5, deepseek,
  m3, openrouter:<id>…), no restart needed. Each model keeps its own conversations: reuse `session`
  for follow-ups; `reset=true` or reset_session(session, model) starts over. Conversations are
  stored, so they survive a restart; one that outgrows the model's context window leaves its oldest
  turns out, with a `note`. ask_opus5 is ask(model="opus5"); ask_deepseek and the other one-model
  tools (toolset `single`) answer one question without memory.
- ask_council: several models answer at once, a synthesizer reconciles them. Check `quorum`
  (answered/asked), `degraded` and `consensus` (strong|partial|divergent|unknown) before trusting it.
  Once a quorum answered (half of those able to), members still running after twice the slowest
  answer's time (ASK_FABLE_COUNCIL_STRAGGLER_FACTOR, at least ASK_FABLE_COUNCIL_STRAGGLER_FLOOR s)
  are cut: status straggler in `sources`. ASK_FABLE_COUNCIL_CUT_STRAGGLERS=0 waits for everyone.
- ask_chain: an ordered pipeline ("m3 > glm > fable"): the first stage drafts, middle stages critique,
  the last decides. `recommendation_drift` shows whether later stages changed their minds.
- ask_debate: a proposer states claims, an opponent contests each, the proposer revises, a third model
  rules. The most expensive mode: keep it for contentious, hard-to-reverse decisions.""",
    "tokens": tokens_topic,
    "context": """\
Store large material once with context_write(key, value, description) — or context_pack(key, paths)
to bundle files under ASK_FABLE_PROJECT_ROOT — then pass context_ref=<key> (or a list) to any ask
tool or mode. Results echo context_ref_resolved / context_ref_missing; if every key is missing and no
other context was given, the result is status needs_context with did_you_mean and no model is called.
context_list shows what is stored (metadata only); context_read and context_delete do the rest.
These tools come with the `context` toolset (--toolsets default,context).""",
    "refusals": """\
The guard refuses before any model call when a question is empty, shorter than ASK_FABLE_MIN_LEN or
longer than ASK_FABLE_MAX_LEN, contains a term of ASK_FABLE_DENYLIST_FILE, or asks to produce harm:
malware or attack tooling, a working exploit, evading security tools, getting into someone else's
account or system, knocking someone else's service offline, covert monitoring or locating of a
person, fraud (impersonation, cloned voices, stolen cards, someone's phone number, fake accounts or
reviews), piracy for sharing or sale, harassment, extortion, crimes outside software, self-harm,
sexual content with minors, extremist or dehumanizing material, or biological, chemical or weapons
harm.
The refusal's `rule` names which, `reason` says why and `how_to_reframe` gives advice for that
rule. It judges what is asked and for whom, not words:
"Build detection for reverse shell connections", "Create a rule to block ransomware", "exploit
cache locality" and "kill the child process" all pass. Ask how to detect, block, analyse, fix,
harden or test your own code. A benign phrase of yours that is still refused can be set aside with
ASK_FABLE_ALLOWLIST_FILE. When the server sets ASK_FABLE_GUARD_MODEL, a safety model also classifies
each question the guard passed: its refusal has rule guard_model (or the guard rule it named), and
when it cannot answer the question is refused with kind guard_unavailable (or, if the operator
chose so, let through with a warning). A model may also answer `REFUSED: <reason>`, which comes back
as status refused, stage model. Reframe around the engineering decision in front of you.""",
    "councils": """\
Provider councils: ask_ollama_council (Ollama Cloud models), ask_atlas_council and
ask_openrouter_council (one key, many labs; adjudicated by the synthesizer given or configured,
else by the local codex CLI, then the provider's GPT model, then Fable). Pick members with
list_ollama_models / list_atlas_models(task=...) / list_openrouter_models(task=...), then persist
them with configure_ollama_council, configure_atlas_council or configure_openrouter_council
(written to the config file, which overrides environment variables). Toolsets: `councils` for
the councils, `catalogs` for the list_* and configure_* tools.""",
    "sidecar": """\
Every answer ends with a machine-readable sidecar: {recommendation: apply|investigate|reject|
needs_more_context, confidence: high|medium|low, needs_context: [...]} (null when the model gave
none). When the model needs more, `followup` lists what to paste, how, and what is likely already
there. After ASK_FABLE_MAX_NEEDS_CONTEXT consecutive requests for more on one session, ask returns
status context_exhausted with its best-effort answer. Other fields an answer may carry: `cached` with
`cache_age_s` (a repeat served from the cache), `routed_via` (a provider's model served by a local
CLI), `thinking` (a reasoning excerpt, when ASK_FABLE_RETURN_THINKING is on), `cost_source`
(reported | estimated | mixed | unknown: how `cost_usd`, the sum over every model call, was priced)
and `estimate` (given estimate=true: each planned model call's cost at a typical answer and at its
max_tokens, and the totals; no model is called). max_cost_usd (dollars, 0: no cap) refuses a call
whose estimate at max_tokens is higher, before any request (a council first drops its last members).""",
    "tracing": """\
Every call returns a trace_id. trace_list(limit, tool, status, provider, session, project, before)
finds calls; trace_get(trace_id, include_content, max_chars) shows the ordered timeline. Safe mode
(default) stores metadata only; configure_tracing(trace_mode="full") also stores redacted, size-capped
content bundles and saves answers. stats(window, by) aggregates the audit log; diagnose shows which
backends are configured and how to enable the rest. trace_list, trace_get, stats and diagnose come
with the `observability` toolset; the trace_id of any result, help and errors included, is there.""",
    "config": config_topic,
}


def topic_text(name: str) -> str:
    """One topic's text as it reads now."""
    text = TOPICS[name]
    return text() if callable(text) else text


class HelpArgs(BaseModel):
    """Arguments of ask_fable_help."""

    model_config = ConfigDict(extra="forbid")

    topic: Topic = Field("all", description="One topic, or all of them.")


class OtherToolset(Strict):
    """A toolset this server does not serve: its tools and the start option that adds it."""

    toolset: str
    about: str
    tools: list[str]
    flag: str = Field(description="the --toolsets option that serves these tools as well")
    env: str = Field(description="the same choice as an environment variable")


class HelpResult(DataResult):
    """The manual text, the tools this server serves, and the toolsets that bring the others."""

    topic: str | None = None
    text: str | None = None
    topics: list[str] | None = None
    tools: dict[str, list[str]] | None = Field(None, description="the served tools by toolset")
    other_toolsets: list[OtherToolset] | None = None


#: Which tools the caller may call (all, without a key).
MayCall = Callable[[ToolSpec], bool]


def _any_tool(spec: ToolSpec) -> bool:
    return True


def tool_inventory(
    families: list[str] | None = None, settings: Settings | None = None, may_call: MayCall = _any_tool
) -> dict[str, list[str]]:
    """Tools by family (only ``families`` when given, only those ``may_call`` allows), one
    ``name — first description line`` each."""
    inventory: dict[str, list[str]] = {family: [] for family in FAMILIES}
    for spec in all_tools():
        if (families is None or spec.family in families) and may_call(spec):
            inventory[spec.family].append(f"{spec.name} — {spec.describe(settings).splitlines()[0]}")
    return {family: lines for family, lines in inventory.items() if lines}


def other_toolsets(served: list[str], may_call: MayCall = _any_tool) -> list[OtherToolset]:
    """Each family not served that holds a tool ``may_call`` allows, with those tools and the exact
    option that adds it."""
    others: list[OtherToolset] = []
    for family in FAMILIES:
        about = family_about(family)
        tools = [spec.name for spec in all_tools() if spec.family == family and may_call(spec)]
        if family in served or not tools:
            continue
        value = toolsets_adding(served, family)
        others.append(OtherToolset(toolset=family, about=about, tools=tools,
                                   flag=f"--toolsets {value}", env=f"ASK_FABLE_TOOLSETS={value}"))
    return others


def tools_text(served: list[str], others: list[OtherToolset], may_call: MayCall = _any_tool,
               scope: str | None = None) -> str:
    """The tools section: what is served (to a key of ``scope``: what it may call), then where every
    other tool comes from."""
    names = [spec.name for spec in all_tools() if spec.family in served and may_call(spec)]
    lines = [f"This server serves {len(names)} tools (toolsets: {', '.join(served)}): {', '.join(names)}."]
    if scope is not None:
        lines[0] = (f"Your key's scope ({scope}) lets you call {len(names)} of the tools this server serves "
                    f"(toolsets: {', '.join(served)}): {', '.join(names)}. The others need a stronger key.")
    if others:
        reach = "ask(model=…) reaches any one model from here. " if "ask" in names else ""
        lines.append(f"{reach}Other tools are not served here; calling one returns unknown_tool. Restart the "
                     "server with their toolset added (or use --toolsets all):")
        lines += [f"- {o.toolset} ({o.about}): {', '.join(o.tools)} → {o.flag} or {o.env}" for o in others]
    return "\n".join(lines)


async def ask_fable_help(args: HelpArgs, ctx: ToolContext) -> HelpResult:
    """Return one topic of the manual (or all); ``tools``/``all`` also list what is served and what is not."""
    served = ctx.served if ctx.served is not None else list(FAMILIES)
    key = ctx.api_key

    def may_call(spec: ToolSpec) -> bool:
        return key is None or scope_allows(key.scope, spec.scope)
    names = [] if args.topic == "tools" else list(TOPICS) if args.topic == "all" else [args.topic]
    sections = [f"## {name}\n{topic_text(name)}" for name in names]
    result = HelpResult(status="ok", topic=args.topic, topics=["all", "tools", *TOPICS])
    if args.topic in ("all", "tools"):
        others = other_toolsets(served, may_call)
        scope = None if key is None else key.scope
        sections.insert(0, f"## tools\n{tools_text(served, others, may_call, scope)}")
        result.tools = tool_inventory(served, ctx.settings, may_call)
        result.other_toolsets = others
    result.text = "\n\n".join(sections)
    if ctx.serving_problems:
        result.warnings = [problem.message() for problem in ctx.serving_problems]
    return result


TOOLS = [
    ToolSpec(
        name="ask_fable_help",
        family="core",
        description="The manual: modes, model tokens, context bus, refusals, councils, tracing, "
        "settings, the tools this server serves and the toolset that adds each other tool. Local and free.",
        args=HelpArgs,
        result=HelpResult,
        handler=ask_fable_help,
        effects=READS,
        idempotent=True,
    ),
]
