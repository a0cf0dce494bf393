"""The docs cannot drift from the code: commands, tool names, settings, links, pictures, registry entry."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from ask_fable.config_docs import END_MARKER, START_MARKER, extract_block, render_table, rows
from ask_fable.surface.registry import all_tools
from tests.spec_tools import ALL_SPEC_TOOLS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CONFIGURATION = ROOT / "docs" / "configuration.md"
CLAUDE = ROOT / "CLAUDE.md"
DOCS = [README, CLAUDE, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "skills").glob("*/SKILL.md"))]
SKILLS = ("ubercode", "uberplan", "uberarch", "uberbrainstorm")

INSTALL_COMMAND = (
    "python3 -m venv --upgrade-deps .venv && .venv/bin/pip install -e . && .venv/bin/ask-fable doctor"
)
TEST_COMMAND = (
    "python3 -m venv --upgrade-deps .venv && .venv/bin/pip install -e '.[dev]'"
    " && .venv/bin/ruff check src tests && .venv/bin/python -m mypy && .venv/bin/python -m pytest -n 4"
)
INVENTORY_START = "<!-- tool-inventory -->"
INVENTORY_END = "<!-- /tool-inventory -->"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) + len(start) : text.index(end)]


def _pyproject() -> dict[str, object]:
    return tomllib.loads(_read(ROOT / "pyproject.toml"))["project"]


# --- README ---------------------------------------------------------------------------------------


def test_readme_opens_with_the_install_and_test_commands() -> None:
    """Right after the title and the mcp-name marker come the two commands, before any section."""
    text = _read(README)
    head = text.split("\n## ", 1)[0]
    assert head.startswith("# ask-fable\n")
    assert "<!-- mcp-name: " in head
    blocks = re.findall(r"```bash\n(.*?)\n```", head, re.DOTALL)
    assert blocks[:2] == [INSTALL_COMMAND, TEST_COMMAND]
    marked = _between(text, "<!-- test-command -->", "<!-- /test-command -->")
    assert re.findall(r"```bash\n(.*?)\n```", marked, re.DOTALL) == [TEST_COMMAND]


def test_configuration_table_is_the_generated_one() -> None:
    """The table between the config-table markers of docs/configuration.md equals
    ``python -m ask_fable.config_docs``, and the README links to it."""
    text = _read(CONFIGURATION)
    assert START_MARKER in text and END_MARKER in text
    assert extract_block(text) == render_table(), (
        "configuration table is stale: run `python -m ask_fable.config_docs --write docs/configuration.md`"
    )
    assert "(docs/configuration.md#configuration-reference)" in _read(README)


def test_readme_stays_a_way_in() -> None:
    """The README is short enough to read first: the reference lives in docs/."""
    assert len(_read(README).splitlines()) <= 320


def test_guide_backend_table_is_the_generated_one() -> None:
    """The guide's backends table equals ``python -m ask_fable.backend_docs``: one row per backend."""
    from ask_fable import backend_docs

    text = _read(ROOT / "docs" / "GUIDE.md")
    block = extract_block(text, backend_docs.START_MARKER, backend_docs.END_MARKER)
    assert block == backend_docs.render_table(), (
        "docs/GUIDE.md backends table is stale: run `python -m ask_fable.backend_docs --write docs/GUIDE.md`"
    )


def test_readme_token_paragraph_is_the_generated_one() -> None:
    """The README's model-token paragraph equals ``python -m ask_fable.backend_docs --tokens``: a
    backend's tokens reach the README from its descriptor, never by hand."""
    from ask_fable import backend_docs

    block = extract_block(_read(README), backend_docs.TOKENS_START, backend_docs.TOKENS_END)
    assert block == backend_docs.render_tokens(), (
        "the README's token paragraph is stale: "
        "run `python -m ask_fable.backend_docs --tokens --write README.md`"
    )


