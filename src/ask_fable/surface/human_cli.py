"""Shell commands generated from the registry: one per tool, calling it through the MCP server.

Naming: ``ask_*`` tools drop the prefix (``ask_council`` → ``council``), ``ask_fable_help`` is
``help``, and tools sharing a first word with another tool nest under it (``trace_list`` →
``trace list``, ``context_write`` → ``context write``); the rest swap ``_`` for ``-``.

Arguments come from each tool's input schema: required text/number fields are positionals in
declaration order, every other field is a ``--flag`` (lists comma-separated, booleans
``--x/--no-x``, objects as JSON). Text is taken as typed (``"@property vs attribute"`` is a
question, not a file): only ``--context-file PATH`` reads a file into ``context`` (``-`` reads
stdin), and ``-`` as the question or a stored value reads it from stdin. Input must be UTF-8.

Calls run in-process through ``mcp.Client(build_server(...))``, so a command behaves exactly like
the same tool called by an MCP client: same validation, pipeline, result and errors.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ask_fable.clock import local_time
from ask_fable.surface.registry import ToolSpec, input_schema
from ask_fable.surface.terminal import loaded

#: Explicit command names where the general rule reads badly.
OVERRIDES: dict[str, tuple[str, ...]] = {"ask_fable_help": ("help",)}
#: First words that never become a command group.
FLAT_PREFIXES: frozenset[str] = frozenset({"ask", "list", "configure", "reset"})
#: Flags the generated commands own themselves; a field with one of these names gets ``--arg-<name>``.
RESERVED_FLAGS: frozenset[str] = frozenset({"json", "help", "toolsets", "quiet", "h"})
#: Result fields printed as the body of the readable output, first present wins.
BODY_FIELDS: tuple[str, ...] = ("answer", "text", "value", "bundle", "report")
#: Result fields holding a Unix time, printed as local ISO-8601 in readable output.
TIME_FIELDS: frozenset[str] = frozenset(
    {"ts", "since", "created_at", "updated_at", "first_seen", "last_seen"}
)
#: Text positionals that read stdin when given as ``-``.
STDIN_FIELDS: frozenset[str] = frozenset({"question", "value"})
#: Text fields that get a ``--<field>-file PATH`` option (repeatable; ``-`` is stdin).
FILE_FIELDS: frozenset[str] = frozenset({"context"})
#: How list-like values are written on the command line, where the schema's wording is JSON's.
CLI_SYNTAX: dict[str, str] = {
    "models": "comma-separated, e.g. --models twin,m3",
    "pipeline": 'e.g. --pipeline "m3 > glm > fable", or comma-separated: --pipeline m3,glm,fable',
    "context_ref": "one key, or several comma-separated",
    "paths": "comma-separated, e.g. --paths src/app.py:10-40,README.md",
}
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Param:
    """One tool argument as a command-line parameter."""

    field: str
    kind: str  # str | int | float | bool | list | str_or_list | json
    required: bool
    positional: bool
    choices: tuple[Any, ...] | None
    help: str
    default: Any = _NO_DEFAULT
    #: The schema's bounds on a number: inclusive low, exclusive low, inclusive high (None: unbounded).
    bounds: tuple[float | None, float | None, float | None] = (None, None, None)

    @property
    def dest(self) -> str:
        """The argparse destination (namespaced so it never collides with global options)."""
        return f"arg__{self.field}"

    @property
    def flag(self) -> str:
        """The ``--flag`` spelling."""
        name = self.field.replace("_", "-")
        return f"--arg-{name}" if self.field in RESERVED_FLAGS else f"--{name}"


#: Multi-turn tools from a shell: every command is a process of its own, the conversation is stored.
SESSION_NOTE = (
    " (From the command line each command runs in a process of its own, yet a session carries over "
    "to the next command: its turns are kept in the state directory.)"
)


def command_paths(specs: Sequence[ToolSpec]) -> dict[str, tuple[str, ...]]:
    """Tool name → command words (``("council",)``, ``("trace", "list")``)."""
    first_words: dict[str, int] = {}
    for spec in specs:
        head = spec.name.split("_", 1)[0]
        first_words[head] = first_words.get(head, 0) + 1
    paths: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        name = spec.name
        if name in OVERRIDES:
            paths[name] = OVERRIDES[name]
            continue
        head, _, rest = name.partition("_")
        if head == "ask" and rest:
            paths[name] = (rest.replace("_", "-"),)
        elif rest and head not in FLAT_PREFIXES and first_words.get(head, 0) >= 2:
            paths[name] = (head, rest.replace("_", "-"))
        else:
            paths[name] = (name.replace("_", "-"),)
    return paths


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(defs.get(ref.split("/")[-1], {}), defs)
    return node


def _types(node: dict[str, Any], defs: dict[str, Any]) -> tuple[set[str], list[Any]]:
    node = _resolve(node, defs)
    types: set[str] = set()
    enum: list[Any] = list(node.get("enum", []))
    declared = node.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types.update(str(t) for t in declared)
    if "const" in node:
        enum.append(node["const"])
        types.add("string" if isinstance(node["const"], str) else "object")
    for option in node.get("anyOf", []) + node.get("oneOf", []):
        sub_types, sub_enum = _types(option, defs)
        types |= sub_types
        enum += sub_enum
    if enum and not types:
        types.add("string")
    types.discard("null")
    return types, [value for value in enum if value is not None]


def _bounds(node: dict[str, Any], defs: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    """A number's ``minimum``, ``exclusiveMinimum`` and ``maximum`` in its schema (or an ``anyOf`` option)."""
    found: list[float | None] = [None, None, None]
    for option in [_resolve(node, defs), *node.get("anyOf", [])]:
        for index, key in enumerate(("minimum", "exclusiveMinimum", "maximum")):
            value = option.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                found[index] = value
    return found[0], found[1], found[2]


