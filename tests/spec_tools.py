"""The tool names the contract defines, grouped by family (the anti-drift reference)."""

SPEC_TOOLS: dict[str, list[str]] = {
    "core": ["ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help", "reset_session"],
    "single": [
        "ask_opus5",
        "ask_m3",
        "ask_glm",
        "ask_deepseek",
        "ask_gemini",
        "ask_codex",
        "ask_grok",
        "ask_kimi",
        "ask_atlas",
        "ask_openrouter",
        "ask_ollama",
    ],
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
