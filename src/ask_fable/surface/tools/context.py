"""The context bus tools: write, read, list, delete and pack named context for ``context_ref``.

The bus is the SQLite store at ``ASK_FABLE_CONTEXT_PATH``, shared by every server process of
the user; each tenant has its own entries (one team-wide bus with ``ASK_FABLE_SHARED_CONTEXT``),
and an admin may name another tenant's. Values are redacted before they are stored.
``context_pack`` reads files under ``ASK_FABLE_PROJECT_ROOT`` (see
:mod:`ask_fable.core.context_pack`) and stores the bundle under its key, so the next ask can pass
``context_ref`` at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from pydantic import Field

from ask_fable.access import READS, WRITES
from ask_fable.contract import DataResult
from ask_fable.core.context_pack import PackedFile, SkippedPath
from ask_fable.stores.interfaces import ContextBus
from ask_fable.stores.views import ContextListed
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import TENANT, Args

if TYPE_CHECKING:
    from ask_fable.stores.interfaces import ContextBus

KEY = Field(description="The context key (printable text, at most 200 characters).")
MAX_PACK_SPECS = 1000


class WriteArgs(Args):
    """Arguments of context_write."""

    key: str = KEY
    value: str = Field(description="The text to store (code, a stack trace, notes).")
    description: str = Field("", description="One line saying what this is, shown by context_list.")


class KeyArgs(Args):
    """Arguments of context_read and context_delete."""

    key: str = KEY
    tenant: str | None = TENANT


class ListArgs(Args):
    """Arguments of context_list."""

    tenant: str | None = TENANT


class PackArgs(Args):
    """Arguments of context_pack."""

    key: str = KEY
    paths: list[str] = Field(
        min_length=1,
        max_length=MAX_PACK_SPECS,
        description="Files relative to ASK_FABLE_PROJECT_ROOT, each optionally with a line range: "
        "\"src/app.py\", \"src/app.py:40-120\", \"src/app.py:40\" (one line), "
        "\"src/app.py:40-\" (to the end).",
    )
    description: str = Field("", description="One line saying what the bundle is (default: its file list).")
    max_chars: int | None = Field(
        None, gt=0, description="Character budget for this bundle (default: ASK_FABLE_PACK_MAX_CHARS)."
    )


class ContextResult(DataResult):
    """The result of every context tool: a key's metadata, its value, a listing or a pack report."""

    tenant: str | None = None
    key: str | None = None
    value: str | None = None
    description: str | None = None
    size_chars: int | None = None
    created_at: float | None = None
    updated_at: float | None = None
    age_s: float | None = None
    existed: bool | None = None
    deleted: bool | None = None
    count: int | None = None
    entries: list[ContextListed] | None = None
    did_you_mean: list[str] | None = None
    root: str | None = None
    files: list[PackedFile] | None = None
    skipped: list[SkippedPath] | None = None
    chars: int | None = None
    max_chars: int | None = None
    note: str | None = None


def _store(ctx: ToolContext) -> ContextBus:
    return ctx.app.context_store


def _tenant(ctx: ToolContext, requested: str | None, *, every: bool = False) -> str:
    """Whose entries a call covers: the caller's (or the team-wide bus), unless an admin names others."""
    return ctx.context_tenant if requested is None else ctx.caller.view(requested, every=every)


async def context_write(args: WriteArgs, ctx: ToolContext) -> ContextResult:
    """Store ``value`` under ``key`` and return its metadata."""
    store = _store(ctx)
    meta = await ctx.app.run_store(store.write, ctx.context_tenant, args.key, args.value,
                                          args.description)
    return ContextResult(status="ok", **dict(meta),
                         note=f"pass context_ref=\"{args.key}\" to any ask tool to use it")


async def context_read(args: KeyArgs, ctx: ToolContext) -> ContextResult:
    """The value under ``key`` plus its size, age and description; ``not_found`` otherwise."""
    from ask_fable.stores.context import validate_key

    validate_key(args.key)
    tenant = _tenant(ctx, args.tenant)
    store = _store(ctx)
    data = await ctx.app.run_store(store.read, tenant, args.key)
    if data is None:
        suggestions = await ctx.app.run_store(store.suggest, tenant, [args.key])
        return ContextResult(status="error", kind="not_found", key=args.key, did_you_mean=suggestions,
                             detail=f"no context is stored under {args.key!r}",
                             hint="context_list shows the stored keys")
    return ContextResult(status="ok", **dict(data))


async def context_list(args: ListArgs, ctx: ToolContext) -> ContextResult:
    """Every stored key with its metadata, most recently updated first (values are never listed)."""
    store = _store(ctx)
    entries = await ctx.app.run_store(store.list, _tenant(ctx, args.tenant, every=True))
    return ContextResult(status="ok", count=len(entries), entries=entries)