def _kind(types: set[str]) -> str:
    if types == {"boolean"}:
        return "bool"
    if types == {"integer"}:
        return "int"
    if types and types <= {"integer", "number"}:
        return "float"
    if types == {"array"}:
        return "list"
    if types == {"string", "array"}:
        return "str_or_list"
    if types == {"string"}:
        return "str"
    return "json"


def tool_params(spec: ToolSpec) -> list[Param]:
    """The command-line parameters of one tool, derived from its input schema."""
    schema = input_schema(spec)
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    params = []
    for field, node in schema.get("properties", {}).items():
        types, enum = _types(node, defs)
        kind = _kind(types)
        is_required = field in required
        description = str(_resolve(node, defs).get("description") or node.get("description") or "")
        params.append(Param(
            field=field, kind=kind, required=is_required,
            positional=is_required and kind in ("str", "int", "float") and not enum,
            choices=tuple(enum) if enum else None,
            help=description.replace("%", "%%"),
            default=node.get("default", _NO_DEFAULT),
            bounds=_bounds(node, defs),
        ))
    return params


_JSON_LIST = re.compile(r'\[\s*"[^"\]]*"(?:\s*,\s*"[^"\]]*")*\s*\]')


def _help_text(param: Param) -> str:
    """The schema's description in command-line terms: list syntax, default, where text can come from."""
    text = _JSON_LIST.sub(lambda m: ",".join(json.loads(m.group(0))), param.help).rstrip()
    notes: list[str] = []
    if param.field in CLI_SYNTAX:
        notes.append(CLI_SYNTAX[param.field])
    elif param.kind in ("list", "str_or_list"):
        notes.append("comma-separated")
    elif param.kind == "json":
        notes.append("JSON")
    if param.positional and param.field in STDIN_FIELDS:
        notes.append("'-' reads it from stdin")
    if param.field in FILE_FIELDS:
        notes.append(f"to read a file, use --{param.field.replace('_', '-')}-file")
    default = param.default
    if default is not _NO_DEFAULT and default not in (None, "", [], {}) and "default" not in text.lower():
        if isinstance(default, bool):
            notes.append(f"default: {'on' if default else 'off'}")
        else:
            notes.append(f"default: {default}")
    return f"{text} ({'; '.join(notes)})" if notes else text


