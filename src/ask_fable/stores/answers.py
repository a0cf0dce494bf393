"""Saved answer Markdown and session transcript dumps: redacted, atomic, ``0600``, pruned.

Retention only ever deletes files of our own name shapes, because the default directories are
shared by every agent of the user:

- answers: ``<UTC timestamp>-<tool>-<slug>.md`` (``20261202T085300123456Z-ask_glm-why-is-x.md``)
- transcripts: ``<key>-<UTC timestamp>.md`` for Fable (``default-20261202T085300123456Z.md``),
  ``opus5-<key>-<UTC timestamp>.md`` for Opus 5 and ``<model>+<key>-<UTC timestamp>.md`` for every
  other model (``deepseek+default-…``, ``openrouter_openai_gpt_5.6_sol+default-…``). Keys keep
  letters, digits, ``.`` and ``_`` and models lower-case letters, digits, ``.`` and ``_`` (anything
  else becomes ``_``), so neither contains ``-`` or ``+`` and the model cannot be faked.

Each tenant keeps its files apart: the local tenant's in those directories, every other tenant's
in ``tenants/<tenant>/`` beneath them, each pruned on its own (one tenant's answers never push out
another's).

With ``database_url`` set there are no files: :class:`DatabaseArchive` keeps the same Markdown in the
``documents`` table of PostgreSQL, pruned per tenant and kind the same way, and a save returns
``postgresql:answers/<id>`` (or ``postgresql:transcripts/<id>``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, delete, insert, select

from ask_fable.access import LOCAL_TENANT, one_tenant, validate_tenant
from ask_fable.files import atomic_write_text, ensure_private_dir, prune_own_files
from ask_fable.redact import redact, secret_list
from ask_fable.stores.db import Database, database_for
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import SavedAnswer, StoredSessionTurn, Transcript
from ask_fable.stores.tables import documents

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ask_fable.config import Settings

_MINE = (documents.c.tenant == bindparam("tenant"), documents.c.kind == bindparam("kind"))
# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_ADD_DOCUMENT = insert(documents).returning(documents.c.id)
_PRUNE = delete(documents).where(*_MINE, documents.c.id.not_in(
    select(documents.c.id).where(*_MINE).order_by(documents.c.id.desc()).limit(bindparam("cap"))))
_BODY_OF = select(documents.c.body).where(documents.c.id == bindparam("id"), *_MINE)

_TS_FORMAT = "%Y%m%dT%H%M%S%fZ"
_TS_RE = r"\d{8}T\d{12}Z"
ANSWER_NAME_RE = re.compile(rf"{_TS_RE}-[a-z0-9_]{{1,64}}-[a-z0-9-]{{1,60}}(?:-\d+)?\.md")
TRANSCRIPT_NAME_RE = re.compile(
    rf"(?:opus5-|[a-z0-9._]{{1,80}}\+)?[^/\\\x00-\x1f\x7f]{{1,150}}-{_TS_RE}(?:-\d+)?\.md"
)


def _stamp() -> str:
    return datetime.now(UTC).strftime(_TS_FORMAT)


def slugify(text: str, max_chars: int = 48) -> str:
    """Lowercase ASCII words joined by ``-`` (``answer`` when nothing is left)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > max_chars:
            break
        slug = candidate
    return slug or (words[0][:max_chars] if words else "answer")


def _safe_tool(tool: str) -> str:
    cleaned = re.sub(r"[^a-z0-9_]+", "_", tool.lower()).strip("_")
    return cleaned[:64] or "tool"


#: What a file name cannot hold (a path separator, ``%`` itself, control characters).
_UNSAFE_IN_NAME = re.compile(r"[%/\\\x00-\x1f\x7f]")
#: Bytes of a session key kept in a transcript's file name (names hold at most 255).
_KEY_NAME_BYTES = 150


def file_key(key: str) -> str:
    """``key`` as it stands in a transcript's file name: unchanged, except that ``/``, ``\\``, ``%``,
    control characters and a leading ``.`` are written ``%XX``, and a key longer than 150 bytes is cut."""
    escaped = _UNSAFE_IN_NAME.sub(lambda found: f"%{ord(found.group()):02X}", key)
    if escaped.startswith("."):
        escaped = "%2E" + escaped[1:]
    cut = escaped.encode("utf-8")[:_KEY_NAME_BYTES].decode("utf-8", "ignore")
    return cut or "session"


def tenant_dir(base: Path | str, tenant: str) -> Path:
    """Where ``tenant``'s files live under ``base``: ``base`` itself for the local tenant."""
    base = Path(base)
    if tenant == LOCAL_TENANT:
        return base
    return base / "tenants" / validate_tenant(one_tenant(tenant))