async def context_delete(args: KeyArgs, ctx: ToolContext) -> ContextResult:
    """Delete ``key``; ``existed`` says whether there was anything to delete."""
    tenant = _tenant(ctx, args.tenant)
    store = _store(ctx)
    existed = await ctx.app.run_store(store.delete, tenant, args.key)
    return ContextResult(status="ok", key=args.key, existed=existed, deleted=existed)


def _default_description(files: list[PackedFile]) -> str:
    names = ", ".join(f.path for f in files[:6])
    more = f" and {len(files) - 6} more" if len(files) > 6 else ""
    return f"packed: {names}{more}"


def _root_hint(ctx: ToolContext) -> str:
    """How to set the project root, where the caller is: a command runs again with it; a running
    server applies the config file's at once (its environment only when it starts)."""
    from ask_fable.config import config_file_path

    config = config_file_path()
    if ctx.on_command_line:
        return (f"export ASK_FABLE_PROJECT_ROOT=/path/to/project (or set project_root in {config}), then "
                "run the command again")
    return (f"set project_root in {config}: the running server applies it on the next call, no restart "
            "needed (or export ASK_FABLE_PROJECT_ROOT=/path/to/project where the server starts, and "
            "restart it)")


async def context_pack(args: PackArgs, ctx: ToolContext) -> ContextResult:
    """Bundle files and line ranges under the project root into one context key."""
    from ask_fable.core.context_pack import pack_paths
    from ask_fable.errors import BadArgs, NotConfigured
    from ask_fable.stores.context import validate_key

    validate_key(args.key)
    settings = ctx.settings
    if settings.project_root is None:
        raise NotConfigured(
            "context_pack is disabled: set ASK_FABLE_PROJECT_ROOT to the directory it may read from",
            hint=_root_hint(ctx),
        )
    root = Path(settings.project_root).expanduser()
    if not root.is_dir():
        raise NotConfigured(f"ASK_FABLE_PROJECT_ROOT ({root}) is not a directory")
    budget = args.max_chars or settings.pack_max_chars
    outcome = await anyio.to_thread.run_sync(
        lambda: pack_paths(root, list(args.paths), max_chars=budget, max_files=settings.pack_max_files,
                           max_file_bytes=settings.pack_max_file_bytes)
    )
    shown_root = str(root.resolve())
    if not outcome.files:
        raise BadArgs(
            "nothing was packed: every path was skipped (see skipped); the key was left unchanged",
            key=args.key, root=shown_root, files=[], skipped=[path.wire() for path in outcome.skipped],
            max_chars=budget,
        )
    description = args.description or _default_description(outcome.files)
    store = _store(ctx)
    meta = await ctx.app.run_store(store.write, ctx.context_tenant, args.key, outcome.text,
                                          description)
    note = f"pass context_ref=\"{args.key}\" to any ask tool to use it"
    if outcome.skipped:
        note = f"{len(outcome.skipped)} path(s) were skipped (see skipped); " + note
    return ContextResult(status="ok", **dict(meta), root=shown_root, files=outcome.files,
                         skipped=outcome.skipped, chars=meta.size_chars, max_chars=budget, note=note)


TOOLS = [
    ToolSpec(
        name="context_write",
        family="context",
        description="Store a chunk of context (code, a stack trace, design notes) under a key, then pass "
        "context_ref=<key> to any ask tool instead of pasting it again. Shared by every agent of your "
        "tenant; reusing a key overwrites it.",
        args=WriteArgs,
        result=ContextResult,
        handler=context_write,
        effects=WRITES,
        idempotent=True,
    ),
    ToolSpec(
        name="context_read",
        family="context",
        description="Read back a stored context value with its size, age and description.",
        args=KeyArgs,
        result=ContextResult,
        handler=context_read,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="context_list",
        family="context",
        description="List the stored context keys with size, age and description (never the values). "
        "Check it before pasting large material again.",
        args=ListArgs,
        result=ContextResult,
        handler=context_list,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="context_delete",
        family="context",
        description="Delete one stored context key; existed says whether it was there.",
        args=KeyArgs,
        result=ContextResult,
        handler=context_delete,
        effects=WRITES,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        name="context_pack",
        family="context",
        description="Bundle files and line ranges (\"src/app.py:40-120\") under ASK_FABLE_PROJECT_ROOT into "
        "one context key, within ASK_FABLE_PACK_MAX_CHARS / _MAX_FILES / _MAX_FILE_BYTES. Reports what "
        "went in and what was skipped and why; never truncates, never reads outside the root.",
        args=PackArgs,
        result=ContextResult,
        handler=context_pack,
        effects=WRITES,
        idempotent=True,
    ),
]