def _add_param(parser: argparse.ArgumentParser, param: Param) -> None:
    helptext = _help_text(param)
    if param.positional:
        parser.add_argument(param.dest, metavar=param.field.upper(), help=helptext)
    elif param.kind == "bool":
        parser.add_argument(param.flag, dest=param.dest, action=argparse.BooleanOptionalAction,
                            default=None, help=helptext)
    else:
        choices = [c for c in param.choices if isinstance(c, str)] if param.choices else None
        parser.add_argument(param.flag, dest=param.dest, default=None, required=param.required,
                            choices=choices or None, metavar=None if choices else param.field.upper(),
                            help=helptext)
    if param.field in FILE_FIELDS:
        parser.add_argument(f"{param.flag}-file", dest=f"file__{param.field}", action="append",
                            metavar="PATH", help=f"read {param.field} from PATH as UTF-8 text ('-' reads "
                            f"stdin); repeatable, appended after {param.flag}")


def _summary(description: str, limit: int = 80) -> str:
    """The first sentence of a description, for the command list (``%`` escaped for argparse)."""
    first = description.strip().splitlines()[0]
    end = first.find(". ")
    text = first[: end + 1] if end != -1 else first
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace("%", "%%")


def add_tool_commands(subparsers: Any, specs: Sequence[ToolSpec], reserved: set[str]) -> dict[str, ToolSpec]:
    """Add one subcommand per tool (nested for groups); returns command key → spec.

    ``reserved`` holds command words already taken by built-in verbs; a tool whose command would
    collide keeps its raw tool name instead.
    """
    from ask_fable.config import load_settings

    settings = load_settings()
    groups: dict[str, Any] = {}
    table: dict[str, ToolSpec] = {}
    paths = command_paths(specs)
    #: Each tool's command, for the readable output of every command (filled before any runs).
    commands: dict[str, str] = {}
    for spec in specs:
        path = paths[spec.name]
        if path[0] in reserved:
            path = (spec.name,)
        commands[spec.name] = "ask-fable " + " ".join(path)
        description = spec.describe(settings)
        summary = _summary(description or spec.name)
        if "reset" in spec.args.model_fields or spec.name == "reset_session":
            description += SESSION_NOTE
        if len(path) == 1:
            parser = subparsers.add_parser(path[0], help=summary, description=description)
        else:
            group = groups.get(path[0])
            if group is None:
                group_parser = subparsers.add_parser(path[0], help=f"{path[0]} tools")
                group = group_parser.add_subparsers(dest="tool_sub", metavar="ACTION", required=True)
                groups[path[0]] = group
            parser = group.add_parser(path[1], help=summary, description=description)
        for param in tool_params(spec):
            _add_param(parser, param)
        parser.add_argument("--json", action="store_true", help="print the structured result as JSON")
        parser.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS,
                            help="silence the progress trace on stderr (like ASK_FABLE_QUIET=1)")
        parser.set_defaults(tool_name=spec.name, tool_commands=commands)
        table[spec.name] = spec
    return table


# --- values --------------------------------------------------------------------------------------


class UsageError(ValueError):
    """A command-line value the tool cannot take; reported as a usage error (exit 2)."""


class _Sources:
    """Reads the files and the stdin a command names, each as strict UTF-8; stdin at most once."""

    def __init__(self) -> None:
        self.stdin_used_by: str | None = None

    def read(self, source: str, purpose: str) -> str:
        """The text of ``source`` (a path, or ``-`` for stdin) for ``purpose`` (named in errors)."""
        if source == "-":
            if self.stdin_used_by is not None:
                raise UsageError(f"{purpose}: stdin is already read for {self.stdin_used_by}")
            self.stdin_used_by = purpose
            data = sys.stdin.buffer.read()
            name = "stdin"
        else:
            path = Path(source).expanduser()
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise UsageError(f"{purpose}: cannot read {source} ({exc.strerror or exc})") from exc
            name = source
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{purpose}: {name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                             f"offset {exc.start}); convert it first, e.g. with iconv") from exc


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


class OutOfRange(ValueError):
    """A number outside what the tool accepts; its message starts with the value given."""


