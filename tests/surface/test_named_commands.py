"""Every ``ask-fable`` command a user is told to run exists: the ones named in tool descriptions, the
hints and notes of results, the manual, README, the docs and the skills (in backticks, or on a line of a shell
block) all resolve in the command's own parser, sub-command by sub-command (``keys create/update``
names two)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

from ask_fable.cli import _parser
from ask_fable.config import load_settings
from ask_fable.surface.registry import all_tools

ROOT = Path(__file__).resolve().parents[2]
#: `ask-fable word word…` in backticks.
NAMED = re.compile(r"`(?:\$ )?ask-fable ([^`]+)`")
#: A fenced block of Markdown, and a line of one that runs the command.
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SHELL_LINE = re.compile(r"^\s*(?:\$ )?ask-fable ([a-z][^\n]*)$", re.MULTILINE)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return None


def _unknown(words: list[str], parser: argparse.ArgumentParser) -> str | None:
    """The first word of ``words`` that names no command where a command is expected; None if all do."""
    for word in words:
        table = _commands(parser)
        if table is None or word.startswith(("-", "<")) or not re.fullmatch(r"[a-z][a-z0-9/-]*", word):
            return None
        choices = word.split("/")
        missing = [choice for choice in choices if choice not in table]
        if missing:
            return missing[0]
        parser = table[choices[0]]
    return None


def _texts() -> dict[str, str]:
    """Every text a user reads: string constants of the package, tool descriptions, Markdown docs."""
    texts: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "ask_fable").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parts = [node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        texts[str(path.relative_to(ROOT))] = "\n".join(parts)
    settings = load_settings()
    for spec in all_tools():
        texts[f"tool {spec.name}"] = spec.describe(settings)
    for path in [ROOT / "README.md", ROOT / "CLAUDE.md", *sorted((ROOT / "docs").rglob("*.md")),
                 *sorted((ROOT / "skills").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        shell = [line for block in FENCED.findall(text) for line in SHELL_LINE.findall(block)]
        texts[str(path.relative_to(ROOT))] = "\n".join([text, *(f"`ask-fable {line}`" for line in shell)])
    return texts


def test_every_ask_fable_command_a_user_is_told_to_run_exists() -> None:
    parser, _ = _parser(all_tools())
    named, wrong = 0, []
    for where, text in _texts().items():
        for match in NAMED.finditer(text):
            words = match.group(1).split()
            named += 1
            unknown = _unknown(words, parser)
            if unknown is not None:
                wrong.append(f"{where}: `ask-fable {' '.join(words)}` ({unknown!r} is no command)")
    assert named > 50  # the scan reads the texts it is meant to
    assert wrong == []


def test_the_scan_catches_a_command_that_does_not_exist() -> None:
    parser, _ = _parser(all_tools())
    assert _unknown(["sessions", "list"], parser) == "sessions"
    assert _unknown(["keys", "create/rename"], parser) == "rename"
    assert _unknown(["trace", "list", "--before", "x"], parser) is None
