"""Saved answer Markdown and session transcripts."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ask_fable.config import load_settings
from ask_fable.stores.answers import (
    ANSWER_NAME_RE,
    TRANSCRIPT_NAME_RE,
    DatabaseArchive,
    MarkdownArchive,
    archive_for,
    save_answer,
    save_transcript,
    slugify,
)
from ask_fable.stores.records import SavedAnswer, StoredSessionTurn, Transcript
from tests.conftest import StoreBackend


def test_save_answer_writes_markdown_with_our_name_shape() -> None:
    settings = load_settings()
    path = save_answer(settings, "ask_glm", "Why is the cache slow?", "Because of X.",
                       meta={"trace_id": "abc", "models": ["glm-5.2"], "skip": None})
    assert path.parent == settings.answers_dir
    assert ANSWER_NAME_RE.fullmatch(path.name) and path.name.endswith("-ask_glm-why-is-the-cache-slow.md")
    text = path.read_text()
    assert "## Question\n\nWhy is the cache slow?" in text and "## Answer\n\nBecause of X." in text
    assert "- **trace_id**: abc" in text and "- **models**: glm-5.2" in text and "skip" not in text
    assert "## Thinking" not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_thinking_section_only_when_present() -> None:
    settings = load_settings()
    path = save_answer(settings, "ask", "q?", "a", thinking="first I considered")
    assert "## Thinking\n\nfirst I considered" in path.read_text()
    assert "## Thinking" not in save_answer(settings, "ask", "q?", "a", thinking="  ").read_text()


def test_same_instant_same_question_does_not_overwrite() -> None:
    settings = load_settings()
    paths = {save_answer(settings, "ask", "same", str(i)) for i in range(5)}
    assert len(paths) == 5


def test_max_answers_prunes_only_our_files() -> None:
    settings = load_settings(max_answers=2)
    settings.answers_dir.mkdir(parents=True)
    foreign = settings.answers_dir / "my-notes.md"
    foreign.write_text("keep me")
    os.utime(foreign, (0, 0))
    written = [save_answer(settings, "ask", f"question {i}", "a") for i in range(4)]
    left = sorted(p.name for p in settings.answers_dir.iterdir())
    assert left == sorted([written[2].name, written[3].name, "my-notes.md"])


def test_saved_answer_is_redacted() -> None:
    settings = load_settings(deepseek_api_key="ds-exact-secret-5555")
    path = save_answer(settings, "ask_deepseek", "key ds-exact-secret-5555?", "use AKIAIOSFODNN7EXAMPLE",
                       thinking="Authorization: Bearer abc123def456")
    text = path.read_text()
    assert "ds-exact-secret-5555" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    assert "abc123def456" not in text


def test_slugify() -> None:
    assert slugify("Why is  X -- slow?!") == "why-is-x-slow"
    assert slugify("¿¿??") == "answer"
    assert len(slugify("word " * 50)) <= 48


def test_transcript_dump_and_retention() -> None:
    settings = load_settings(max_sessions=1)
    turns = [
        StoredSessionTurn(namespace="fable", session="default", number=1, question="q1", prompt="q1",
                          answer="a1", thinking="t1", model="claude-fable-5-1", ts=1_780_000_000.0),
        StoredSessionTurn(namespace="fable", session="default", number=2, question="q2", prompt="q2",
                          answer="a2", ts=1_780_000_060.0),
    ]
    first = save_transcript(settings, "default", turns)
    assert first.parent == settings.sessions_dir and TRANSCRIPT_NAME_RE.fullmatch(first.name)
    assert re.fullmatch(r"default-\d{8}T\d{12}Z\.md", first.name)
    text = first.read_text()
    assert "## Turn 1 (claude-fable-5-1)" in text and "### Thinking\n\nt1" in text
    assert "## Turn 2" in text and text.count("### Thinking") == 1
    assert stat.S_IMODE(first.stat().st_mode) == 0o600
    second = save_transcript(settings, "other", turns[:1], "opus5")
    assert re.fullmatch(r"opus5-other-\d{8}T\d{12}Z\.md", second.name)
    assert [p.name for p in settings.sessions_dir.iterdir()] == [second.name]
    assert save_transcript(settings, "retry-storm/1", turns).name.startswith("retry-storm%2F1-")
    assert save_transcript(settings, "../up", turns).name.startswith("%2E.%2Fup-")
    assert save_transcript(settings, "é" * 200, turns).name.startswith("é" * 75 + "-")
    for stranger in ("notes.md", "opus5-notes.md", "my-plan-2026.md", "my-plan-20261202T085300123456Z.txt"):
        assert not TRANSCRIPT_NAME_RE.fullmatch(stranger)


def _kept(archive: MarkdownArchive | DatabaseArchive, tenant: str, location: str) -> str | None:
    if isinstance(archive, DatabaseArchive):
        return archive.read(tenant, location)
    path = Path(location)
    return path.read_text() if path.exists() else None


def test_the_archive_keeps_redacted_markdown_where_it_says_and_prunes_each_tenant(
        store_backend: StoreBackend) -> None:
    settings = load_settings(max_answers=2, max_sessions=1, deepseek_api_key="ds-exact-secret-5555")
    archive = archive_for(settings, engines=store_backend.engines)
    first = archive.save_answer(SavedAnswer(tool="ask_glm", question="first?", answer="a1"))
    kept = [archive.save_answer(SavedAnswer(tool="ask_glm", question=f"q{i}", answer=f"a{i}"))
            for i in (2, 3)]
    other = archive.save_answer(SavedAnswer(tenant="bob", tool="ask_glm", question="bob asks", answer="b"))
    assert _kept(archive, "local", first) is None  # pruned: two answers kept per tenant
    assert all("## Answer" in (_kept(archive, "local", where) or "") for where in kept)
    assert "bob asks" in (_kept(archive, "bob", other) or "")
    turns = [StoredSessionTurn(namespace="fable", session="default", number=1, question="q", prompt="q",
                               answer="a", ts=1_780_000_000.0)]
    dump = archive.save_transcript(Transcript(key="default", turns=turns))
    body = _kept(archive, "local", dump) or ""
    assert "# Session default" in body and "### Question" in body
    if store_backend.name == "postgres":
        assert first.startswith("postgresql:answers/") and dump.startswith("postgresql:transcripts/")
        assert not settings.answers_dir.exists() and not settings.sessions_dir.exists()
        secret = archive.save_answer(SavedAnswer(tool="ask_glm", question="ds-exact-secret-5555", answer="x"))
        assert "ds-exact-secret-5555" not in (_kept(archive, "local", secret) or "x")


def test_other_models_transcripts_are_named_by_model_and_pruned_with_the_rest() -> None:
    settings = load_settings(max_sessions=2)
    turns = [StoredSessionTurn(namespace="deepseek", session="k", number=1, question="q1", prompt="q1",
                               answer="a1", ts=1_780_000_000.0)]
    names = [save_transcript(settings, "k", turns, namespace).name
             for namespace in ("openrouter:openai/gpt-5.6-sol", "deepseek", "ollama:qwen3:32b")]
    assert re.fullmatch(r"openrouter_openai_gpt_5\.6_sol\+k-\d{8}T\d{12}Z\.md", names[0])
    assert names[1].startswith("deepseek+k-") and names[2].startswith("ollama_qwen3_32b+k-")
    assert sorted(p.name for p in settings.sessions_dir.iterdir()) == sorted(names[1:])