def _number(param: Param, text: str) -> int | float:
    """``text`` as the whole number or number ``param`` takes, within the bounds its tool accepts
    (outside them the tool would refuse the call, so the command refuses it first)."""
    whole = param.kind == "int"
    try:
        value: int | float = int(text) if whole else float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a {'whole number' if whole else 'number'}") from None
    low, above, high = param.bounds
    inside = math.isfinite(value) and (low is None or value >= low) and (above is None or value > above) and (
        high is None or value <= high)
    if inside:
        return value
    kind = "whole number" if whole else "number"
    if above is not None:
        wanted = f"a {kind} above {above:g}"
    elif low is not None:
        wanted = f"a {kind} from {low:g}" + (f" to {high:g}" if high is not None else "")
    elif high is not None:
        wanted = f"a {kind} up to {high:g}"
    else:
        wanted = f"a finite {kind}"
    raise OutOfRange(f"{text}: use {wanted}")


def convert(param: Param, raw: Any) -> Any:
    """Turn one command-line value into the JSON value the tool expects."""
    if raw is None or param.kind == "bool":
        return raw
    text = str(raw)
    if param.kind in ("int", "float"):
        return _number(param, text)
    if param.kind == "list":
        stripped = text.strip()
        if stripped.startswith("["):
            return json.loads(stripped)
        return _split(text)
    if param.kind == "str_or_list":
        parts = _split(text)
        return parts if len(parts) > 1 else (parts[0] if parts else "")
    if param.kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def arguments_from(namespace: argparse.Namespace, spec: ToolSpec) -> dict[str, Any]:
    """The tool's arguments from parsed command-line values (unset fields are left to defaults).

    ``-`` as a text positional reads stdin, and ``--<field>-file`` options add files' text.
    """
    out: dict[str, Any] = {}
    typed: dict[str, str] = {}
    sources = _Sources()
    for param in tool_params(spec):
        name = param.field.upper() if param.positional else param.flag
        raw = getattr(namespace, param.dest, None)
        if isinstance(raw, str):
            typed[param.field] = raw
        if raw == "-" and param.positional and param.field in STDIN_FIELDS:
            raw = sources.read("-", name)
            if not raw.strip():  # a failed command before the pipe: never store or ask nothing
                raise UsageError(f"{name}: stdin is empty; pipe the text in, or give it as the argument")
        if raw is not None:
            try:
                out[param.field] = convert(param, raw)
            except ValueError as exc:  # int("abc"), malformed JSON lists…
                said = f"{name} {exc}" if isinstance(exc, OutOfRange) else f"{name}: {exc}"
                raise UsageError(said) from exc
        files = getattr(namespace, f"file__{param.field}", None) or []
        texts = [sources.read(source, f"{param.flag}-file") for source in files]
        if texts:
            out[param.field] = "\n\n".join(part for part in [out.get(param.field) or "", *texts] if part)
    check_arguments(spec, out, typed)
    return out


def check_arguments(spec: ToolSpec, arguments: dict[str, Any], typed: dict[str, str]) -> None:
    """``UsageError`` naming the option and the value as ``typed`` when the tool would refuse
    ``arguments`` as invalid (bad_args): the command says so before calling, as for a number out of
    bounds."""
    from pydantic import ValidationError

    try:
        spec.args.model_validate(arguments)
    except ValidationError as exc:
        params = {param.field: param for param in tool_params(spec)}
        problems = []
        for error in exc.errors()[:3]:
            field = str(error["loc"][0]) if error["loc"] else ""
            param = params.get(field)
            if param is None:
                name = field or "arguments"
            else:
                name = param.field.upper() if param.positional else param.flag
            said = str(error["msg"]).removeprefix("Value error, ")
            given = typed.get(field)
            if given is None:
                shown = ""
            elif not given.strip():
                shown = f" {given!r}"
            else:
                shown = " " + _short(given, 60)
            problems.append(f"{name}{shown}: {said}")
        raise UsageError("; ".join(problems)) from None


# --- calling -------------------------------------------------------------------------------------