def transcript_prefix(namespace: str) -> str:
    """The file-name prefix of a model's transcripts: none for Fable, ``opus5-`` for Opus 5,
    ``<model>+`` for the others."""
    if namespace in ("fable", "opus5"):
        return "" if namespace == "fable" else "opus5-"
    cleaned = re.sub(r"[^a-z0-9._]+", "_", namespace.lower()).strip("._")
    return f"{cleaned[:80] or 'model'}+"


def _free_path(directory: Path, stem: str) -> Path:
    """``<stem>.md`` or ``<stem>-N.md``, whichever does not exist yet."""
    candidate = directory / f"{stem}.md"
    n = 2
    while candidate.exists():
        candidate = directory / f"{stem}-{n}.md"
        n += 1
    return candidate


def _meta_lines(meta: dict[str, Any]) -> list[str]:
    lines = []
    for key, value in meta.items():
        if value is None or value == "" or value == []:
            continue
        shown = ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
        lines.append(f"- **{key}**: {shown.replace(chr(10), ' ')}")
    return lines


#: Meta keys always rendered as their own section rather than a ``- **key**: value`` line.
SECTION_META = frozenset({"transcript"})


def _split_meta(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Meta values for the header list, and multi-line text (a debate transcript) for sections."""
    lines: dict[str, Any] = {}
    sections: dict[str, str] = {}
    for key, value in meta.items():
        if value is None:
            continue
        if isinstance(value, str) and (key in SECTION_META or "\n" in value.strip()):
            if value.strip():
                sections[key] = value
            continue
        lines[key] = value
    return lines, sections


def _nest_headings(text: str) -> str:
    """Demote Markdown headings (outside code fences) so they sit under a ``##`` section."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,4} ", line):
            line = "##" + line
        out.append(line)
    return "\n".join(out)


def render_answer(
    settings: Settings,
    tool: str,
    question: str,
    answer: str,
    thinking: str | None = None,
    meta: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """One answer as a name stem and redacted Markdown.

    A ``## Thinking`` section appears only when ``thinking`` is non-empty; ``meta`` values that are
    ``None`` are dropped, and a ``transcript`` (or any multi-line text) gets its own section after
    the answer instead of a header line.
    """
    # The name is built from the redacted question: a key in the question must not become a file name.
    secrets = secret_list(settings)
    stem = f"{_stamp()}-{_safe_tool(tool)}-{slugify(redact(question, secrets))}"
    title = " ".join(question.split())[:80]
    lines_meta, sections = _split_meta(dict(meta or {}))
    parts = [f"# {tool}: {title}", "", f"- **saved**: {datetime.now(UTC).isoformat(timespec='seconds')}"]
    parts += _meta_lines(lines_meta)
    parts += ["", "## Question", "", question.rstrip(), "", "## Answer", "", answer.rstrip(), ""]
    if thinking and thinking.strip():
        parts += ["## Thinking", "", thinking.rstrip(), ""]
    for name, text in sections.items():
        parts += [f"## {name.replace('_', ' ').capitalize()}", "", _nest_headings(text.rstrip()), ""]
    return stem, redact("\n".join(parts), secrets)


def save_answer(
    settings: Settings,
    tool: str,
    question: str,
    answer: str,
    thinking: str | None = None,
    meta: dict[str, Any] | None = None,
    tenant: str = LOCAL_TENANT,
) -> Path:
    """Write one answer as Markdown (:func:`render_answer`) under ``settings.answers_dir`` (the
    tenant's part of it); returns its path.

    Older files of our own name shape beyond ``settings.max_answers`` (0 = unlimited) are pruned.
    """
    directory = ensure_private_dir(tenant_dir(settings.answers_dir, tenant))
    stem, text = render_answer(settings, tool, question, answer, thinking, meta)
    path = _free_path(directory, stem)
    atomic_write_text(path, text)
    prune_own_files(directory, ANSWER_NAME_RE, int(getattr(settings, "max_answers", 0) or 0))
    return path


def render_transcript(settings: Settings, key: str, turns: Sequence[StoredSessionTurn],
                      namespace: str = "fable") -> tuple[str, str]:
    """A session's turns as a name stem and redacted Markdown.

    ``namespace`` is the model's conversation space: ``fable`` stems are ``<key>-<ts>``, ``opus5``
    ones ``opus5-<key>-<ts>``, the others' ``<model>+<key>-<ts>``.
    """
    secrets = secret_list(settings)
    stem = f"{transcript_prefix(namespace)}{file_key(redact(key, secrets))}-{_stamp()}"
    parts = [f"# Session {key}", "", f"- **saved**: {datetime.now(UTC).isoformat(timespec='seconds')}",
             f"- **turns**: {len(turns)}", ""]
    for number, turn in enumerate(turns, start=1):
        header = f"## Turn {number}"
        if turn.model:
            header += f" ({turn.model})"
        parts += [header, ""]
        at = datetime.fromtimestamp(turn.ts, UTC).isoformat(timespec="seconds")
        parts += [f"- **at**: {at}", ""]
        parts += ["### Question", "", turn.question.rstrip(), ""]
        parts += ["### Answer", "", turn.answer.rstrip(), ""]
        if turn.thinking and turn.thinking.strip():
            parts += ["### Thinking", "", turn.thinking.rstrip(), ""]
    return stem, redact("\n".join(parts), secrets)


def save_transcript(settings: Settings, key: str, turns: Sequence[StoredSessionTurn],
                    namespace: str = "fable", tenant: str = LOCAL_TENANT) -> Path:
    """Dump a session's turns (:func:`render_transcript`) to ``settings.sessions_dir/<stem>.md`` (the
    tenant's part of it); returns its path.

    Older dumps of our own name shapes beyond ``settings.max_sessions`` (0 = unlimited) are pruned.
    """
    directory = ensure_private_dir(tenant_dir(settings.sessions_dir, tenant))
    stem, text = render_transcript(settings, key, turns, namespace)
    path = _free_path(directory, stem)
    atomic_write_text(path, text)
    prune_own_files(directory, TRANSCRIPT_NAME_RE, int(getattr(settings, "max_sessions", 0) or 0))
    return path


class MarkdownArchive:
    """The ``AnswerArchive`` of the embedded setup: Markdown files under the configured directories."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def save_answer(self, answer: SavedAnswer) -> str:
        """Write ``answer`` as Markdown (see :func:`save_answer`); returns its path."""
        meta = {"trace_id": answer.trace_id, "model": answer.model, "transcript": answer.transcript}
        path = save_answer(self.settings, answer.tool, answer.question, answer.answer, answer.thinking, meta,
                           tenant=answer.tenant)
        return str(path)

    def save_transcript(self, transcript: Transcript) -> str:
        """Write a session's turns as Markdown (see :func:`save_transcript`); returns its path."""
        return str(save_transcript(self.settings, transcript.key, transcript.turns, transcript.namespace,
                                   tenant=transcript.tenant))


class DatabaseArchive:
    """The ``AnswerArchive`` of a shared database: the same Markdown, one row of ``documents`` each."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db

    def _keep(self, tenant: str, kind: str, name: str, body: str, cap: int) -> str:
        one_tenant(tenant)
        now = time.time()

        def keep(conn: Connection) -> int:
            doc_id = int(conn.execute(_ADD_DOCUMENT, {"tenant": tenant, "kind": kind, "name": name,
                                                      "body": body, "created_at": now}).scalar_one())
            if cap > 0:
                # Two replicas trimming one tenant's oldest documents at once may lock them in
                # different orders: run_write runs the loser again.
                conn.execute(_PRUNE, {"tenant": tenant, "kind": kind, "cap": cap})
            return doc_id

        return f"postgresql:{kind}/{self.db.run_write(keep)}"

    def save_answer(self, answer: SavedAnswer) -> str:
        """Keep ``answer`` as Markdown (see :func:`render_answer`); returns ``postgresql:answers/<id>``."""
        meta = {"trace_id": answer.trace_id, "model": answer.model, "transcript": answer.transcript}
        name, body = render_answer(self.settings, answer.tool, answer.question, answer.answer,
                                   answer.thinking, meta)
        return self._keep(answer.tenant, "answers", name, body, int(self.settings.max_answers or 0))

    def save_transcript(self, transcript: Transcript) -> str:
        """Keep a session's turns as Markdown; returns ``postgresql:transcripts/<id>``."""
        name, body = render_transcript(self.settings, transcript.key, transcript.turns, transcript.namespace)
        return self._keep(transcript.tenant, "transcripts", name, body, int(self.settings.max_sessions or 0))

    def read(self, tenant: str, location: str) -> str | None:
        """The Markdown kept at ``location`` (as a save returned it) for ``tenant``, or ``None``."""
        kind, _, number = location.removeprefix("postgresql:").partition("/")
        if not number.isdigit():
            return None
        with self.db.read() as conn:
            body = conn.scalar(_BODY_OF, {"id": int(number), "kind": kind, "tenant": one_tenant(tenant)})
        return None if body is None else str(body)


def archive_for(settings: Settings, *,
                engines: Engines | None = None) -> MarkdownArchive | DatabaseArchive:
    """The answer archive configured by ``settings``: Markdown files, or PostgreSQL rows when
    ``database_url`` is set."""
    if settings.database_url:
        return DatabaseArchive(settings, database_for(settings, "answers", None, engines=engines))
    return MarkdownArchive(settings)
