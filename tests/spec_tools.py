"""The tool names the contract defines, grouped by family (the anti-drift reference).

The one-model tools (family ``single``) are the built-in backends' own: each descriptor in
``backends/builtin.py`` names its tool, so they are read from there rather than listed again.
"""

from ask_fable.backends.builtin import BUILTIN

#: The one-model tools of the built-in backends, in registration order.
BACKEND_TOOLS: list[str] = [backend.tool.name for backend in BUILTIN if backend.tool is not None]

SPEC_TOOLS: dict[str, list[str]] = {
    "core": ["ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help", "reset_session"],
    "single": BACKEND_TOOLS,
    "councils": ["ask_ollama_council", "ask_atlas_council", "ask_openrouter_council"],
    "catalogs": [
        "list_atlas_models",
        "list_openrouter_models",
        "list_ollama_models",
        "configure_ollama_council",
        "configure_atlas_council",
        "configure_openrouter_council",
        "configure_tracing",
    ],
    "context": ["context_write", "context_read", "context_list", "context_delete", "context_pack"],
    "observability": ["stats", "trace_list", "trace_get", "diagnose", "key_usage"],
    "hub": ["session_list", "session_peek", "session_stats"],
}

ALL_SPEC_TOOLS: list[str] = [name for names in SPEC_TOOLS.values() for name in names]