class ProgressDisplay:
    """A live status line at the bottom of a terminal: elapsed time and the latest progress message.

    The console trace prints each step of a call as a line on stderr; this only adds a line that
    keeps the elapsed time moving, and stands in for stderr while a call runs so that it erases
    itself before anything else is written there. Off a terminal, or when quiet, it shows nothing.
    """

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.tty = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.message = ""
        self._drawn = False

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """MCP progress callback: the status line shows the latest message."""
        if message:
            self.message = message

    def draw(self) -> None:
        """Redraw the status line (terminal only)."""
        if not self.tty:
            return
        elapsed = time.monotonic() - self.started
        line = f"\r\x1b[2K⏳ {elapsed:5.1f}s  {self.message}"[:200]
        self.stream.write(line)
        self.stream.flush()
        self._drawn = True

    def clear(self) -> None:
        """Erase the status line (before other output and before the result)."""
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def write(self, text: str) -> int:
        """Write to stderr below a cleared status line (the next tick redraws it)."""
        self.clear()
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding… of the real stream
        if name == "stream":
            raise AttributeError(name)
        return getattr(self.stream, name)

    async def tick(self) -> None:
        """Keep the elapsed time moving on a terminal while a call runs."""
        import anyio

        if not self.tty:
            return
        await anyio.sleep(1.0)
        while True:
            self.draw()
            await anyio.sleep(0.25)


async def call_tool(name: str, arguments: dict[str, Any], *, toolsets: Sequence[str] = ("all",),
                    progress: ProgressDisplay | None = None, quiet: bool = False) -> dict[str, Any]:
    """Call one tool in-process through the MCP server and return its structured result."""
    import contextlib

    import anyio
    from mcp import Client
    from mcp.types import Implementation

    from ask_fable import __version__
    from ask_fable.core.app import App
    from ask_fable.surface.context import COMMAND_LINE_CLIENT
    from ask_fable.surface.server import build_server

    app = App(quiet=quiet)
    server = build_server(app, toolsets=list(toolsets))
    client_info = Implementation(name=COMMAND_LINE_CLIENT, version=__version__)
    display = progress or ProgressDisplay(enabled=False)
    stderr = contextlib.redirect_stderr(display) if display.tty else contextlib.nullcontext()
    try:
        with stderr:
            async with Client(server, client_info=client_info) as client, \
                    anyio.create_task_group() as group:
                group.start_soon(display.tick)
                loaded()
                try:
                    result = await client.call_tool(name, arguments, progress_callback=display.on_progress)
                finally:
                    group.cancel_scope.cancel()
                    display.clear()
    finally:
        # What the call opened (warm sessions, connections, a shared settings' listener) ends with it.
        with anyio.CancelScope(shield=True):
            await app.aclose()
    payload = result.structured_content
    if payload is None:
        text = "".join(getattr(block, "text", "") for block in result.content)
        try:
            payload = json.loads(text)
        except ValueError:
            payload = {"status": "error" if result.is_error else "ok", "text": text}
    return dict(payload)


# --- output --------------------------------------------------------------------------------------


def _shown(key: str, value: Any) -> Any:
    """``value`` as readable output shows it: Unix times become local ISO-8601."""
    if key in TIME_FIELDS and isinstance(value, int | float) and not isinstance(value, bool):
        return local_time(value)
    return value


#: Fields printed whole: the fix a user must read to the end.
WHOLE_FIELDS = frozenset({"hint", "how_to_reframe"})


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Result fields whose text may point at another tool, named by its command in readable output.
POINTER_FIELDS = frozenset({"hint", "note", "detail"})


def as_commands(text: str, commands: dict[str, str]) -> str:
    """``text`` with each tool it names as a bare word (``trace_list shows…``) named by its command
    (```ask-fable trace list` shows…``); a tool written as a call or an argument is left alone, and so
    is a one-word tool name (``ask``, ``stats``), which prose uses as a word."""
    named = sorted((name for name in commands if "_" in name), key=len, reverse=True)
    if not named:
        return text
    names = "|".join(map(re.escape, named))
    return re.sub(rf"(?<![\w`=\"'])({names})(?![\w`(=\"'])", lambda m: f"`{commands[m.group(1)]}`", text)