def test_the_token_paragraph_is_rewritten_in_place(tmp_path: Path) -> None:
    """``--tokens --write`` replaces only the marked paragraph."""
    from ask_fable import backend_docs

    page = tmp_path / "README.md"
    page.write_text(f"# x\n\n{backend_docs.TOKENS_START}\nold\n{backend_docs.TOKENS_END}\n\nafter\n")
    assert backend_docs.main(["--tokens", "--write", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# x\n\n") and text.endswith("\n\nafter\n") and "old" not in text
    block = extract_block(text, backend_docs.TOKENS_START, backend_docs.TOKENS_END)
    assert block == backend_docs.render_tokens()


def test_readme_names_every_model_token_and_alias() -> None:
    """The README's model-token paragraph names each registered token, alias and prefix."""
    from ask_fable.backends.registry import registered

    text = _read(README)
    start = text.index("### Model tokens")
    section = text[start:text.index("\n## ", start)]
    for backend in registered():
        for form in backend.token_forms():
            assert f"`{form}`" in section, form
        for token in backend.tokens:
            for alias in token.aliases:
                assert f"`{alias}`" in section, alias


def test_every_setting_has_a_row_with_a_description() -> None:
    from ask_fable.config import Settings, env_name

    table = render_table()
    for name, field in Settings.model_fields.items():
        assert f"`{env_name(name)}`" in table
        assert field.description, f"{name} has no description"


def test_config_table_lists_accepted_aliases() -> None:
    table = render_table()
    assert "`ASK_FABLE_ATLAS_API_KEY` / `ATLASCLOUD_API_KEY`" in table
    assert "`ASK_FABLE_OPENROUTER_API_KEY` / `OPENROUTER_API_KEY`" in table
    assert "`ASK_FABLE_ATLAS_EFFORT` / `ASK_FABLE_EFFORT`" in table
    assert "`$STATE/context.db`" in table


# --- CLAUDE.md ------------------------------------------------------------------------------------


def _inventory_names() -> list[str]:
    block = _between(_read(CLAUDE), INVENTORY_START, INVENTORY_END)
    return re.findall(r"^- `([a-z0-9_]+)`", block, re.MULTILINE)


def test_claude_md_lists_every_registered_tool() -> None:
    names = set(_inventory_names())
    missing = sorted(spec.name for spec in all_tools() if spec.name not in names)
    assert not missing, f"CLAUDE.md inventory lacks {missing}"


def test_claude_md_names_no_tool_that_does_not_exist() -> None:
    """Every inventory name is a registered tool.

    While some contract tools (tests/spec_tools.py) are not registered yet, the inventory may name
    those pending ones; any other unregistered name fails.
    """
    registered = {spec.name for spec in all_tools()}
    pending = set(ALL_SPEC_TOOLS) - registered
    names = _inventory_names()
    assert len(names) == len(set(names)), "a tool is listed twice"
    unknown = sorted(name for name in names if name not in registered and name not in pending)
    assert not unknown, f"CLAUDE.md names tools that do not exist: {unknown}"


def test_claude_md_groups_follow_the_contract() -> None:
    """The inventory lists exactly the contract's tools (registered or pending), each once."""
    assert sorted(_inventory_names()) == sorted(ALL_SPEC_TOOLS)


# --- every doc ------------------------------------------------------------------------------------

_CALL = re.compile(r"\b((?:ask|list|configure|context|trace|session|reset)_[a-z0-9_]+)\(")
_BACKTICKED = re.compile(r"`([a-z][a-z0-9_]+)`")
_ENV = re.compile(r"\b((?:ASK_FABLE_|ATLASCLOUD_|OPENROUTER_)[A-Z0-9_]*[A-Z0-9])\b")
_LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)|<img[^>]+src=\"([^\"]+)\"")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_calls_only_contract_tools(path: Path) -> None:
    """``name(`` forms in the docs are real tool names (catches typos and invented tools)."""
    unknown = sorted({m for m in _CALL.findall(_read(path)) if m not in ALL_SPEC_TOOLS})
    assert not unknown, f"{path.name} calls unknown tools {unknown}"


