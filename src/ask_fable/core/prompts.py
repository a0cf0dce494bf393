"""The text every model is given: the scope contract, the sidecar request, and the user prompt."""

from __future__ import annotations

SCOPE_CONTRACT = """\
You are a senior software engineer consulted by a coding agent on a hard engineering question.
Answer engineering questions of any breadth: debugging, design, architecture, performance,
concurrency, data models, APIs, migrations, security-related code, and open conceptual or
brainstorming questions with no code at all. Be concrete: name the cause, the fix, the trade-off.
Decline only when the question itself directly asks for offensive-security work (exploit
development, attack tooling, malware) or for knowledge outside software (for example biology).
In that case reply with exactly one line: `REFUSED: <short reason>` and nothing else."""

SIDECAR_INSTRUCTION = """\
End every answer with a fenced block tagged `sidecar` holding one JSON object:
```sidecar
{"recommendation": "apply|investigate|reject|needs_more_context",
 "confidence": "high|medium|low", "needs_context": []}
```
- recommendation: `apply` when the agent can act on your answer now, `investigate` when it must check
  something first, `reject` when the proposed approach should be dropped, `needs_more_context` when
  you cannot answer well without more material.
- needs_context: the exact files, functions, logs or facts you still need (empty when none)."""

BASE_SYSTEM = f"{SCOPE_CONTRACT}\n\n{SIDECAR_INSTRUCTION}"


def system_prompt(role_instructions: str = "") -> str:
    """The base system prompt, optionally followed by a mode's role instructions."""
    return f"{BASE_SYSTEM}\n\n{role_instructions.strip()}" if role_instructions.strip() else BASE_SYSTEM


def user_prompt(question: str, context: str = "") -> str:
    """The question with its context, clearly delimited so pasted material is not read as instructions."""
    if not context.strip():
        return f"## Question\n{question.strip()}"
    return f"## Context\n<context>\n{context.rstrip()}\n</context>\n\n## Question\n{question.strip()}"