def render(payload: dict[str, Any], commands: dict[str, str] | None = None) -> str:
    """A readable rendering of a tool result: its main text, then the other fields (a hint, note or
    detail naming a tool names its command, given ``commands``: tool → command)."""
    if commands:
        payload = {key: as_commands(value, commands) if key in POINTER_FIELDS and isinstance(value, str)
                   else value for key, value in payload.items()}
    status = payload.get("status")
    lines: list[str] = []
    if status == "error":
        lines.append(f"error [{payload.get('kind', 'error')}]: {payload.get('detail', '')}")
    elif status == "refused":
        lines.append(f"refused ({payload.get('stage', '?')}): {payload.get('reason', '')}")
    shown = {"status", "kind", "detail"} if status in ("error", "refused") else {"status"}
    if status == "refused":
        shown |= {"stage", "reason"}
    for field in BODY_FIELDS:
        value = payload.get(field)
        if isinstance(value, str) and value.strip():
            lines.append(value.rstrip())
            shown.add(field)
            break
    details: list[str] = []
    for key, value in payload.items():
        if key in shown or value is None or value == [] or value == {}:
            continue
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            details.append(f"{key}:")
            details += [f"  - {_short(_compact(item), 200)}" for item in value[:50]]
            if len(value) > 50:
                details.append(f"  … {len(value) - 50} more")
        elif isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
            details.append(f"{key}:")
            for group, items in value.items():
                details.append(f"  {group}:")
                details += [f"    {_short(item, 200)}" for item in items]
        elif isinstance(value, dict):
            details.append(f"{key}:")
            details += [f"  {k}: {_short(_shown(k, v))}" for k, v in value.items() if not _empty(v)]
        elif key in WHOLE_FIELDS and isinstance(value, str):
            details.append(f"{key}: {' '.join(value.split())}")
        else:
            details.append(f"{key}: {_short(_shown(key, value))}")
    if details:
        if lines:
            lines.append("")
        lines += details
    if status not in ("ok", "error", "refused", None):
        lines.append(f"status: {status}")
    return "\n".join(lines) if lines else f"status: {status}"


#: Fields a row of a list shows first, so a long row is cut after what tells rows apart.
ROW_FIRST = ("ts", "trace_id", "tool", "token", "mode", "status", "kind", "elapsed_ms", "model", "models",
             "session")


def _compact(item: dict[str, Any]) -> str:
    keys = [*(k for k in ROW_FIRST if k in item), *(k for k in item if k not in ROW_FIRST)]
    return ", ".join(f"{k}={_short(_shown(k, item[k]), 60)}" for k in keys if not _empty(item[k]))


def _empty(value: Any) -> bool:
    return value is None or value in ([], {}, "")


def exit_code(payload: dict[str, Any]) -> int:
    """0 for an answer (including needs_context), 1 for an error or a refusal."""
    return 1 if payload.get("status") in ("error", "refused") else 0


def run_tool_command(namespace: argparse.Namespace, spec: ToolSpec, *, quiet: bool = False) -> int:
    """Run a generated command: call the tool, print its result, return the exit code.

    ``quiet`` (``--quiet``) or the ``ASK_FABLE_QUIET`` setting silences the progress trace and the
    status line; either one is enough.
    """
    import anyio

    from ask_fable.config import load_settings
    from ask_fable.surface.terminal import quiet_library_logs

    quiet_library_logs()
    try:
        arguments = arguments_from(namespace, spec)
    except UsageError as exc:
        print(f"ask-fable: {exc}", file=sys.stderr)
        return 2
    quiet = quiet or bool(getattr(namespace, "quiet", False)) or load_settings().quiet
    display = ProgressDisplay(enabled=not quiet)
    try:
        payload = anyio.run(lambda: call_tool(spec.name, arguments, progress=display, quiet=quiet))
    except KeyboardInterrupt:
        print("ask-fable: interrupted; the call is recorded as cancelled with what had happened so far "
              "(ask-fable trace list --status cancelled)", file=sys.stderr)
        return 130
    if getattr(namespace, "json", False):
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        # A settings problem was printed once when the command started: not again under the result.
        printed = {problem.message() for problem in load_settings().problems}
        left = [w for w in payload.get("warnings") or () if w not in printed]
        shown = {**payload, "warnings": left} if "warnings" in payload else payload
        stream = sys.stderr if payload.get("status") == "error" else sys.stdout
        print(render(shown, getattr(namespace, "tool_commands", None)), file=stream)
    return exit_code(payload)