def _example_plugin_variables() -> list[str]:
    """The variables of the example plugin's settings (docs/plugins.md shows them), read from its
    source without installing or registering it."""
    import importlib.util

    from ask_fable.config import ENV_PREFIX, section_fields
    from ask_fable.config_sources import env_names

    source = ROOT / "examples" / "plugin-openai-compatible" / "src" / "ask_fable_acme" / "__init__.py"
    spec = importlib.util.spec_from_file_location("_example_plugin", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend = module.ACME
    return [var for name, info in section_fields(backend.name, backend.settings_model).items()
            for var in env_names(name, info, ENV_PREFIX)]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_mentions_only_real_settings(path: Path) -> None:
    """Every ``ASK_FABLE_*`` name in the docs is a setting (or the client-side API key variable)."""
    from ask_fable.surface.client_setup import DEFAULT_KEY_ENV

    known = {var.strip("`") for _, variables, _, _ in rows() for var in variables.split(" / ")}
    known.add(DEFAULT_KEY_ENV)
    known |= set(_example_plugin_variables())
    mentioned = set(_ENV.findall(_read(path)))
    unknown = sorted(mentioned - known)
    assert not unknown, f"{path.name} mentions settings that do not exist: {unknown}"


def _slugs(path: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", _read(path), re.MULTILINE):
        text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
        slugs.add(text.replace(" ", "-"))
    return slugs


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_links_resolve(path: Path) -> None:
    """Relative links point at files that exist, and #anchors at headings that exist."""
    for match in _LINK.finditer(_read(path)):
        target, anchor, image = match.group(1), match.group(2), match.group(3)
        target = target if image is None else image
        if re.match(r"^[a-z]+:", target):
            continue
        resolved = (path.parent / target) if target else path
        assert resolved.exists(), f"{path.name} links to missing {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in _slugs(resolved), f"{path.name} links to missing anchor {target}#{anchor}"


def test_docs_exist_and_reference_the_pictures() -> None:
    for name in ("GUIDE.md", "OPENCODE.md", "architecture.md"):
        assert (ROOT / "docs" / name).is_file()
    referenced = "".join(_read(p) for p in DOCS)
    for png in (ROOT / "images").glob("*.png"):
        assert f"images/{png.name}" in referenced, f"{png.name} is not shown anywhere"


def test_backticked_tool_like_names_in_claude_md_are_tools() -> None:
    """Outside the inventory too, CLAUDE.md's backticked ask_* names are contract tools."""
    text = _read(CLAUDE)
    for name in _BACKTICKED.findall(text):
        if name.startswith("ask_") and not name.startswith("ask_fable_"):
            assert name in ALL_SPEC_TOOLS, name


# --- pictures -------------------------------------------------------------------------------------


def test_every_picture_has_its_source_and_every_source_its_picture() -> None:
    pngs = {p.stem for p in (ROOT / "images").glob("*.png")}
    sources = {p.stem for p in (ROOT / "images" / "src").glob("*.dot")}
    assert sources, "no Graphviz sources under images/src"
    assert pngs == sources
    assert (ROOT / "images" / "render.sh").is_file()
    for required in ("system-map", "request-flow", "mode-ask", "mode-council", "mode-chain", "mode-debate",
                     "guard-layers"):
        assert required in sources


def test_every_screenshot_is_shown_and_says_how_it_is_taken() -> None:
    """Pictures of real pages live in images/screenshots/ (no Graphviz source); the README shows each."""
    readme = _read(ROOT / "README.md")
    shots = sorted((ROOT / "images" / "screenshots").glob("*.png"))
    assert shots
    for shot in shots:
        assert f"images/screenshots/{shot.name}" in readme, f"{shot.name} is not shown in the README"
    assert "python -m tests.ui.readme_picture" in readme


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_sources_render_without_error(tmp_path: Path) -> None:
    for source in sorted((ROOT / "images" / "src").glob("*.dot")):
        out = tmp_path / f"{source.stem}.png"
        done = subprocess.run(["dot", "-Tpng", str(source), "-o", str(out)], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, f"{source.name}: {done.stderr}"
        assert out.stat().st_size > 0


# --- skills ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("skill", SKILLS)
def test_skill_has_front_matter_and_uses_real_tools(skill: str) -> None:
    text = _read(ROOT / "skills" / skill / "SKILL.md")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, f"{skill} has no front matter"
    front = dict(line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    assert front["name"].strip() == skill
    assert len(front["description"].strip()) > 40
    tools = {m for m in _BACKTICKED.findall(text) if m in ALL_SPEC_TOOLS}
    assert tools, f"{skill} drives no ask-fable tool"


# --- server.json ----------------------------------------------------------------------------------


def test_server_json_declares_each_backends_key_from_the_registry() -> None:
    """server.json's secret variables are the registered backends' keys:
    ``python -m ask_fable.backend_docs --server-json server.json`` writes them."""
    from ask_fable import backend_docs

    text = _read(ROOT / "server.json")
    assert backend_docs.with_key_variables(text) == text, (
        "server.json is stale: run `python -m ask_fable.backend_docs --server-json server.json`")


def test_server_json_matches_the_package_and_the_readme_marker() -> None:
    server = json.loads(_read(ROOT / "server.json"))
    project = _pyproject()
    marker = re.search(r"<!-- mcp-name: (\S+) -->", _read(README))
    assert marker and server["name"] == marker.group(1)
    assert server["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert server["version"] == project["version"]
    assert 1 <= len(server["description"]) <= 100
    assert str(project["description"]).startswith(server["description"].rstrip(".")), (
        "server.json description must be pyproject's description (or its first 100 characters)"
    )
    (package,) = server["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"]
    assert package["version"] == project["version"]
    assert package["transport"] == {"type": "stdio"}
    known = {var.strip("`") for _, variables, _, _ in rows() for var in variables.split(" / ")}
    for variable in package.get("environmentVariables", []):
        assert variable["name"] in known, variable["name"]


# --- architecture ---------------------------------------------------------------------------------


def test_architecture_says_a_new_backend_is_one_descriptor() -> None:
    text = _read(ROOT / "docs" / "architecture.md")
    where = _between(text, "## Where to change what", "- A new setting")
    backend_step = where[where.index("- A new backend"):]
    assert "one descriptor" in backend_step and "backend_docs" in backend_step


def test_architecture_names_only_modules_that_exist() -> None:
    text = _read(ROOT / "docs" / "architecture.md")
    named = set(re.findall(r"`([a-z_/]+\.py)`", text))
    assert named, "architecture.md names no modules"
    missing = sorted(path for path in named
                     if not (ROOT / "src" / "ask_fable" / path).is_file() and not (ROOT / path).is_file())
    assert not missing, f"architecture.md names modules that do not exist: {missing}"
